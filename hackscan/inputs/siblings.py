"""The files that travel with a candidate or a reference into its worker's folder: C++/CUDA
sources beside the candidate (which `load(sources=...)` may compile) and the helper modules an
adapted GPU MODE pair imports (listed beside it by hackscan.inputs.gpumode)."""
from __future__ import annotations

import stat
from pathlib import Path

HELPERS_LIST = "_hackscan_helpers.txt"     # names of helper modules copied beside an adapted source


def helper_files(path: Path) -> list[Path]:
    """Helper modules listed beside an adapted source (empty for everything else)."""
    lst = path.parent / HELPERS_LIST
    if not lst.is_file():
        return []
    return [path.parent / n for n in lst.read_text().split() if (path.parent / n).is_file()]


def sibling_sources(cand_path: Path) -> list[Path]:
    """C++/CUDA files next to a candidate, which `load(sources=...)` may compile, and the helper
    modules an adapted GPU MODE submission imports (hackscan.inputs.gpumode)."""
    def regular(p: Path) -> bool:
        # the folder is the submitter's: links (dangling, or to /dev/zero) and named pipes are
        # neither read nor copied, so they can neither hang nor flood the auditor
        try:
            st = p.lstat()
        except OSError:
            return False
        return stat.S_ISREG(st.st_mode) and st.st_size < 2_000_000

    return sorted(p for p in cand_path.parent.iterdir()
                  if p.suffix in (".cu", ".cuh", ".cpp", ".h", ".hpp") and regular(p)) + \
        [h for h in helper_files(cand_path) if regular(h)]


def reference_files(ref_path: Path) -> dict[str, Path]:
    """What a reference worker's folder gets: the reference, and an adapted GPU MODE problem's
    helper modules."""
    return {"reference_module.py": ref_path, **{h.name: h for h in helper_files(ref_path)}}
