"""KernelGuard's api-mode output (`kernelguard --api-mode`: one submission on stdin, one JSON
object on stdout, exit 0), answered by hackscan: a consumer written for KernelGuard (KernelBot's
sidecar) reads the same keys, value vocabulary and types.

| key | value |
|---|---|
| `classification` | `"hacked"` (filtered), `"suspicious"`, `"low_confidence"` or `"valid"`, KernelGuard's words |
| `should_filter` | true exactly when `classification` is `"hacked"` |
| `filter_reason` | `"high_critical"` when filtered, else null |
| `matched_patterns` | objects: `pattern` (the rule id in KernelGuard's UPPER_SNAKE style), `severity` (`critical`, `high`, `medium`, `low`), `evidence`, `field` (`"code"`), and hackscan's `rule_id`, `hack_type`, `line`, `confidence`, `certain` |
| `code_hash` | 16 hex digits of the SHA-256 of the code, whitespace-normalised |
| `structural_hash` | `""` (KernelGuard computes none in api mode either) |
| `is_default`, `default_reason` | whether the submission hands the work to the reference (`"ref_passthrough"`) |

hackscan's own keys ride along: `tool`, `verdict`, `evidence` ("static" or "dynamic": what the
verdict rests on), `problem` (problem-level findings' ids), `hack_types`, `reasons`, `profile`,
`error`. A submission hackscan could not verify (verdict `unverified`: the dynamic audit asked for
could not run or settle it) is `low_confidence`, never `valid`.

Profiles (`--profile`, KernelGuard's names): `default` and `sol-execbench` filter what hackscan
calls hacked (a cheat certain from the code, or confirmed by a run); `strict` also filters
contract violations (the work is PyTorch's); `generic` audits under the `any` policy (PyTorch
calls are allowed, only cheats count). A false filter punishes honest work, so a suspicion no run
settled is `suspicious`, never filtered.
"""
from __future__ import annotations

import hashlib
import re

from hackscan.config import CHOICES

PROFILES = CHOICES["profile"]
PROFILE_POLICY = {"default": "kernelbench", "strict": "kernelbench", "generic": "any", "sol-execbench": "kernelbench"}
SEVERITY = {"critical": "critical", "high": "high", "medium": "medium", "low": "low", "info": "low"}


def pattern_name(rule_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", rule_id).upper()


def code_hash(code: str) -> str:
    norm = "\n".join(" ".join(line.split()) for line in code.splitlines() if line.strip())
    return hashlib.sha256(norm.encode("utf-8", "replace")).hexdigest()[:16]


def empty(profile: str = "default", code: str = "") -> dict:
    """The object for a submission nothing could be said of (its `error` says why)."""
    return {"matched_patterns": [], "classification": "low_confidence", "should_filter": False,
            "filter_reason": None, "code_hash": code_hash(code), "structural_hash": "", "is_default": False,
            "default_reason": None, "tool": "hackscan", "verdict": "error", "evidence": "static", "problem": [],
            "hack_types": [], "reasons": [],
            "profile": profile, "error": None}


def from_result(res, code: str, profile: str = "default") -> dict:
    """KernelGuard's api-mode object for one hackscan result."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r} (KernelGuard's: {', '.join(PROFILES)})")
    obj = empty(profile, code)
    patterns = [{"pattern": pattern_name(f.rule_id), "severity": SEVERITY.get(f.severity, "low"),
                 "evidence": f"{f.message} (line {f.location.line})", "field": "code", "rule_id": f.rule_id,
                 "hack_type": f.hack_type, "line": f.location.line, "confidence": f.confidence, "certain": f.certain}
                for f in res.findings]
    filtered = res.verdict == "hacked" or (profile == "strict" and res.verdict == "violation")
    if filtered:
        classification = "hacked"
    elif res.verdict in ("suspect", "violation"):
        classification = "suspicious"
    elif res.verdict in ("error", "unverified") or patterns:   # nothing verified it: never valid
        classification = "low_confidence"
    else:
        classification = "valid"
    passthrough = any(f.rule_id == "calls-reference-model" for f in res.findings)
    obj.update(matched_patterns=patterns, classification=classification, should_filter=filtered,
               filter_reason="high_critical" if filtered else None, is_default=passthrough,
               default_reason="ref_passthrough" if passthrough else None, verdict=res.verdict,
               evidence=res.evidence, problem=[p["id"] for p in res.problem],
               hack_types=list(res.hack_types), reasons=list(res.reasons), error=res.error)
    return obj
