"""The names rules may give in their `probes`, read from the probe modules' source under
hackscan/dynamic/probes/ without importing them (no torch): the static pass checks every rule
against them when rules load. The probes themselves are hackscan.dynamic.probe's."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

PROBES_DIR = Path(__file__).parent / "dynamic" / "probes"


# a rule's `probes` entry meaning every probe applies (run under --dynamic all)
ALL_PROBES = "all-probes"


@lru_cache(maxsize=1)
def probe_catalogue() -> dict[str, tuple[str, ...]]:
    """Every name a rule may give in its `probes` -> the probes that answer it: each probe's own
    name and its `answers`, read from the probe modules' source (no import, so no torch: the
    static pass checks rules against it). `all-probes` answers to none here; the audit reads it as
    every probe it ran."""
    import ast

    out: dict[str, list[str]] = {ALL_PROBES: []}
    for path in sorted(PROBES_DIR.glob("*.py")):
        if path.name.startswith("_"):
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            attrs = {t.id: v.value for v in node.body if isinstance(v, ast.Assign)
                     for t in v.targets if isinstance(t, ast.Name)}
            attrs.update({v.target.id: v.value for v in node.body
                          if isinstance(v, ast.AnnAssign) and isinstance(v.target, ast.Name) and v.value is not None})
            if "name" not in attrs:
                continue
            name = ast.literal_eval(attrs["name"])
            out.setdefault(name, []).append(name)
            for alias in ast.literal_eval(attrs["answers"]) if "answers" in attrs else ():
                out.setdefault(alias, []).append(name)
    return {k: tuple(dict.fromkeys(v)) for k, v in out.items()}
