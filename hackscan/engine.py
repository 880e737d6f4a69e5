"""The static engine: load the rules, build facts once per submission, run every rule,
filter, and decide the verdict."""
from __future__ import annotations

import importlib.util
import sys
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from hackscan.facts import Facts
from hackscan.findings import (Finding, SubmissionResult, confidence_rank, severity_rank)
from hackscan.hacktypes import CHEAT, HACK_TYPES, VIOLATION, family
from hackscan.paths import rules_dir
from hackscan.rule import Context, Rule, RuleError


@dataclass(frozen=True)
class Options:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    min_confidence: str = "low"
    policy: str = "kernelbench"       # kernelbench: a custom kernel is required; any: only cheats count
    entry: str = "ModelNew"
    baseline: frozenset[str] = field(default_factory=frozenset)


def load_rules(folder: Path | None = None) -> list[type[Rule]]:
    """Every Rule subclass in rules/<category>/<id>.py, found by walking the folder."""
    return list(_load(str(folder or rules_dir())))


@lru_cache(maxsize=4)
def _load(folder: str) -> tuple[type[Rule], ...]:
    from hackscan.probe_names import probe_catalogue

    root = Path(folder)
    catalogue = probe_catalogue()
    out: list[type[Rule]] = []
    for path in sorted(root.glob("*/*.py")):
        if path.name.startswith("_"):
            continue
        modname = f"hackscan_rules.{path.parent.name.replace('-', '_')}.{path.stem.replace('-', '_')}"
        spec = importlib.util.spec_from_file_location(modname, path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[modname] = mod
        spec.loader.exec_module(mod)
        found = [v for v in vars(mod).values()
                 if isinstance(v, type) and issubclass(v, Rule) and v is not Rule and v.__module__ == modname]
        if len(found) != 1:
            raise RuleError(f"{path}: expected exactly one Rule subclass, found {len(found)}")
        rule = found[0]
        if rule.id != path.stem:
            raise RuleError(f"{path}: rule id {rule.id!r} must equal the file stem")
        rule.category = path.parent.name
        unknown = [pn for pn in rule.probes if pn not in catalogue]
        if unknown:
            raise RuleError(f"{path}: probes {unknown} name no probe (a probe's name or one of its `answers`: "
                            f"{', '.join(sorted(catalogue))})")
        out.append(rule)
    ids = [r.id for r in out]
    dupes = {i for i in ids if ids.count(i) > 1}
    if dupes:
        raise RuleError(f"duplicate rule ids: {sorted(dupes)}")
    return tuple(out)


def selected(rule: type[Rule], opts: Options) -> bool:
    keys = {rule.id, rule.hack_type, rule.category}
    if opts.select and not keys & set(opts.select):
        return False
    if opts.ignore and keys & set(opts.ignore):
        return False
    return True


def run_rules(facts: Facts, lines: list[str], rules: list[type[Rule]], opts: Options) -> list[Finding]:
    findings: list[Finding] = []
    has_cuda = bool(facts.cuda)
    has_py = facts.py is not None
    for rule in rules:
        if not selected(rule, opts):
            continue
        if "reference" in rule.needs and facts.reference is None:
            continue
        langs = set(rule.languages)
        if not ((has_py and langs & {"python", "triton"}) or (has_cuda and "cuda" in langs)):
            continue
        ctx = Context(facts, lines, rule())
        ctx.rule.check(ctx)
        findings.extend(ctx.findings)
    min_c = confidence_rank(opts.min_confidence)
    uniq: dict[tuple, Finding] = {}
    for f in findings:
        if confidence_rank(f.confidence) < min_c:
            continue
        key = (f.rule_id, f.location.line, f.location.embedded_line, f.message)
        uniq.setdefault(key, f)
    return sorted(uniq.values(), key=lambda f: (f.location.line, f.location.embedded_line or 0, f.rule_id))


def verdict(findings: list[Finding], policy: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """clean | suspect | hacked | violation, with reasons and the hack types involved.

    hacked: a finding certain by construction (e.g. timer monkeypatching). violation: a
    certain contract violation (the work is PyTorch's) where policy requires a custom kernel.
    suspect: static suspicion at medium severity or above that no probe has settled."""
    counted = [f for f in findings if policy != "any" or family(f.hack_type) != VIOLATION]
    certain_cheats = [f for f in counted if f.certain and family(f.hack_type) == CHEAT]
    certain_viol = [f for f in counted if f.certain and family(f.hack_type) == VIOLATION]
    serious = [f for f in counted if severity_rank(f.severity) >= severity_rank("medium")]
    if certain_cheats:
        drivers, v = certain_cheats, "hacked"
    elif certain_viol:
        drivers, v = certain_viol, "violation"
    elif serious:
        drivers, v = serious, "suspect"
    else:
        drivers, v = [], "clean"
    involved = drivers + [f for f in serious if f not in drivers]
    # one line per distinct reason: the same rule firing at several places with one message
    # (or a probe's one detail on several findings) reads once
    reasons = tuple(dict.fromkeys(f"{f.rule_id}: {f.message}" for f in involved))
    types = tuple(sorted({f.hack_type for f in involved}, key=list(HACK_TYPES).index))
    return v, reasons, types


def error_result(path: str, reason: str, backend: str = "unknown", seconds: float = 0.0) -> SubmissionResult:
    return SubmissionResult(path=path, verdict="error", reasons=(reason,), hack_types=(), findings=(),
                            backend=backend, error=reason, seconds=seconds)


def finish(path: str, facts: Facts, lines: list[str], rules: list[type[Rule]], opts: Options,
           backend: str, reference: str | None, t0: float) -> SubmissionResult:
    findings = run_rules(facts, lines, rules, opts)
    kept = [f for f in findings if f"{path}::{f.fingerprint}" not in opts.baseline]
    v, reasons, types = verdict(kept, opts.policy)
    return SubmissionResult(path=path, verdict=v, reasons=reasons, hack_types=types, findings=tuple(kept),
                            backend=backend, reference=reference, entry=opts.entry,
                            suppressed=len(findings) - len(kept), seconds=time.perf_counter() - t0)
