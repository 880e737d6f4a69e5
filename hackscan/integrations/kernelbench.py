"""A drop-in for KernelBench's evaluator (`kernelbench.eval.eval_kernel_against_ref`) and its
static checker (`kernelbench.kernel_static_checker.validate_kernel_static`), backed by hackscan.

`eval_kernel_against_ref` takes KernelBench's parameters in KernelBench's order and returns its
`KernelExecResult` (a pydantic model where pydantic is installed, with the same fields; a
dataclass with the same fields and `model_dump`/`model_dump_json`/`model_validate` otherwise).
The candidate and the reference run in separate isolated workers on hidden inputs; a hacked
(or, under the kernelbench policy, violating) candidate is not correct; runtimes come from
hackscan's fair measurement (fresh inputs, L2 flushed, device-wide synchronisation, the
reference's time with TF32 as KernelBench's re-evaluations use). `metadata` holds KernelBench's
keys (`hardware`, `device`, `compilation_error`/`_name`, `runtime_error`/`_name`,
`correctness_issue`/`_name`, `max_difference`, `avg_difference`, `correctness_trials`,
`excessive_speedup`, `error_during_performance`) beside hackscan's (`hackscan_verdict`,
`hackscan_evidence` ("static" or "dynamic": what the verdict rests on), `problem` (the
problem-level findings, each {"id", "detail"}: `degenerate-problem`, `nondeterministic-reference`),
`hack_types`, `reasons`, `findings`, ...). `correctness` is True only for what hackscan verified:
never for a hacked, violating, `unverified` (the dynamic audit could not verify it; the reason in
`metadata["unverified"]`) or failed audit, nor on a degenerate problem (`correctness_issue_name`
says which). An exception in the audit itself is recorded as `metadata["infra_error"]` with
`hackscan_verdict` "error", never raised, so the result always serialises. `policy` is checked
against the table the command line uses (`hackscan.config.CHOICES`).

How each KernelBench parameter is treated:

| parameter | here |
|---|---|
| `seed_num` | not used for inputs: hackscan draws them from a secret seed (a candidate must not know its inputs); a non-default value warns |
| `num_correct_trials` | a floor: hackscan compares on the problem's own inputs and on hidden sets; fewer sets than asked warns |
| `num_perf_trials` | the least number of timed calls (hackscan goes on until the median is known to 1%) |
| `timing_method` | KernelBench's names are accepted; hackscan's one fair method replaces the others (a warning); an unknown name raises `ValueError`, as KernelBench does |
| `build_dir` | not used: each candidate builds in hackscan's keyed, per-candidate cache (a warning) |
| `device` | `"cpu"`, `"cuda"`, an index or `torch.device("cuda:N")`: the index is kept (the workers see that GPU only) |
| `backend` | recorded; the static pass reads the code's own backend |
| `precision` | honoured: floating inputs and both models cast to it (integer tensors keep their dtype) |
| `check_for_excessive_speedup`, `excessive_speedup_threshold` | honoured: `metadata["excessive_speedup"]` |

    from hackscan.integrations.kernelbench import eval_kernel_against_ref, validate_kernel_static
    result = eval_kernel_against_ref(ref_src, custom_src, measure_performance=True)
    valid, errors, warnings = validate_kernel_static(custom_src, backend="triton", precision="fp32")
"""
from __future__ import annotations

import re
import textwrap
import warnings as _warnings
from dataclasses import asdict, dataclass, field
from typing import Any

from hackscan.dynamic.verdict import UNUSABLE_PROBLEMS
from hackscan.scanning import as_source_text

NOT_CORRECT = ("hacked", "violation", "unverified", "error")
LOAD_FAILURES = ("Error building extension", "SyntaxError", "ImportError", "ModuleNotFoundError", "no class ",
                 "at import", "NameError")
TIMING_METHODS = ("cuda_event", "do_bench", "do_bench_impl", "host_time")
PRECISIONS = {"fp32": "float32", "float32": "float32", "fp16": "float16", "float16": "float16", "half": "float16",
              "bf16": "bfloat16", "bfloat16": "bfloat16"}
KERNELBENCH_SEED = 42


class KernelBenchCompatWarning(UserWarning):
    """A KernelBench parameter hackscan does not apply as KernelBench would (the message says why)."""


try:
    from pydantic import BaseModel as _BaseModel
