"""The library entry points: `scan` for one candidate in memory, `scan_paths` for files."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator

from hackscan.engine import Options
from hackscan.findings import SubmissionResult
from hackscan.inputs.discover import Item, discover
from hackscan.scanning import _scan_one, check_options, check_source, is_path as _is_path, iter_scan, scan_item

__all__ = ["audit", "audit_many", "iter_scan", "scan", "scan_item", "scan_paths"]


def scan(candidate_source: str | bytes, reference_source: str | bytes | None = None, *,
         path: str = "<candidate>", entry: str = "ModelNew", policy: str = "kernelbench",
         select: Iterable[str] = (), ignore: Iterable[str] = (), min_confidence: str = "low",
         language: str = "python") -> SubmissionResult:
    """Statically audit one candidate given as source text. Never imports or runs it.

    `language` is "python" (KernelBench/Triton/PyTorch file) or "cuda" (raw .cu/.cpp). `policy`
    and `min_confidence` are checked against the command line's values (ValueError)."""
    check_options(policy=policy, min_confidence=min_confidence)
    if language not in ("python", "cuda"):
        raise ValueError(f"language={language!r}: not a valid value (one of 'python', 'cuda')")
    opts = Options(tuple(select), tuple(ignore), min_confidence, policy, entry)
    suffix = ".py" if language == "python" else ".cu"
    return _scan_one(path, candidate_source, reference_source, None, suffix, None, opts)


def audit(candidate: str | Path, reference: str | Path | None = None, *, dynamic: str = "auto",
          device: str = "cpu", policy: str = "kernelbench", entry: str = "ModelNew", timeout_s: float = 180.0,
          seed: int | None = None, cuda_ghost: str = "suspects", measure: bool | str = False,
          measure_budget_s: float = 10.0, dtype: str | None = None, gpu: int | None = None) -> SubmissionResult:
    """Static audit, then dynamic confirmation on hidden inputs in isolated workers.

    `candidate` and `reference` are file paths or source text. `dynamic` is "off", "auto" (the
    core probes on every submission, plus those the static suspects name) or "all" (every
    probe). A dynamic audit that cannot verify the candidate (no reference, no GPU for a CUDA
    extension, ...) gives `unverified`, never `clean`; `result.evidence` says what the verdict
    rests on and `result.problem` lists problem-level findings.
    `cuda_ghost` ("suspects", "always" or "never") is accepted for earlier callers and has no
    effect: ghost replay no longer rebuilds CUDA extensions. `measure` (True, "survivors" or "all") adds fair measurement: speedup against the
    strict fp32 and the TF32 reference, peak memory and flags, in `result.measure`. `dtype`
    ("float16", "bfloat16", "float32", "float64") runs the problem in that precision: every
    floating input and both models cast to it, as KernelBench's `precision` does. `gpu` pins every
    worker to that device (an index into this process's visible GPUs) on `device="cuda"`.

    Option values are checked against the command line's (`hackscan.config.CHOICES`): an unknown
    one raises ValueError naming the valid values. A path that does not exist, or a one-line
    string ending in .py/.cu/... that names no file, raises FileNotFoundError."""
    import tempfile

    mode = check_options(dynamic=dynamic, device=device, policy=policy, cuda_ghost=cuda_ghost, measure=measure)
    check_source(candidate, "candidate")
    if reference is not None:
        check_source(reference, "reference")

    with tempfile.TemporaryDirectory(prefix="hackscan-api-") as tmp:
        cand_path = _as_file(candidate, Path(tmp) / "candidate.py")
        ref_path = _as_file(reference, Path(tmp) / "reference.py") if reference is not None else None
        item = Item(cand_path, ref_path, str(candidate) if _is_path(candidate) else "<candidate>")
        opts = Options(policy=policy, entry=entry)
        result = scan_item(item, opts)
        if dynamic == "off" and mode == "off":
            return result
        from hackscan.dynamic.audit import DynamicOptions, DynamicSession

        session = DynamicSession(DynamicOptions(mode=dynamic, device=device, timeout_s=timeout_s, seed=seed,
                                                policy=policy, cuda_ghost=cuda_ghost, measure=mode,
                                                measure_budget_s=measure_budget_s, dtype=dtype, gpu=gpu))
        try:
            if dynamic != "off":
                result = session.audit(result, cand_path, ref_path)
            if mode != "off":
                result = session.measure(result, cand_path, ref_path)
            return result
        finally:
            session.close()


def audit_many(pairs: Iterable[tuple[str | Path, str | Path | None]], *, dynamic: str = "auto",
               device: str = "cpu", policy: str = "kernelbench", entry: str = "ModelNew", timeout_s: float = 180.0,
               seed: int | None = None, cuda_ghost: str = "suspects", measure: bool | str = False,
               measure_budget_s: float = 10.0, jobs: int = 1, dtype: str | None = None) -> Iterator[SubmissionResult]:
    """`audit` over (candidate, reference) pairs (paths or source text), yielding results in input
    order. One `hackscan.Session` serves them all: each problem's reference runs once, `jobs`
    candidates are audited at a time, and measurement (if asked) runs after the audits, one
    timing at a time (with started workers, `HACKSCAN_PRESTART`, up to three measurements in
    flight, each one's preparation beside another's timing). Options are checked as `audit`
    checks them (and each pair's paths), when it is called, not at the first result."""
    check_options(dynamic=dynamic, device=device, policy=policy, cuda_ghost=cuda_ghost, measure=measure)
    pairs = list(pairs)
    for cand, ref in pairs:
        check_source(cand, "candidate")
        if ref is not None:
            check_source(ref, "reference")
    return _audit_many(pairs, dynamic=dynamic, device=device, policy=policy, entry=entry, timeout_s=timeout_s,
                       seed=seed, cuda_ghost=cuda_ghost, measure=measure, measure_budget_s=measure_budget_s,
                       jobs=jobs, dtype=dtype)


def _audit_many(pairs, *, dynamic, device, policy, entry, timeout_s, seed, cuda_ghost, measure, measure_budget_s,
                jobs, dtype) -> Iterator[SubmissionResult]:
    from hackscan.session import Session

    with Session(dynamic=dynamic, device=device, policy=policy, entry=entry, timeout_s=timeout_s, seed=seed,
                 cuda_ghost=cuda_ghost, measure=measure, measure_budget_s=measure_budget_s,
                 max_concurrent=max(1, jobs), dtype=dtype) as s:
        yield from s.audit_many(pairs, jobs)


def _as_file(x: str | Path, fallback: Path) -> Path:
    if _is_path(x):
        return Path(x)
    fallback.write_text(str(x))
    return fallback


def scan_paths(paths: Iterable[str | Path], *, reference: str | Path | None = None,
               problems: str | Path | None = None, jobs: int = 1, **kw) -> list[SubmissionResult]:
    """Audit every candidate under `paths` (files or folders)."""
    check_options(policy=kw.get("policy"), min_confidence=kw.get("min_confidence"))
    opts = Options(tuple(kw.get("select", ())), tuple(kw.get("ignore", ())), kw.get("min_confidence", "low"),
                   kw.get("policy", "kernelbench"), kw.get("entry", "ModelNew"))
    items = discover([Path(p) for p in paths], Path(reference) if reference else None,
                     Path(problems) if problems else None, sidecars=bool(kw.get("sidecars", False)),
                     entry=opts.entry)
    return list(iter_scan(items, opts, jobs))
