"""SARIF 2.1.0 for GitHub code scanning: stable rule ids, relative URIs, regions, partial
fingerprints, rule metadata with help text from the rule docstrings."""
from __future__ import annotations

import json
from pathlib import Path

from hackscan._version import __version__
from hackscan.findings import SubmissionResult
from hackscan.rule import Rule

LEVEL = {"critical": "error", "high": "error", "medium": "warning", "low": "note", "info": "note"}
SECURITY_SEVERITY = {"critical": "9.5", "high": "8.0", "medium": "5.5", "low": "3.0", "info": "1.0"}


def _rule(r: type[Rule]) -> dict:
    d = r.docs()
    md = "\n\n".join(f"**{k}**\n\n{v}" for k, v in d.items())
    return {
        "id": r.id,
        "name": "".join(p.capitalize() for p in r.id.split("-")),
        "shortDescription": {"text": r.summary},
        "fullDescription": {"text": d.get("What it flags", r.summary).replace("\n", " ")},
        # the rule's whole documentation inline: a relative helpUri is not a URI a viewer can open
        "help": {"text": md, "markdown": md},
        "defaultConfiguration": {"level": LEVEL[r.severity]},
        "properties": {"tags": ["security", r.category, r.hack_type], "hack_type": r.hack_type,
                       "category": r.category, "precision": {"low": "low", "medium": "medium",
                                                             "high": "high"}[r.confidence],
                       "security-severity": SECURITY_SEVERITY[r.severity]},
    }


def _artifact(path: str) -> dict:
    """A path under the working directory relative to %SRCROOT%; any other as an absolute file URI
    (a relative URI under %SRCROOT% would point at the wrong file)."""
    p = Path(path)
    try:
        rel = p.resolve().relative_to(Path.cwd().resolve()) if p.is_absolute() or p.exists() else None
    except (ValueError, OSError):
        rel = None
    if rel is not None:
        return {"uri": rel.as_posix(), "uriBaseId": "%SRCROOT%"}
    if p.is_absolute():
        return {"uri": p.as_uri()}
    return {"uri": p.as_posix(), "uriBaseId": "%SRCROOT%"}


def _loc(loc) -> dict:
    region = {"startLine": loc.line, "startColumn": loc.column}
    if loc.end_line:
        region["endLine"] = max(loc.end_line, loc.line)
    if loc.end_column and loc.embedded is None and (region.get("endLine", loc.line) > loc.line
                                                     or loc.end_column > loc.column):
        region["endColumn"] = loc.end_column
    return {"physicalLocation": {"artifactLocation": _artifact(loc.path), "region": region}}


def document(results: list[SubmissionResult], rules: list[type[Rule]]) -> dict:
    index = {r.id: i for i, r in enumerate(rules)}
    out_results = []
    notes = []
    for s in results:
        if s.verdict == "error":
            notes.append({"level": "error", "message": {"text": f"{s.path}: {s.error}"},
                          "locations": [{"physicalLocation": {"artifactLocation": _artifact(s.path)}}]})
        elif s.verdict == "unverified":
            # no finding to show, and nothing verified: a code-scanning view must not read it as clean
            notes.append({"level": "warning", "message": {"text": f"{s.path}: {'; '.join(s.reasons)[:1000]}"},
                          "locations": [{"physicalLocation": {"artifactLocation": _artifact(s.path)}}]})
        for p in s.problem:
            notes.append({"level": "note", "message": {"text": f"{s.path}: problem {p['id']}: {p['detail']}"},
                          "locations": [{"physicalLocation": {"artifactLocation": _artifact(s.path)}}]})
        for f in s.findings:
            msg = f.message
            if f.location.embedded is not None:
                msg += f" (in {f.location.embedded}, line {f.location.embedded_line})"
            res = {
                "ruleId": f.rule_id,
                "level": LEVEL[f.severity],
                "message": {"text": msg},
                "locations": [_loc(f.location)],
                # stable across line moves (rule, file, normalised snippet); GitHub reads the second
                "partialFingerprints": {"hackscanFingerprint/v1": f.fingerprint,
                                        "primaryLocationLineHash": f"{f.fingerprint[:16]}:1"},
                "properties": {"hack_type": f.hack_type, "confidence": f.confidence, "severity": f.severity,
                               "verdict": s.verdict, "evidence": s.evidence, "dynamic": f.dynamic.status},
            }
            if f.rule_id in index:
                res["ruleIndex"] = index[f.rule_id]
            if f.related:
                res["relatedLocations"] = [dict(_loc(r.location), id=i, message={"text": r.message})
                                           for i, r in enumerate(f.related)]
            out_results.append(res)
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "hackscan", "version": __version__, "semanticVersion": __version__,
                                "rules": [_rule(r) for r in rules]}},
            # an absolute URI ending in a slash, as SARIF 2.1.0 (3.14.14) asks
            "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().resolve().as_uri() + "/"}},
            "invocations": [{"executionSuccessful": True, "toolExecutionNotifications": notes}],
            "results": out_results,
            # every submission's verdict and what it rests on, findings or not (a clean or
            # unverified submission has no result of its own)
            "properties": {"hackscan": {"submissions": [
                {"path": s.path, "verdict": s.verdict, "evidence": s.evidence,
                 "problem": [p["id"] for p in s.problem]} for s in results]}},
        }],
    }


def render(results: list[SubmissionResult], rules: list[type[Rule]]) -> str:
    return json.dumps(document(results, rules), indent=2) + "\n"