except ImportError:  # pragma: no cover - exercised where pydantic is absent
    _BaseModel = None

if _BaseModel is not None:
    class KernelExecResult(_BaseModel):
        """KernelBench's result of one evaluation (its fields, its pydantic methods)."""
        compiled: bool = False
        correctness: bool = False
        metadata: dict = {}
        runtime: float = -1.0            # ms, mean of the timed calls (measure_performance)
        runtime_stats: dict = {}
        ref_runtime: float = -1.0
        ref_runtime_stats: dict = {}

        def __getitem__(self, key: str):
            return getattr(self, key)
else:
    @dataclass
    class KernelExecResult:  # type: ignore[no-redef]
        """KernelBench's result of one evaluation; pydantic's methods where pydantic is absent."""
        compiled: bool = False
        correctness: bool = False
        metadata: dict = field(default_factory=dict)
        runtime: float = -1.0
        runtime_stats: dict = field(default_factory=dict)
        ref_runtime: float = -1.0
        ref_runtime_stats: dict = field(default_factory=dict)

        def model_dump(self) -> dict[str, Any]:
            return asdict(self)

        dict = model_dump

        def model_dump_json(self, **kwargs) -> str:
            import json

            return json.dumps(asdict(self), default=str, **kwargs)

        @classmethod
        def model_validate(cls, obj):
            if isinstance(obj, cls):
                return obj
            return cls(**obj)

        @classmethod
        def model_validate_json(cls, data):
            import json

            return cls.model_validate(json.loads(data))

        def __getitem__(self, key: str):
            return getattr(self, key)


def _warn(msg: str) -> None:
    _warnings.warn(msg, KernelBenchCompatWarning, stacklevel=3)


def _device(device) -> tuple[str, int | None]:
    """("cuda" or "cpu", the GPU index or None) from KernelBench's `device` (an int, a
    torch.device, a string or None: the current CUDA device where there is one)."""
    if device is None:
        try:
            import torch

            return ("cuda", None) if torch.cuda.is_available() else ("cpu", None)
        except ImportError:
            return "cpu", None
    if isinstance(device, bool):
        raise TypeError(f"device must be an int, a torch.device or a string, not {device!r}")
    if isinstance(device, int):
        return "cuda", device
    kind = getattr(device, "type", None)
    if kind is not None:
        index = getattr(device, "index", None)
    else:
        text = str(device)
        kind, _, idx = text.partition(":")
        if idx and not idx.isdigit():
            raise ValueError(f"device {text!r} is not 'cpu', 'cuda' or 'cuda:N'")
        index = int(idx) if idx else None
    if kind not in ("cuda", "cpu"):
        raise ValueError(f"device {device!r}: hackscan runs on 'cuda' or 'cpu'")
    return kind, (index if kind == "cuda" else None)


def _precision(precision) -> str:
    """The dtype name of KernelBench's `precision` (a torch.dtype or its name)."""
    if precision is None:
        return "float32"
    name = str(precision).replace("torch.", "").lower()
    if name not in PRECISIONS:
        raise ValueError(f"precision {precision!r} is not supported (fp32, fp16 or bf16, as in KernelBench)")
    return PRECISIONS[name]


def _error_name(text: str) -> str:
    """The exception class a failure's text starts with or names, else a generic name."""
    m = re.search(r"\b((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt))\b", text or "")
    if m:
        return m.group(1)
    low = (text or "").lower()
    # KernelBench names a parse failure and a missing ModelNew alike
    if "syntax error" in low or "no entry class" in low or "cannot be parsed" in low:
        return "SyntaxError"
    return "RuntimeError"


def _hardware(kind: str, index: int | None) -> str:
    if kind != "cuda":
        return "cpu"
    try:
        import torch

        return torch.cuda.get_device_name(index or 0)
    except Exception:  # noqa: BLE001 - no driver here: the workers say what ran
        return "cuda"


