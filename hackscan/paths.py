"""Where the bundled rules and demo corpus live: the source checkout's top-level folders
when running from a checkout, the package data when installed."""
from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent


def _pick(top: str, package: str) -> Path:
    src = _HERE.parent / top
    if (_HERE.parent / "setup.cfg").is_file() and (src / "README.md").is_file():
        return src
    pkg = _HERE.parent / "hackscan" / package
    if pkg.is_dir():
        return pkg
    import importlib.util

    spec = importlib.util.find_spec(f"hackscan.{package}")
    if spec is not None and spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0])
    return src


def rules_dir() -> Path:
    return _pick("rules", "builtin_rules")


def corpus_dir() -> Path:
    return _pick("corpus", "demo_corpus")
