"""hackscan's build cache: extension builds and Triton caches keyed by a candidate's sources,
the torch and CUDA versions and the device, one folder each under `$HACKSCAN_CACHE` (default
~/.cache/hackscan)."""
from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import torch

from hackscan.inputs.siblings import sibling_sources

STALE_LOCK_S = 900


def cache_root() -> Path:
    root = Path(os.environ.get("HACKSCAN_CACHE") or Path.home() / ".cache" / "hackscan")
    root.mkdir(parents=True, exist_ok=True)
    return root


def build_dir(cand_path: Path, device: str, salt: bytes = b"") -> Path:
    """Extension builds are keyed by the candidate's sources (the file and any C++/CUDA next to
    it), the torch and CUDA versions and the device: generated kernels reuse names such as
    `elementwise_add`, so the name alone never selects a build. A lock left by a killed build
    is removed once it is older than any build may take."""
    h = hashlib.sha256()
    h.update(cand_path.read_bytes())
    for sib in sibling_sources(cand_path):
        h.update(sib.name.encode() + sib.read_bytes())
    h.update(f"{torch.__version__}|{torch.version.cuda}|{device}".encode())
    h.update(salt)  # a rewritten variant (ghost replay) builds apart from the original
    d = cache_root() / "builds" / h.hexdigest()[:20]
    d.mkdir(parents=True, exist_ok=True)
    now = time.time()
    for lock in d.glob("*/lock"):
        try:
            if now - lock.stat().st_mtime > STALE_LOCK_S:
                lock.unlink()
        except OSError:
            pass
    return d


def triton_cache(bdir: Path) -> Path:
    """Triton's cache for one candidate, inside its build folder (keyed by its sources): what
    one candidate leaves in a cache no other candidate reads or writes."""
    t = bdir / "triton"
    t.mkdir(exist_ok=True)
    return t


def builds_extension(path: Path) -> bool:
    """Whether importing the candidate builds a torch extension (inline, or from C++/CUDA files
    beside it); an unreadable file counts as one (its build then says what is wrong)."""
    from hackscan.inputs.siblings import sibling_sources

    try:
        text = path.read_text(errors="replace")
    except OSError:
        return True
    return "cpp_extension" in text or any(p.suffix in (".cu", ".cuh", ".cpp") for p in sibling_sources(path))
