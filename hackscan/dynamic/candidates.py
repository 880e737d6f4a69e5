"""Facts about a candidate that its audit reads before and after the run: its kernels' names,
whether its extension has device code or was built, the floating-point input elements of a
problem, the calls a worker did not report, and a hint where a build missed the GPU's
architecture."""
from __future__ import annotations


import re
from pathlib import Path

import torch

from hackscan.inputs.siblings import sibling_sources


def _float_elems(spec: list) -> int:
    n = 0
    for t in spec:
        if "shape" in t and str(t.get("dtype", "")).startswith(("float", "bfloat", "half")):
            k = 1
            for d in t["shape"]:
                k *= int(d)
            n += k
    return n


def _builds_cuda(path: Path) -> bool:
    """Whether the candidate's extension has device code (a C++-only extension runs on a CPU)."""
    if any(p.suffix in (".cu", ".cuh") for p in sibling_sources(path)):
        return True
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return True
    return bool(re.search(r"cuda_sources|__global__|\.cu\b|<<<|CUDAExtension|cuda_runtime", text))


_NO_IMAGE = re.compile(r"no kernel image is available|cudaErrorNoKernelImageForDevice|CUDA_ERROR_NO_BINARY_FOR_GPU|"
                       r"invalid device function")
_ARCH = re.compile(r"\b(?:sm|compute)_(\d{2,3}[af]?)\b|TORCH_CUDA_ARCH_LIST\W{1,12}(\d{1,2}\.\d[af]?)")


def _missing_triton_hint(error: str | None) -> str | None:
    """Where a candidate could not import Triton because the auditor's environment has none (its
    workers run the auditor's Python): the install that adds it. An explanation only."""
    if not error or "No module named 'triton'" not in error:
        return None
    import importlib.util

    if importlib.util.find_spec("triton") is not None:
        return None
    from hackscan import install

    return f"Triton is not installed where hackscan runs (its workers use the same Python): {install.hint('dynamic')}"


def _architecture_hint(error: str | None, path: Path, device: str) -> str | None:
    """Where a candidate's kernels had no image for this GPU: the architectures its source names
    (build flags, TORCH_CUDA_ARCH_LIST) beside the GPU's own, so that the error reads as a kernel
    built for another GPU, to audit there, not as a broken kernel. An explanation of an error
    only: it changes no verdict."""
    if not error or device != "cuda" or not _NO_IMAGE.search(error):
        return None
    names = set()
    for f in [path, *sibling_sources(path)]:
        try:
            text = f.read_text(errors="replace")
        except OSError:
            continue
        for m in _ARCH.finditer(text):
            if m.group(1):
                names.add(f"sm_{m.group(1)}")
            else:
                names.add("sm_" + m.group(2).replace(".", ""))
    if not names:
        return None
    try:
        major, minor = torch.cuda.get_device_capability()
        here = f"sm_{major}{minor}"
    except Exception:  # noqa: BLE001 - no CUDA in the auditor's process
        here = None
    named = ", ".join(sorted(names))
    return (f"the candidate's source names {named} (its build flags or TORCH_CUDA_ARCH_LIST)"
            + (f" and this GPU is {here}" if here else "")
            + ": a kernel built for another GPU; audit it on one of those")


def _built(job: dict, files: dict, bdir: Path | None) -> bool:
    """Whether a started worker can take the job: its source builds no extension, or the build
    is done in its keyed folder (a build made inside a started worker would land in its slot and
    be lost, not wrong; a source that names torch's extension builder waits for its build in the
    keyed folder)."""
    try:
        needs_build = b"cpp_extension" in Path(files[job["source"]]).read_bytes()
    except (KeyError, OSError):
        needs_build = True
    return not needs_build or (bdir is not None and any(
        "triton" not in p.relative_to(bdir).parts for p in bdir.rglob("*.so")))


def _candidate_facts(path: Path, entry: str = "ModelNew"):
    """The candidate's text and static facts, read once per audit with the entry class the
    static pass found (KernelBench-Hard's candidates define `Model`: read for `ModelNew`, they had
    no facts, so no kernel of theirs was known to the profiler's attribution or to the rewritten
    runs); None where unreadable."""
    from hackscan.inputs.load import BadInput, load

    try:
        text = path.read_text("utf-8")
        return text, load(str(path), text, entry=entry).facts
    except (BadInput, OSError, UnicodeDecodeError):
        return None


def _kernel_names(parsed) -> frozenset:
    """Names of the kernels the candidate's source defines (Triton and C++/CUDA), from its
    static facts and from every `__global__` definition in its text (a CUDA source that reaches
    `load_inline` through `.replace` or a template is not in the facts): what the profiler
    attributes to the candidate itself."""
    if not parsed:
        return frozenset()
    from hackscan.dynamic.kernel_names import cuda_kernel_names

    text, facts = parsed
    names = set(facts.py.triton_kernels) if facts.py is not None else set()
    for unit in facts.cuda:
        names.update(unit.facts.kernels)
    names.update(cuda_kernel_names(text))
    return frozenset(names)


def _unreported(plan: list, perturb, steps) -> tuple[int, int] | None:
    """(missing, planned) where the worker's report lacks a record of a planned call."""
    planned = {(st.get("slot") or st["set"], st.get("call", 0)) for st in plan
               if st.get("op") in ("forward", "profile", "timing")}
    if perturb is not None:
        planned.add(("reinit", 300))
    if not isinstance(steps, list):
        return (len(planned), len(planned)) if planned else None
    got = {(r.get("set"), r.get("call", 0)) for r in steps if isinstance(r, dict) and r.get("variant") == "fp32"}
    missing = planned - got
    return (len(missing), len(planned)) if missing else None