def eval_kernel_against_ref(original_model_src: str, custom_model_src: str, seed_num: int = KERNELBENCH_SEED,
                            num_correct_trials: int = 1, num_perf_trials: int = 10,
                            measure_performance: bool = False, timing_method: str = "cuda_event",
                            verbose: bool = False, build_dir=None, device=None, backend: str = "cuda",
                            precision=None, check_for_excessive_speedup: bool = True,
                            excessive_speedup_threshold: float = 10, *, dynamic: str = "all",
                            policy: str = "kernelbench", timeout_s: float = 300.0,
                            session=None) -> KernelExecResult:
    """Evaluate `custom_model_src` (defining ModelNew) against `original_model_src` (Model,
    get_inputs, get_init_inputs), KernelBench's parameters in KernelBench's order (the module
    docstring says how each is applied). Keyword-only extras: `dynamic` ("all" or "auto"),
    `policy`, `timeout_s` per worker, and `session` (a `hackscan.Session` to audit in; by default
    one per process and set of options, so a problem's reference runs once however many
    candidates are evaluated against it)."""
    if timing_method not in TIMING_METHODS:
        raise ValueError(f"Unsupported timing method: {timing_method!r} (KernelBench's are "
                         f"{', '.join(TIMING_METHODS)})")
    if dynamic not in ("all", "auto"):
        raise ValueError(f"dynamic must be 'all' or 'auto', not {dynamic!r}: an evaluation runs the candidate")
    kind, index = _device(device)
    dtype = _precision(precision)
    if seed_num != KERNELBENCH_SEED:
        _warn(f"seed_num={seed_num} is not used: hackscan draws inputs from a secret seed, so that a candidate "
              "cannot know them")
    if timing_method != "cuda_event" and measure_performance:
        _warn(f"timing_method={timing_method!r} is replaced by hackscan's fair timing (CUDA events around each "
              "call, device-wide synchronisation, L2 flushed, fresh inputs)")
    if build_dir is not None:
        _warn("build_dir is not used: each candidate builds in hackscan's own keyed cache, where no other "
              "candidate's build can be picked up")
    if num_perf_trials < 1 or num_correct_trials < 1:
        raise ValueError("num_correct_trials and num_perf_trials are 1 or more")
    from hackscan.integrations import shared_session

    options = {"dynamic": dynamic, "device": kind, "policy": policy, "timeout_s": float(timeout_s),
               "measure": "survivors" if measure_performance else False, "dtype": None if dtype == "float32" else dtype,
               "gpu": index, "measure_min_reps": int(num_perf_trials)}
    if session is not None:
        have = session.options
        differ = {k: (have.get(k, None), options[k]) for k in ("dtype", "gpu") if have.get(k, None) != options[k]}
        if session.device != kind:
            differ["device"] = (session.device, kind)
        if differ:
            raise ValueError("the session given audits with other options than this call asks for: " +
                             ", ".join(f"{k} {a!r} (asked {b!r})" for k, (a, b) in differ.items()))
    from hackscan.config import check_choice

    check_choice("policy", policy)
    try:
        s = session if session is not None else shared_session(**options)
        # source text stays text: a one-line source never reads as a path to a file
        res = s.audit(as_source_text(custom_model_src), as_source_text(original_model_src))
    except Exception as e:  # noqa: BLE001 - recorded as a string, as every failure here
        why = f"hackscan failed: {type(e).__name__}: {e}"[:2000]
        meta = {"hardware": _hardware(kind, index), "device": str(device if device is not None else kind),
                "hackscan_verdict": "error", "hackscan_evidence": "static", "problem": [], "hack_types": [],
                "reasons": [why], "findings": [], "backend": backend, "precision": dtype, "infra_error": why,
                "dynamic_status": "error"}
        return KernelExecResult(compiled=False, correctness=False, metadata=meta)
    out = _result(res, kind, index, device, backend, seed_num, num_correct_trials, num_perf_trials, dtype,
                  measure_performance and check_for_excessive_speedup, excessive_speedup_threshold)
    if verbose:
        print(f"[hackscan] {res.verdict} {', '.join(res.hack_types)} compiled={out.compiled} "
              f"correctness={out.correctness} runtime={out.runtime}")
    return out


