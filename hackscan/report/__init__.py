"""Renderers: one module per output format, each a pure function of the results."""
from __future__ import annotations

from collections import Counter

from hackscan.findings import EVIDENCE, SubmissionResult, VERDICTS


def summary(results: list[SubmissionResult]) -> dict:
    verdicts = Counter(r.verdict for r in results)
    by_type: Counter = Counter()
    findings_by_type: Counter = Counter()
    by_rule: Counter = Counter()
    for r in results:
        for t in r.hack_types:
            by_type[t] += 1
        for f in r.findings:
            findings_by_type[f.hack_type] += 1
            by_rule[f.rule_id] += 1
    return {
        "submissions": len(results),
        "verdicts": {v: verdicts.get(v, 0) for v in VERDICTS},
        # what the verdicts rest on: a dynamic run that settled them, or the static pass alone
        "evidence": {e: sum(1 for r in results if r.evidence == e) for e in EVIDENCE},
        "problems": dict(sorted(Counter(p["id"] for r in results for p in r.problem).items())),
        "findings": sum(len(r.findings) for r in results),
        "verdicts_by_hack_type": dict(sorted(by_type.items())),
        "findings_by_hack_type": dict(sorted(findings_by_type.items())),
        "findings_by_rule": dict(sorted(by_rule.items())),
    }
