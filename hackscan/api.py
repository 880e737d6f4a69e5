"""The library entry points: `scan` for one candidate in memory, `scan_paths` for files."""
from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Iterable, Iterator

from hackscan.engine import Options, error_result, finish, load_rules
from hackscan.findings import SubmissionResult
from hackscan.inputs.discover import Item, discover
from hackscan.inputs.load import MAX_BYTES, BadInput, load


def scan(candidate_source: str | bytes, reference_source: str | bytes | None = None, *,
         path: str = "<candidate>", entry: str = "ModelNew", policy: str = "kernelbench",
         select: Iterable[str] = (), ignore: Iterable[str] = (), min_confidence: str = "low",
         language: str = "python") -> SubmissionResult:
    """Statically audit one candidate given as source text. Never imports or runs it.

    `language` is "python" (KernelBench/Triton/PyTorch file) or "cuda" (raw .cu/.cpp)."""
    opts = Options(tuple(select), tuple(ignore), min_confidence, policy, entry)
    suffix = ".py" if language == "python" else ".cu"
    return _scan_one(path, candidate_source, reference_source, None, suffix, None, opts)


def _scan_one(path: str, data: str | bytes, ref: str | bytes | None, ref_path: str | None,
              suffix: str, base_dir: Path | None, opts: Options, max_bytes: int = MAX_BYTES) -> SubmissionResult:
    t0 = time.perf_counter()
    own_lines = None
    if suffix == ".py":
        data, ref, own_lines = _gpumode(data, ref, opts.entry)
    try:
        loaded = load(path, data, ref, entry=opts.entry, suffix=suffix, base_dir=base_dir,
                      reference_path=ref_path, max_bytes=max_bytes)
        result = finish(path, loaded.facts, loaded.lines, load_rules(), opts, loaded.backend, ref_path, t0)
        return _onto_own_lines(result, loaded.lines, own_lines) if own_lines else result
    except BadInput as e:
        return error_result(path, str(e), seconds=time.perf_counter() - t0)
    except RecursionError:
        return error_result(path, "file nests too deeply to analyse", seconds=time.perf_counter() - t0)
    except Exception as e:  # noqa: BLE001 - an analyser bug must not lose the rest of the audit
        return error_result(path, f"internal error while analysing: {type(e).__name__}: {e}",
                            seconds=time.perf_counter() - t0)


def _gpumode(data, ref, entry: str):
    """A GPU MODE submission (custom_kernel, no entry class) and its reference (ref_kernel,
    generate_input) read as the KernelBench pair they are equivalent to: tails appended, no line
    moved (hackscan.inputs.gpumode)."""
    from hackscan.inputs import gpumode

    def text(x):
        if isinstance(x, bytes):
            try:
                return x.decode("utf-8")
            except UnicodeDecodeError:
                return None
        return x

    c = text(data)
    if c is None or not gpumode.is_candidate(c, entry):
        return data, ref, None
    r = text(ref) if ref is not None else None
    if r is not None and gpumode.is_reference(r):
        ref = gpumode.reference_source(r, {})
    return gpumode.candidate_source(c), ref, len(c.splitlines())


def _onto_own_lines(result: SubmissionResult, lines: list[str], own: int) -> SubmissionResult:
    """Findings placed in the appended GPU MODE tail (the adapter's forward) are reported at the
    submission's `def custom_kernel`, a line the user wrote."""
    import re
    from dataclasses import replace

    at = next((i + 1 for i, ln in enumerate(lines[:own]) if re.match(r"\s*def custom_kernel\s*\(", ln)), 1)
    moved = []
    for f in result.findings:
        if f.location.line > own:
            f = replace(f, location=replace(f.location, line=at, column=1, end_line=at), snippet=lines[at - 1].strip())
        moved.append(f)
    return replace(result, findings=tuple(moved))


def scan_item(item: Item, opts: Options, max_bytes: int = MAX_BYTES) -> SubmissionResult:
    p = item.path
    try:
        if not p.is_file():
            return error_result(item.display, "no such file" if not p.exists() else "not a regular file")
        size = p.stat().st_size
        if size > max_bytes:
            return error_result(item.display, f"file is {size:,} bytes, over the {max_bytes:,}-byte limit")
        data = p.read_bytes()
        ref = ref_path = None
        if item.reference is not None:
            ref = item.reference.read_bytes()
            ref_path = _rel(item.reference)
    except OSError as e:
        return error_result(item.display, f"cannot read: {e.strerror or e}")
    return _scan_one(item.display, data, ref, ref_path, p.suffix if p.suffix != ".py" else ".py",
                     p.parent, opts, max_bytes)


def _rel(p: Path) -> str:
    try:
        return p.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return p.as_posix()


def _worker_batch(args) -> list[SubmissionResult]:
    items, opts, max_bytes = args
    return [scan_item(i, opts, max_bytes) for i in items]