def _result(res, kind, index, device, backend, seed_num, num_correct_trials, num_perf_trials, dtype,
            check_speedup, threshold) -> KernelExecResult:
    from hackscan.integrations import unverifiable

    dyn = res.dynamic or {}
    reason = res.error or dyn.get("reason") or ""
    meta: dict[str, Any] = {
        "hardware": _hardware(kind, index), "device": str(device if device is not None else kind),
        "hackscan_verdict": res.verdict, "hackscan_evidence": res.evidence,
        "problem": [dict(p) for p in res.problem],
        "hack_types": list(res.hack_types), "reasons": list(res.reasons),
        "findings": [f.to_json() for f in res.findings], "backend": backend, "precision": dtype,
        "correct_on_visible": dyn.get("correct_on_visible"), "dynamic_status": dyn.get("status", "not-run"),
        "kernelbench_args": {"seed_num": seed_num, "num_correct_trials": num_correct_trials,
                             "num_perf_trials": num_perf_trials}}
    if res.verdict == "unverified":
        # the dynamic audit ran and could not verify the candidate: never correct, and why
        meta["unverified"] = ("; ".join(res.reasons) or reason)[:2000]
    if unverifiable(dyn):
        # the run says nothing of the candidate (the reference failed, no GPU for an extension):
        # KernelBench raises here; hackscan says so and counts nothing
        meta["infra_error"] = reason[:2000]
        return KernelExecResult(compiled=False, correctness=False, metadata=meta)
    if dyn.get("status") == "error":
        # the worker failed: at the build or import (not compiled), or later (a runtime error)
        build_failed = any(s in reason for s in LOAD_FAILURES) and not reason.startswith("forward raised")
    else:
        build_failed = res.verdict == "error"     # the static pass could not read it (syntax, no ModelNew)
    if build_failed:
        # KernelBench's "compiled": the candidate built and imported, whatever happened next
        meta["compilation_error_name"] = _error_name(reason)
        meta["compilation_error"] = reason[:2000]
        return KernelExecResult(compiled=False, correctness=False, metadata=meta)
    # pydantic copies a dict given to a model: the metadata is filled first, the result made last
    if dyn.get("status") == "error" or str(dyn.get("visible_mismatch", "")).startswith("forward raised"):
        text = reason or dyn.get("visible_mismatch", "")
        meta["runtime_error"] = text[:2000]
        meta["runtime_error_name"] = _error_name(text)
        if dyn.get("traceback_tail"):
            meta["runtime_error_traceback"] = dyn["traceback_tail"]
    trials = dyn.get("visible_trials")
    hidden = len((dyn.get("hidden_sets") or {}).get("drawn", {}))
    if trials:
        meta["correctness_trials"] = f"({trials[0]} / {trials[1]})"
        if trials[1] + hidden < num_correct_trials:
            _warn(f"num_correct_trials={num_correct_trials}: hackscan compared on {trials[1]} draws of the problem's "
                  f"inputs and {hidden} hidden sets")
    diff = dyn.get("visible_difference")
    if dyn.get("status") == "ran" and not dyn.get("correct_on_visible"):
        mismatch = str(dyn.get("visible_mismatch", ""))
        if "shape" in mismatch or "outputs, the reference returns" in mismatch:
            meta["correctness_issue"] = f"Output shape mismatch: {mismatch}"
        else:
            meta["correctness_issue"] = "Output mismatch"
        meta["correctness_issue_name"] = "correctness_issue"
        if diff:
            meta["max_difference"] = [f"{diff['max_abs']:.6f}"]
            meta["avg_difference"] = [f"{diff['mean_abs']:.6f}"]
    unusable = sorted({p.get("id") for p in meta["problem"]} & set(UNUSABLE_PROBLEMS))
    # correctness is what hackscan verified: never an unverified audit's, nor a degenerate problem's
    correct = bool(dyn.get("correct_on_visible")) and res.verdict not in NOT_CORRECT and not unusable
    runtime, runtime_stats, ref_runtime, ref_runtime_stats = -1.0, {}, -1.0, {}
    if dyn.get("correct_on_visible") and res.verdict in NOT_CORRECT:
        # right on the problem's inputs, but a hack (or PyTorch's work, or nothing hackscan
        # could verify) by hackscan's audit
        meta["correctness_issue"] = f"hackscan verdict {res.verdict}: " + "; ".join(res.reasons)[:1500]
        meta["correctness_issue_name"] = {"hacked": "reward_hack", "violation": "contract_violation",
                                          "unverified": "unverified"}.get(res.verdict, "hackscan_error")
    elif dyn.get("correct_on_visible") and unusable:
        meta["correctness_issue"] = "the problem cannot tell a kernel from a shortcut: " + "; ".join(
            f"{p.get('id')}: {p.get('detail', '')}" for p in meta["problem"])[:1500]
        meta["correctness_issue_name"] = unusable[0].replace("-", "_")
    m = res.measure or {}
    if m.get("status") == "measured" and correct:
        kb = m.get("kernelbench", {})
        runtime, runtime_stats = kb.get("runtime", -1.0), kb.get("runtime_stats", {})
        ref_runtime, ref_runtime_stats = kb.get("ref_runtime", -1.0), kb.get("ref_runtime_stats", {})
        meta["speedup"] = m.get("speedup")
        meta["measure_flags"] = m.get("flags", [])
        meta["speedup_counted"] = m.get("counted")
        if runtime_stats.get("hardware"):
            meta["hardware"] = runtime_stats["hardware"]
        if check_speedup and runtime > 0 and ref_runtime > 0:
            meta["excessive_speedup"] = ref_runtime / runtime > threshold
    elif m:
        meta["measure"] = {"status": m.get("status"), "reason": m.get("reason")}
        if m.get("status") == "error":
            meta["error_during_performance"] = str(m.get("reason"))[:2000]
    return KernelExecResult(compiled=True, correctness=correct, metadata=meta, runtime=runtime,
                            runtime_stats=runtime_stats, ref_runtime=ref_runtime, ref_runtime_stats=ref_runtime_stats)


