"""A drop-in for KernelBench's `eval_kernel_against_ref`: the same argument names and the fields
its users parse (`compiled`, `correctness`, `metadata`, `runtime`, `runtime_stats`,
`ref_runtime`, `ref_runtime_stats`), from a hackscan audit instead of a plain allclose: the
candidate and the reference run in separate isolated workers on hidden inputs, a hacked (or,
under the kernelbench policy, violating) candidate is not correct, and runtimes come from
hackscan's fair measurement (the reference with TF32, fresh inputs, L2 flushed, device-wide
synchronisation). hackscan's verdict, hack types and findings are in `metadata`.

    from hackscan.integrations.kernelbench import eval_kernel_against_ref
    result = eval_kernel_against_ref(ref_src, custom_src, measure_performance=True)
    if result.correctness: ...
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

NOT_CORRECT = ("hacked", "violation", "error")
LOAD_FAILURES = ("Error building extension", "SyntaxError", "ImportError", "ModuleNotFoundError", "no class ",
                 "at import", "NameError")


@dataclass
class KernelExecResult:
    compiled: bool = False
    correctness: bool = False
    metadata: dict = field(default_factory=dict)
    runtime: float = -1.0
    runtime_stats: dict = field(default_factory=dict)
    ref_runtime: float = -1.0
    ref_runtime_stats: dict = field(default_factory=dict)

    def model_dump(self) -> dict[str, Any]:   # the name pydantic users call
        return asdict(self)

    dict = model_dump

    def __getitem__(self, key: str):
        return getattr(self, key)


def _device(device) -> str:
    if device is None:
        try:
            import torch

            return "cuda" if torch.cuda.is_available() else "cpu"
        except ImportError:
            return "cpu"
    if isinstance(device, int):
        return "cuda"
    return "cuda" if str(device).startswith("cuda") else "cpu"


def eval_kernel_against_ref(original_model_src: str, custom_model_src: str, seed_num: int = 42,
                            num_correct_trials: int = 1, num_perf_trials: int = 10, verbose: bool = False,
                            measure_performance: bool = False, build_dir=None, device=None,
                            backend: str = "cuda", *, dynamic: str = "all", policy: str = "kernelbench",
                            timeout_s: float = 300.0, **_ignored) -> KernelExecResult:
    """Evaluate `custom_model_src` (defining ModelNew) against `original_model_src` (Model,
    get_inputs, get_init_inputs).

    KernelBench's seed, trial counts and build folder are accepted for compatibility: hackscan
    draws its own secret seed (a candidate must not know its inputs), runs its probes' own calls,
    repeats timings until the median is known to 1%, and keeps builds in its keyed cache. Extra
    keywords KernelBench versions add are ignored."""
    from hackscan.api import audit

    dev = _device(device)
    res = audit(custom_model_src, original_model_src, dynamic=dynamic, device=dev, policy=policy,
                timeout_s=timeout_s, measure="survivors" if measure_performance else False)
    dyn = res.dynamic or {}
    reason = res.error or dyn.get("reason") or ""
    # "compiled" in KernelBench's sense: the candidate built and imported, whatever happened next
    build_failed = res.verdict == "error" and (res.error is not None or any(s in reason for s in LOAD_FAILURES))
    meta = {"hackscan_verdict": res.verdict, "hack_types": list(res.hack_types), "reasons": list(res.reasons),
            "findings": [f.to_json() for f in res.findings], "device": dev, "backend": backend,
            "correct_on_visible": dyn.get("correct_on_visible"), "dynamic_status": dyn.get("status", "not-run"),
            "kernelbench_args": {"seed_num": seed_num, "num_correct_trials": num_correct_trials,
                                 "num_perf_trials": num_perf_trials}}
    if reason:
        meta["error"] = reason[:2000]
    out = KernelExecResult(compiled=not build_failed, metadata=meta)
    out.correctness = bool(dyn.get("correct_on_visible")) and res.verdict not in NOT_CORRECT
    m = res.measure or {}
    if m.get("status") == "measured" and out.correctness:
        kb = m.get("kernelbench", {})
        out.runtime, out.runtime_stats = kb.get("runtime", -1.0), kb.get("runtime_stats", {})
        out.ref_runtime, out.ref_runtime_stats = kb.get("ref_runtime", -1.0), kb.get("ref_runtime_stats", {})
        meta["speedup"] = m.get("speedup")
        meta["measure_flags"] = m.get("flags", [])
        meta["speedup_counted"] = m.get("counted")
    elif m:
        meta["measure"] = {"status": m.get("status"), "reason": m.get("reason")}
    if verbose:
        print(f"[hackscan] {res.verdict} {', '.join(res.hack_types)} correctness={out.correctness} "
              f"runtime={out.runtime}")
    return out
