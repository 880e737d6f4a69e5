"""The pip command that installs an optional part of hackscan (an extra), for the copy that is
running: from the checkout or archive it was installed from (pip's record of it, PEP 610), from
the source tree it runs from, or by the distribution's name. The distribution is `hackscan-gpu`
(`hackscan` on PyPI is an unrelated project), not yet on an index: a hint that names it alone
would not install, so it is the last resort."""
from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote, urlparse

DIST = "hackscan-gpu"
CPU_TORCH = "pip install torch --index-url https://download.pytorch.org/whl/cpu"


def source() -> str:
    """What pip takes to install this copy again: a folder or archive path, `hackscan-gpu @ URL`,
    or the distribution's name."""
    try:
        from importlib.metadata import PackageNotFoundError, distribution

        try:
            raw = distribution(DIST).read_text("direct_url.json")
        except PackageNotFoundError:
            raw = None
    except ImportError:
        raw = None
    if raw:
        try:
            info = json.loads(raw)
        except ValueError:
            info = {}
        url = str(info.get("url", ""))
        if url.startswith("file://"):
            return unquote(urlparse(url).path)
        if url:
            vcs = info.get("vcs_info", {}).get("vcs")
            return f"{DIST} @ {vcs + '+' if vcs else ''}{url}"
    tree = Path(__file__).resolve().parents[1]
    if (tree / "setup.cfg").is_file() and (tree / "hackscan").is_dir():
        return str(tree)   # run from a source tree that pip did not install
    return DIST


def hint(extra: str) -> str:
    """`pip install ...` for `extra` (dynamic, ray, parquet), as this copy was installed."""
    src = source()
    if src == DIST:
        cmd = f"pip install '{DIST}[{extra}]'"
    elif src.startswith(DIST + " @ "):
        cmd = f"pip install '{DIST}[{extra}] @ {src.split(' @ ', 1)[1]}'"
    else:
        cmd = f"pip install '{src}[{extra}]'"
    if extra == "dynamic":
        cmd += f" (without a GPU, first `{CPU_TORCH}`: the default torch is a multi-GB CUDA build)"
    return cmd