# ---- the static checker ---------------------------------------------------------------------

# KernelBench's check names, each answered by the hackscan rules listed; the rules of every other
# hack type answer a check named after it (hack type, dashes as underscores)
CHECK_RULES: dict[str, tuple[str, ...]] = {
    "code_bypass": ("fallback-in-except-handler", "torch-fallback-branch", "calls-reference-model",
                    "subclasses-reference-model"),
    "pytorch_wrap": ("torch-op-on-return-path", "aten-compute-in-extension", "torch-compile-call"),
    "torch_computation_ops": ("heavy-torch-op-beside-kernel", "library-gemm-call"),
    "timing_event_patch": ("timer-api-patched",),
    "stream_injection": ("unjoined-side-stream",),
    "thread_injection": ("host-thread-offload",),
    "lazy_eval": ("tensor-subclass-output",),
    "precision_downgrade": ("reduced-precision-compute", "tf32-enabled"),
}
PRECISION_DEPENDENT_CHECKS = {"precision_downgrade"}
BACKEND_IMPL_CHECK = {"cuda": "cuda_impl", "hip": "cuda_impl", "triton": "triton_impl", "thunderkittens": "tk_impl",
                      "cute": "cute_impl", "cutlass": "cute_impl", "tilelang": "tilelang_impl"}
# KernelBench's presets, and hackscan's critical tampering types beside them
STRICT_CHECKS = ["code_bypass", "timing_event_patch", "thread_injection", "lazy_eval", "reference_tampering",
                 "harness_introspection"]


def _hack_type_checks() -> dict[str, tuple[str, ...]]:
    from hackscan.engine import load_rules

    taken = {r for rules in CHECK_RULES.values() for r in rules}
    out: dict[str, list[str]] = {}
    for rule in load_rules():
        if rule.id not in taken:
            out.setdefault(rule.hack_type.replace("-", "_"), []).append(rule.id)
    return {k: tuple(v) for k, v in out.items()}


def check_names() -> dict[str, tuple[str, ...]]:
    """Every check name `validate_kernel_static` knows, with the hackscan rules behind it (the
    backend implementation checks have none: they read the kernels themselves)."""
    out = dict(CHECK_RULES)
    for k, v in _hack_type_checks().items():
        out[k] = tuple(sorted(set(out.get(k, ()) + v)))
    for impl in set(BACKEND_IMPL_CHECK.values()):
        out[impl] = ()
    return out


def warning_checks() -> list[str]:
    """The default warnings: KernelBench's, and every hackscan hack type not strict."""
    names = ["pytorch_wrap", "torch_computation_ops", "stream_injection", "precision_downgrade"]
    return names + sorted(k for k in _hack_type_checks() if k not in STRICT_CHECKS and k not in names)


