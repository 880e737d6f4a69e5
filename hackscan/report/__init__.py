"""Renderers: one module per output format, each a pure function of the results."""
from __future__ import annotations

from collections import Counter

from hackscan.findings import SubmissionResult, VERDICTS


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
        "findings": sum(len(r.findings) for r in results),
        "verdicts_by_hack_type": dict(sorted(by_type.items())),
        "findings_by_hack_type": dict(sorted(findings_by_type.items())),
        "findings_by_rule": dict(sorted(by_rule.items())),
    }


FORMATS = ("text", "json", "jsonl", "sarif", "html")


def render(fmt: str, results: list[SubmissionResult], *, policy: str = "kernelbench", dynamic: str = "off",
           config: str | None = None, rules=(), color: bool = False, show_clean: bool = True, root=None) -> str:
    """The whole report in one format: a pure function of the results and the run's settings
    (each format's module renders; `hackscan audit` streams jsonl line by line instead)."""
    if fmt == "text":
        from hackscan.report import text

        return text.render(results, color=color, show_clean=show_clean, root=root, dynamic=dynamic)
    if fmt == "json":
        from hackscan.report import jsonout

        return jsonout.render(results, policy=policy, dynamic=dynamic, config=config)
    if fmt == "jsonl":
        from hackscan.report import jsonout

        return "".join(jsonout.render_line(r) for r in results)
    if fmt == "html":
        from hackscan.report import html

        return html.render(results, policy=policy, dynamic=dynamic)
    if fmt == "sarif":
        from hackscan.report import sarif

        return sarif.render(results, list(rules))
    raise ValueError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