def iter_scan(items: list[Item], opts: Options, jobs: int = 1, max_bytes: int = MAX_BYTES,
              backend=None) -> Iterator[SubmissionResult]:
    """Results in input order; with jobs > 1 the work is spread over processes in chunks, or
    over Ray tasks with a `hackscan.parallel.RayBackend` (the paths must be readable where the
    tasks run: a local instance, or a cluster with a shared filesystem)."""
    if backend is not None and backend.name == "ray":
        from hackscan.parallel import BatchFailure

        chunk = max(4, min(256, len(items) // (backend.jobs * 4) or 1))
        batches = (items[i:i + chunk] for i in range(0, len(items), chunk))
        for (batch, _, _), res in backend.map(_worker_batch, ((b, opts, max_bytes) for b in batches)):
            if isinstance(res, BatchFailure):
                yield from (error_result(i.display, res.reason) for i in batch)
            else:
                yield from res
        return
    if jobs <= 1 or len(items) < 8:
        for i in items:
            yield scan_item(i, opts, max_bytes)
        return
    chunk = max(4, min(64, len(items) // (jobs * 8) or 1))
    batches = [items[i:i + chunk] for i in range(0, len(items), chunk)]
    import multiprocessing as mp

    ctx = mp.get_context("fork" if os.name == "posix" else "spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as ex:
        for res in ex.map(_worker_batch, [(b, opts, max_bytes) for b in batches]):
            yield from res


def audit(candidate: str | Path, reference: str | Path | None = None, *, dynamic: str = "auto",
          device: str = "cpu", policy: str = "kernelbench", entry: str = "ModelNew", timeout_s: float = 180.0,
          seed: int | None = None, cuda_ghost: str = "suspects", measure: bool | str = False,
          measure_budget_s: float = 10.0, dtype: str | None = None, gpu: int | None = None) -> SubmissionResult:
    """Static audit, then dynamic confirmation on hidden inputs in isolated workers.

    `candidate` and `reference` are file paths or source text. `dynamic` is "off", "auto" (the
    probes the static suspects name, plus hidden distributions) or "all" (every probe).
    `cuda_ghost` says where ghost replay of CUDA kernels (a rebuild) runs: "suspects", "always"
    or "never". `measure` (True, "survivors" or "all") adds fair measurement: speedup against the
    strict fp32 and the TF32 reference, peak memory and flags, in `result.measure`. `dtype`
    ("float16", "bfloat16", "float32", "float64") runs the problem in that precision: every
    floating input and both models cast to it, as KernelBench's `precision` does. `gpu` pins every
    worker to that device (an index into this process's visible GPUs) on `device="cuda"`."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="hackscan-api-") as tmp:
        cand_path = _as_file(candidate, Path(tmp) / "candidate.py")
        ref_path = _as_file(reference, Path(tmp) / "reference.py") if reference is not None else None
        item = Item(cand_path, ref_path, str(candidate) if _is_path(candidate) else "<candidate>")
        opts = Options(policy=policy, entry=entry)
        result = scan_item(item, opts)
        mode = {True: "survivors", False: "off"}.get(measure, measure)
        if mode not in ("off", "survivors", "all"):
            raise ValueError(f"measure must be True, False, 'survivors' or 'all', not {measure!r}")
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
    candidates are audited at a time, and measurement (if asked) runs one candidate at a time
    after the audits."""
    from hackscan.session import Session

    with Session(dynamic=dynamic, device=device, policy=policy, entry=entry, timeout_s=timeout_s, seed=seed,
                 cuda_ghost=cuda_ghost, measure=measure, measure_budget_s=measure_budget_s,
                 max_concurrent=max(1, jobs), dtype=dtype) as s:
        yield from s.audit_many(pairs, jobs)


def _is_path(x) -> bool:
    return isinstance(x, Path) or (isinstance(x, str) and "\n" not in x and len(x) < 4096 and Path(x).is_file())


def _as_file(x: str | Path, fallback: Path) -> Path:
    if _is_path(x):
        return Path(x)
    fallback.write_text(str(x))
    return fallback


def scan_paths(paths: Iterable[str | Path], *, reference: str | Path | None = None,
               problems: str | Path | None = None, jobs: int = 1, **kw) -> list[SubmissionResult]:
    """Audit every candidate under `paths` (files or folders)."""
    opts = Options(tuple(kw.get("select", ())), tuple(kw.get("ignore", ())), kw.get("min_confidence", "low"),
                   kw.get("policy", "kernelbench"), kw.get("entry", "ModelNew"))
    items = discover([Path(p) for p in paths], Path(reference) if reference else None,
                     Path(problems) if problems else None, sidecars=bool(kw.get("sidecars", False)),
                     entry=opts.entry)
    return list(iter_scan(items, opts, jobs))