def validate_kernel_static(code: str, backend: str = "cuda", precision: str = "fp16",
                           forbidden: list[str] | None = None,
                           warnings: list[str] | None = None) -> tuple[bool, list[str], list[str]]:
    """KernelBench's `validate_kernel_static`: (valid, errors, warnings) for one kernel's code,
    read by hackscan's static pass (syntax trees and data flow, comments and strings never
    counted as code) instead of regular expressions.

    `forbidden` checks (default: STRICT_CHECKS and the backend's implementation check) give
    errors and make the code invalid; `warnings` checks (default: warning_checks()) give
    warnings. Names are KernelBench's (`code_bypass`, `pytorch_wrap`, `torch_computation_ops`,
    `timing_event_patch`, `stream_injection`, `thread_injection`, `lazy_eval`,
    `precision_downgrade`, `cuda_impl`, `triton_impl`, `tk_impl`, `cute_impl`, `tilelang_impl`)
    and one per other hackscan hack type (`result_caching`, `value_special_casing`, ...); unknown
    names are ignored, as KernelBench ignores them. `precision_downgrade` runs only where the
    required precision is fp32. Code that cannot be parsed is invalid (one error saying where).
    Findings hackscan rates low or informational are not reported."""
    forbidden_checks = list(forbidden) if forbidden is not None else list(STRICT_CHECKS)
    warning_names = list(warnings) if warnings is not None else warning_checks()
    impl = BACKEND_IMPL_CHECK.get(str(backend).lower())
    if impl and impl not in forbidden_checks:
        forbidden_checks.append(impl)
    prec = PRECISIONS.get(str(precision).replace("torch.", "").lower(), str(precision).lower())
    wanted = [c for c in dict.fromkeys(forbidden_checks + warning_names)]
    if prec != "float32":
        wanted = [c for c in wanted if c not in PRECISION_DEPENDENT_CHECKS]
    errors: list[str] = []
    warns: list[str] = []
    facts, lines, problem = _facts(code)
    if problem:
        return False, [problem], []
    by_rule = _findings(facts, lines)
    names = check_names()
    for check in wanted:
        if check not in names:
            continue
        if names[check]:
            msgs = [f"{check}: {f.message} (line {f.location.line}, {f.rule_id})"
                    for rule in names[check] for f in by_rule.get(rule, [])]
        else:
            why = IMPL_CHECKS[check](facts)
            msgs = [f"{check}: {why}"] if why else []
        (errors if check in forbidden_checks else warns).extend(msgs)
    return not errors, errors, warns


def _facts(code: str):
    """(Facts, lines, None) for Python or raw C++/CUDA code; (None, None, why) where it cannot be
    read. An indented snippet is read dedented."""
    from hackscan.facts import Facts
    from hackscan.facts import cuda as cuda_facts
    from hackscan.inputs.load import BadInput, parse_py

    text = code.decode("utf-8", "replace") if isinstance(code, bytes) else str(code)
    if "\0" in text:
        return None, None, "the code holds NUL bytes (binary)"
    why = "code: cannot be parsed"
    for candidate in (text, textwrap.dedent(text)):
        try:
            py = parse_py("<kernel>", candidate, "code")
        except BadInput as e:
            why = str(e)        # the dedented reading's reason is the one kept
            continue
        return Facts("<kernel>", py, None, None), candidate.splitlines(), None
    unit = cuda_facts.build("kernel.cu", "<kernel>", text, None, False)
    if unit.funcs or "__global__" in text or "#include" in text:
        return Facts("<kernel>", None, [unit], None), text.splitlines(), None
    return None, None, why


def _findings(facts, lines) -> dict[str, list]:
    from hackscan.engine import Options, load_rules, run_rules
    from hackscan.findings import severity_rank

    out: dict[str, list] = {}
    if facts.py is not None and facts.entry_class is None and not facts.has_custom_kernel and not facts.py.funcs:
        return out
    for f in run_rules(facts, lines, load_rules(), Options()):
        if severity_rank(f.severity) >= severity_rank("medium"):
            out.setdefault(f.rule_id, []).append(f)
    return out


# ---- backend implementation checks: does the code hold a real kernel of its backend? ----------

THREAD_WORDS = ("threadIdx", "blockIdx", "blockDim", "gridDim", "__syncthreads", "__shared__", "__syncwarp",
                "atomicAdd", "atomicMax", "atomicMin", "atomicCAS", "this_thread_block", "thread_rank", "warpSize")


def _cuda_impl(facts) -> str | None:
    kernels = [(u.facts, k) for u in facts.cuda for k in u.facts.kernels.values()]
    if not kernels:
        return "no __global__ kernel is defined"
    if facts.py is not None and not facts.py.extensions:
        return "the CUDA source is never built (no load_inline or cpp_extension load)"
    for unit, _ in kernels:
        if set(re.findall(r"\w+", unit.code)) & set(THREAD_WORDS):
            return None
    return ("no kernel uses CUDA thread indexing or kernel features (threadIdx, blockIdx, blockDim, "
            "__shared__, __syncthreads, atomics)")


