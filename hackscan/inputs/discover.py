"""Find candidate files under paths and pair each with its reference.

Pairing, first match wins: `--reference FILE`; with `--sidecars` only, a sidecar `<stem>.toml`
with `reference = "path"`; `--problems DIR` for KernelBench run names
(`level_L_problem_P_sample_S_kernel.py` -> `DIR/levelL/P_*.py` or
`DIR/level_L_problem_P*.py`); a sibling `reference.py` / `ref_code.py`. In a GPU MODE problem
folder (its reference.py defines ref_kernel and generate_input) only files defining
custom_kernel are candidates."""
from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CANDIDATE_SUFFIXES = {".py", ".cu", ".cuh", ".cpp", ".cc", ".cxx", ".hpp", ".h"}
RAW_SUFFIXES = CANDIDATE_SUFFIXES - {".py"}
REFERENCE_NAMES = ("reference.py", "ref_code.py")
SKIP_DIRS = {"__pycache__", ".git", ".hg", ".venv", "venv", "node_modules", ".tox", "build", "dist"}
KB_RUN = re.compile(r"level_(\d+)_problem_(\d+)_sample_(\d+)_kernel\.py$")


@dataclass(frozen=True)
class Item:
    path: Path
    reference: Path | None
    display: str
    sidecar: Path | None = None


KERNEL_MARKS = (b"triton.jit", b"load_inline", b"cpp_extension", b"__global__", b"def custom_kernel")


def _reads_as_reference(path: Path, entry: str = "ModelNew") -> bool:
    """Whether a file found by walking a folder is a KernelBench problem file, not a candidate:
    it defines Model and get_inputs, not the entry class, lies beside no reference of its own,
    and carries no kernel (agent solutions often keep the class name Model and a get_inputs of
    their own; their Triton or CUDA code tells them apart)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(256_000)
    except OSError:
        return False
    if not (b"class Model(" in head and b"def get_inputs" in head):
        return False
    if entry != "Model" and re.search(rb"class\s+" + re.escape(entry.encode()) + rb"\s*[(:]", head):
        return False
    if any((path.parent / n).is_file() for n in REFERENCE_NAMES):
        return False   # beside a reference: a candidate of that reference
    return not any(m in head for m in KERNEL_MARKS)


def sidecar_for(path: Path) -> Path | None:
    side = path.with_suffix(".toml")
    return side if side.is_file() else None


def read_sidecar(side: Path | None) -> dict:
    if side is None:
        return {}
    try:
        return tomllib.loads(side.read_text("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return {}


def find_reference(path: Path, reference: Path | None, problems: Path | None, sidecar: dict) -> Path | None:
    if reference is not None:
        return reference
    ref = sidecar.get("reference")
    if isinstance(ref, str):
        p = (path.parent / ref).resolve()
        if p.is_file():
            return p
    if problems is not None:
        m = KB_RUN.search(path.name)
        if m:
            level, prob = m.group(1), m.group(2)
            for pat in (f"level{level}/{prob}_*.py", f"level_{level}/{prob}_*.py",
                        f"level_{level}_problem_{prob}.py", f"level_{level}_problem_{prob}_*.py"):
                hits = sorted(problems.glob(pat))
                if hits:
                    return hits[0]
    if path.suffix == ".py":
        for name in REFERENCE_NAMES:
            p = path.parent / name
            if p.is_file() and p.resolve() != path.resolve():
                return p
    return None


def discover(paths: list[Path], reference: Path | None = None, problems: Path | None = None,
             root: Path | None = None, sidecars: bool = False, entry: str = "ModelNew") -> list[Item]:
    """Candidate files under `paths`, sorted, each with its reference (or None). A sidecar
    `<stem>.toml` lies in the audited tree, which the graded party may have written: it pairs a
    candidate with a reference only where the caller says the tree is its own (`sidecars`,
    `hackscan audit --sidecars`; the bundled demo)."""
    files: list[Path] = []
    explicit: set[Path] = set()
    for p in paths:
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                if any(part in SKIP_DIRS or part.startswith(".") for part in f.relative_to(p).parts[:-1]):
                    continue
                if f.is_file() and f.suffix in CANDIDATE_SUFFIXES and f.name not in REFERENCE_NAMES:
                    if problems is not None and _inside(f, problems):
                        continue
                    if f.suffix == ".py" and _reads_as_reference(f, entry):
                        continue
                    if f.suffix == ".py" and _gpumode_folder(f.parent) and not _defines_custom_kernel(f):
                        continue  # a GPU MODE problem's task.py, utils.py, eval.py
                    files.append(f)
        elif p.exists():
            files.append(p)
            explicit.add(p)
        else:
            files.append(p)  # reported as an error item
            explicit.add(p)
    items = []
    seen = set()
    for f in files:
        key = f.resolve() if f.exists() else f
        if key in seen:
            continue
        seen.add(key)
        side = sidecar_for(f) if sidecars and f.exists() else None
        ref = find_reference(f, reference, problems, read_sidecar(side)) if f.exists() else None
        items.append(Item(f, ref, display_path(f, root), side))
    return items


@functools.lru_cache(maxsize=4096)
def _gpumode_folder(d: Path) -> bool:
    """A GPU MODE problem folder: its reference.py defines ref_kernel and generate_input."""
    from hackscan.inputs.gpumode import is_reference

    ref = d / "reference.py"
    try:
        return ref.is_file() and ref.stat().st_size < 1_000_000 and is_reference(ref.read_text("utf-8", "replace"))
    except OSError:
        return False


def _defines_custom_kernel(f: Path) -> bool:
    from hackscan.inputs.gpumode import defines

    try:
        with f.open("rb") as fh:
            return defines(fh.read(1_000_000).decode("utf-8", "replace"), "custom_kernel")
    except OSError:
        return False


def _inside(f: Path, d: Path) -> bool:
    try:
        f.resolve().relative_to(d.resolve())
        return True
    except ValueError:
        return False


def display_path(p: Path, root: Path | None = None) -> str:
    """Relative to the working directory (or root) where possible, with forward slashes."""
    base = (root or Path.cwd()).resolve()
    try:
        return p.resolve().relative_to(base).as_posix()
    except (ValueError, OSError):
        return p.as_posix()
