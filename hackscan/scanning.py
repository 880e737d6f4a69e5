"""The static pass over one item or many: reading a candidate (and its reference) from disk or
memory, the GPU MODE adaptation, and the process pool or Ray tasks over many. `hackscan.api` and
`hackscan.Session` call it; it calls only the layers below it (inputs, facts, engine)."""
from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Iterator

from hackscan.engine import Options, error_result, finish, load_rules
from hackscan.findings import SubmissionResult
from hackscan.inputs.discover import Item
from hackscan.inputs.load import MAX_BYTES, BadInput, load
from hackscan.inputs.record import sha256_of


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
    r = _scan_one(item.display, data, ref, ref_path, p.suffix if p.suffix != ".py" else ".py", p.parent, opts, max_bytes)
    return replace(r, source_sha256=sha256_of(data), reference_sha256=sha256_of(ref))


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


def is_path(x) -> bool:
    """Whether `x` names a file (rather than holding source text)."""
    return isinstance(x, Path) or (isinstance(x, str) and "\n" not in x and len(x) < 4096 and Path(x).is_file())


# what a one-line string naming a file ends with: such a string is read as a path, never as source
SOURCE_SUFFIXES = (".py", ".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hip")


def check_options(*, dynamic=None, device=None, policy=None, cuda_ghost=None, measure=None,
                  min_confidence=None) -> str | None:
    """Check the option values given (None: not given) against the table the command line uses
    (`hackscan.config.CHOICES`): ValueError naming the option and its valid values. Returns the
    measure mode ("off", "survivors", "all") where `measure` is given (True/False accepted)."""
    from hackscan.config import check_choice

    for key, value in (("dynamic", dynamic), ("device", device), ("policy", policy), ("cuda-ghost", cuda_ghost),
                       ("min-confidence", min_confidence)):
        if value is not None:
            check_choice(key, value)
    if measure is None:
        return None
    if isinstance(measure, bool):
        return "survivors" if measure else "off"
    if measure not in ("off", "survivors", "all"):
        raise ValueError(f"measure={measure!r}: not a valid value (True, False, 'off', 'survivors' or 'all')")
    return measure


def as_source_text(src) -> str:
    """Source text as text, never as a path: bytes decoded, a trailing newline added (a one-line
    string naming a file is that text, not the file on the auditor's disk)."""
    text = src.decode("utf-8", "replace") if isinstance(src, bytes) else str(src)
    return text if text.endswith("\n") else text + "\n"


def check_source(x, what: str = "candidate") -> None:
    """A candidate or reference argument is a path or source text. A path that is not a file, or
    a one-line string that reads as one (it ends in a source suffix such as .py or .cu), raises
    FileNotFoundError: it is never audited as the text of its own name."""
    if isinstance(x, Path):
        if not x.is_file():
            raise FileNotFoundError(f"{what} {str(x)!r}: no such file")
        return
    if isinstance(x, str) and not is_path(x) and _looks_like_path(x):
        raise FileNotFoundError(f"{what} {x!r}: no such file (a one-line string ending in "
                                f"{Path(x).suffix} is read as a path; pass the source text itself)")


def _looks_like_path(x: str) -> bool:
    text = x.strip()
    return ("\n" not in text and bool(text) and text.lower().endswith(SOURCE_SUFFIXES)
            and ("/" in text or "\\" in text or not any(c.isspace() for c in text)))