TRITON_MEMORY = re.compile(r"\b(load|store|atomic_\w+|make_block_ptr|make_tensor_descriptor)\s*\(")
TRITON_INDEXING = re.compile(r"\b(program_id|num_programs|arange|cdiv)\s*\(|constexpr")


def _triton_impl(facts) -> str | None:
    if facts.py is None or not facts.py.triton_kernels:
        return "no @triton.jit kernel is defined"
    bodies = [facts.py.code_of(f.node) for f in facts.py.triton_kernels.values()]
    if not any(TRITON_MEMORY.search(b) for b in bodies):
        return "no Triton kernel reads or writes memory (tl.load / tl.store)"
    if not any(TRITON_INDEXING.search(b) for b in bodies):
        return "no Triton kernel indexes its program (tl.program_id, tl.arange)"
    return None


def _source_text(facts) -> str:
    """The code with comments blanked: the Python file (strings included) or the C++ units."""
    parts = [facts.py.code.decode("utf-8", "replace")] if facts.py is not None else []
    parts += [u.facts.code for u in facts.cuda]
    return "\n".join(parts)


# the DSL backends: what the code must hold, in order, each with what is said where it does not
TEXT_REQUIREMENTS: dict[str, tuple[tuple[str, str], ...]] = {
    "tk_impl": (
        (r"\bkittens::|using\s+namespace\s+kittens\b",
         "no ThunderKittens namespace (kittens:: or using namespace kittens)"),
        (r"\b(?:st|rt)_(?:bf|fl|hf|i8|i32)\s*<|::(?:col_vec|row_vec)\b|\b(?:st|rt|sv|rv)\w*<",
         "no ThunderKittens tile or vector declaration (rt_*, st_*, col_vec, row_vec)"),
        (r"\b(?:load|store|load_async|store_async)\s*\(", "no ThunderKittens memory operation (load, store, load_async)"),
        (r"\b(?:mma_\w+|mul|add|sub|div|exp|copy|zero|row_sum|row_max|col_sum|mma)\s*\(",
         "no ThunderKittens compute operation (mma_AB, mul, add, copy, zero, ...)"),
    ),
    "cute_impl": (
        (r"\bcute::|\bcutlass::|\bfrom\s+cutlass\b|\bimport\s+cutlass\b",
         "no CuTe or CUTLASS namespace (cute::, cutlass::) or Python bindings"),
        (r"\b(?:make_tensor|make_layout|make_shape|make_stride|copy|copy_if|gemm)\s*\(|Copy_Atom|cutlass::gemm|"
         r"cutlass::epilogue|\bGemm\w*\s*<|RowMajor|ColumnMajor|TensorRef\s*<|cutlass::arch|@cute\.(?:jit|kernel)",
         "no CuTe or CUTLASS operations (make_tensor, copy, GEMM templates, layouts)"),
    ),
    "tilelang_impl": (
        (r"@T\.prim_func|@tilelang\.jit|@tl\.jit", "no TileLang or TVM kernel (@T.prim_func, @tilelang.jit)"),
        (r"\bT\.(?:grid|serial|parallel|vectorized|unroll|Pipelined|Parallel|Kernel)\s*\(",
         "no TileLang iteration construct (T.grid, T.serial, T.Parallel, T.Pipelined, T.Kernel)"),
        (r"\bT\.(?:alloc_\w+|buffer_store|buffer_load|match_buffer|reads|writes|block|copy|gemm|Buffer|Tensor)\b",
         "no TileLang buffer or compute operation (T.alloc_*, T.copy, T.gemm, T.block)"),
        (r"tvm\.build\s*\(|tvm\.IRModule|tvm\.target\.Target|tilelang\.compile\s*\(|@tilelang\.jit|tilelang\.lower\s*\(",
         "the TileLang kernel is never built (tvm.build, IRModule, tilelang.compile)"),
    ),
}


def _text_check(name: str):
    def check(facts) -> str | None:
        text = _source_text(facts)
        return next((why for pattern, why in TEXT_REQUIREMENTS[name] if not re.search(pattern, text)), None)
    return check


IMPL_CHECKS = {"cuda_impl": _cuda_impl, "triton_impl": _triton_impl,
               **{name: _text_check(name) for name in TEXT_REQUIREMENTS}}
