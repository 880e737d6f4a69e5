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

# The one table of `hackscan audit`'s settings: every option of the command is either a key here
# (the same name, settable in hackscan.toml or [tool.hackscan]; the command line wins) or in
# CLI_ONLY with the reason it is not (tests/test_cli.py holds the two to the parser).
KEYS = {"select": list, "ignore": list, "min-confidence": str, "fail-on": str, "policy": str,
        "format": str, "baseline": str, "jobs": int, "entry": str, "max-bytes": int, "dynamic": str, "device": str,
        "timeout": float, "cuda-ghost": str, "measure": str, "measure-budget": float, "measure-compile": bool,
        "backend": str, "ray-address": str, "task-timeout": float, "dynamic-jobs": int, "prestart": int, "profile": str,
        "problems": str, "kernels-only": bool, "quiet": bool, "color": str, "no-progress": bool}
# the keys whose values are words from a fixed list (the command line's choices are these)
CHOICES = {"format": ("text", "json", "jsonl", "sarif", "html"), "min-confidence": ("low", "medium", "high"),
           "fail-on": ("info", "low", "medium", "high", "critical"), "policy": ("kernelbench", "any"),
           "dynamic": ("off", "auto", "all"), "device": ("cpu", "cuda"), "cuda-ghost": ("suspects", "always", "never"),
           "measure": ("off", "survivors", "all"), "profile": ("default", "strict", "generic", "sol-execbench"),
           "backend": ("local", "ray"), "color": ("auto", "always", "never")}


def check_choice(key: str, value, name: str | None = None) -> None:
    """The Python API's check of a word-valued option against the table the command line uses:
    ValueError naming the option and its valid values where `value` is not one of CHOICES[key].
    `name` is how the caller spells the option (default: the key with `_` for `-`)."""
    words = CHOICES[key]
    if not isinstance(value, str) or value not in words:
        raise ValueError(f"{name or key.replace('-', '_')}={value!r}: not a valid value "
                         f"(one of {', '.join(map(repr, words))})")


# paths in the configuration are read relative to the file that holds them
PATH_KEYS = ("baseline", "problems")
CLI_ONLY = {
    "api-mode": "a mode of one invocation (one candidate on stdin)",
    "config": "names the configuration file itself",
    "output": "where one run's report goes",
    "reference": "the reference of one run's candidates",
    "write-baseline": "one run's output file",
    "sidecars": "pairs candidates through files in the audited tree: a trust decision made on the command line",
}


# every key's value where neither the configuration nor the command line gives one (None: the
# command decides at run time: the device found, the policy of the profile, all cores)
DEFAULTS = {"select": [], "ignore": [], "min-confidence": "low", "fail-on": "medium", "policy": None,
            "format": "text", "baseline": None, "jobs": 1, "entry": "ModelNew", "max-bytes": 1_000_000,
            "dynamic": "auto", "device": None, "timeout": 180.0, "cuda-ghost": "suspects", "measure": "off",
            "measure-budget": 10.0, "measure-compile": False, "backend": "local", "ray-address": None,
            "task-timeout": 3600.0, "dynamic-jobs": None, "prestart": None, "profile": None, "problems": None,
            "kernels-only": False, "quiet": False, "color": "auto", "no-progress": False}


class ConfigError(ValueError):
    pass


class Settings:
    """The one record of `hackscan audit`'s settings: each key of KEYS from the command line where
    given there, else from the configuration file, else DEFAULTS; `source(key)` says which. Read a
    key as an attribute with `_` for `-` (`settings.fail_on`)."""

    def __init__(self, values: dict, sources: dict):
        self._values, self._sources = values, sources

    def __getattr__(self, name: str):
        key = name.replace("_", "-")
        try:
            return self._values[key]
        except KeyError:
            raise AttributeError(name) from None

    def source(self, key: str) -> str:
        return self._sources[key]


def resolve(cfg: dict, flags: dict) -> Settings:
    """The settings of one run from the configuration (`load_config`'s dict) and the command
    line's options (`vars(args)`: None, False or an empty list where an option was not given;
    comma-separated lists split). Word-valued keys are checked against CHOICES whichever source
    gave them; raises ConfigError with the key named."""
    values, sources = dict(DEFAULTS), dict.fromkeys(DEFAULTS, "default")
    for k, v in cfg.items():
        values[k], sources[k] = v, "config"
    for k in KEYS:
        v = flags.get(k.replace("-", "_"))
        if v is None or v is False or v == [] or v == "":
            continue
        if KEYS[k] is list:
            v = [p.strip() for part in (v if isinstance(v, (list, tuple)) else [v]) for p in str(part).split(",")
                 if p.strip()]
        values[k], sources[k] = v, "command line"
    for k, words in CHOICES.items():
        if values[k] is not None and values[k] not in words:
            raise ConfigError(f"unknown {k} {values[k]!r} (from the {sources[k]}; one of {', '.join(words)})")
    if values["prestart"] is not None and values["prestart"] < 0:
        raise ConfigError(f"prestart must be 0 or more, not {values['prestart']!r} (from the {sources['prestart']})")
    return Settings(values, sources)


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
        if k in CHOICES and v not in CHOICES[k]:
            raise ConfigError(f"{path}: {k} must be one of {', '.join(CHOICES[k])}, not {v!r}")
        out[k] = v
    for k in PATH_KEYS:
        if k in out:
            out[k] = str((path.parent / out[k]).resolve())
    return out
