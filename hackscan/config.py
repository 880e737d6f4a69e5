"""Auditor configuration: `[tool.hackscan]` in pyproject.toml or a hackscan.toml, found
from the working directory upward. Only the auditor's configuration can suppress findings;
comments in audited files never do."""
from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

KEYS = {"select": list, "ignore": list, "min-confidence": str, "fail-on": str, "policy": str,
        "format": str, "baseline": str, "jobs": int, "entry": str, "max-bytes": int, "dynamic": str, "device": str, "timeout": float,
        "cuda-ghost": str, "measure": str, "measure-budget": float, "measure-compile": bool,
        "backend": str, "ray-address": str, "task-timeout": float, "dynamic-jobs": int}


class ConfigError(ValueError):
    pass


def find_config(start: Path) -> Path | None:
    for d in [start, *start.parents]:
        h = d / "hackscan.toml"
        if h.is_file():
            return h
        p = d / "pyproject.toml"
        if p.is_file():
            try:
                if "hackscan" in tomllib.loads(p.read_text("utf-8")).get("tool", {}):
                    return p
            except (ValueError, OSError):
                pass
    return None


def load_config(path: Path | None) -> dict:
    if path is None:
        return {}
    try:
        data = tomllib.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as e:
        raise ConfigError(f"{path}: {e}") from None
    section = data.get("tool", {}).get("hackscan", {}) if path.name == "pyproject.toml" else data.get("tool", {}).get("hackscan", data)
    out = {}
    for k, v in section.items():
        if k not in KEYS:
            raise ConfigError(f"{path}: unknown key {k!r} (known: {', '.join(sorted(KEYS))})")
        if KEYS[k] is float and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)   # `timeout = 300` in TOML is an integer
        if not isinstance(v, KEYS[k]):
            raise ConfigError(f"{path}: {k} must be a {KEYS[k].__name__}")
        out[k] = v
    if "baseline" in out:
        out["baseline"] = str((path.parent / out["baseline"]).resolve())
    return out
