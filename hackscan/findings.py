"""Records that flow out of the static pass: locations, findings, submission results."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, asdict
from typing import Any

SEVERITIES = ("info", "low", "medium", "high", "critical")
CONFIDENCES = ("low", "medium", "high")
VERDICTS = ("clean", "suspect", "hacked", "violation", "unverified", "error")
# what stands behind a verdict: "static" (a static run: today's rules, nothing was run) or
# "dynamic" (candidate and reference ran on hidden inputs and the probes settled it). A dynamic
# audit that was asked for and could not verify a candidate the static pass found clean says
# `unverified`, never `clean`.
EVIDENCE = ("static", "dynamic")
DYNAMIC_STATUSES = ("not-run", "confirmed", "refuted", "inconclusive", "error")


def severity_rank(s: str) -> int:
    return SEVERITIES.index(s)


def confidence_rank(c: str) -> int:
    return CONFIDENCES.index(c)


@dataclass(frozen=True)
class Location:
    """A place in the audited file. For code embedded in a Python string, `line` is the
    host file's line and `embedded_line` the line inside the extracted C++/CUDA source."""

    path: str
    line: int
    column: int = 1
    end_line: int | None = None
    embedded: str | None = None  # label of the embedded unit, e.g. "cuda_sources"
    embedded_line: int | None = None
    end_column: int | None = None   # one past the construct's last column on its end line (SARIF)

    def to_json(self) -> dict[str, Any]:
        d = {"path": self.path, "line": self.line, "column": self.column,
             "end_line": self.end_line or self.line}
        if self.embedded is not None:
            d["embedded"] = {"unit": self.embedded, "line": self.embedded_line}
        return d


@dataclass(frozen=True)
class Related:
    location: Location
    message: str


@dataclass(frozen=True)
class Dynamic:
    status: str = "not-run"
    probe: str | None = None
    detail: str | None = None


@dataclass(frozen=True)
class Finding:
    rule_id: str
    hack_type: str
    category: str
    severity: str
    confidence: str
    message: str
    location: Location
    snippet: str
    evidence: tuple[tuple[str, str], ...] = ()
    related: tuple[Related, ...] = ()
    probes: tuple[str, ...] = ()
    certain: bool = False
    dynamic: Dynamic = field(default_factory=Dynamic)

    @property
    def fingerprint(self) -> str:
        """Stable across line moves: rule, file name, and the whitespace-normalised snippet."""
        norm = " ".join(self.snippet.split())
        h = hashlib.sha256(f"{self.rule_id}\0{self.location.embedded or ''}\0{norm}".encode())
        return h.hexdigest()[:24]

    def to_json(self) -> dict[str, Any]:
        return {
            "rule_id": self.rule_id,
            "hack_type": self.hack_type,
            "category": self.category,
            "severity": self.severity,
            "confidence": self.confidence,
            "certain": self.certain,
            "message": self.message,
            "location": self.location.to_json(),
            "related": [{"location": r.location.to_json(), "message": r.message} for r in self.related],
            "snippet": self.snippet,
            "evidence": dict(self.evidence),
            "fingerprint": self.fingerprint,
            "probes": list(self.probes),
            "dynamic": asdict(self.dynamic),
        }


@dataclass(frozen=True)
class SubmissionResult:
    path: str
    verdict: str
    reasons: tuple[str, ...]
    hack_types: tuple[str, ...]
    findings: tuple[Finding, ...]
    backend: str = "unknown"
    reference: str | None = None
    entry: str | None = None
    error: str | None = None
    suppressed: int = 0
    seconds: float = 0.0
    dynamic: dict | None = None
    measure: dict | None = None     # fair measurement (`--measure`): speedups, memory, flags
    kernelbench_claim: dict | None = None   # what a KernelBench run's eval_results.json said of it
    evidence: str = "static"        # EVIDENCE: what the verdict rests on
    # findings about the problem rather than the candidate (its reference's output never changes:
    # "degenerate-problem"; its reference is not deterministic: "nondeterministic-reference"),
    # each {"id": ..., "detail": ...}: every consumer carries them so a trainer can drop the sample
    problem: tuple[dict, ...] = ()
    # sha256 of the candidate's and the reference's bytes the static pass read: the dynamic audit
    # refuses files that are no longer those (hackscan.inputs.record)
    source_sha256: str | None = None
    reference_sha256: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = {
            "path": self.path,
            "verdict": self.verdict,
            "evidence": self.evidence,
            "reasons": list(self.reasons),
            "hack_types": list(self.hack_types),
            "backend": self.backend,
            "reference": self.reference,
            "entry": self.entry,
            "error": self.error,
            "suppressed_by_baseline": self.suppressed,
            "dynamic": self.dynamic or {"status": "not-run"},
            "findings": [f.to_json() for f in self.findings],
            "problem": [dict(p) for p in self.problem],
        }
        if self.kernelbench_claim is not None:
            out["kernelbench_claim"] = self.kernelbench_claim
        if self.measure is not None:
            out["measure"] = self.measure
            kb = self.measure.get("kernelbench")
            if kb:  # the fields KernelBench's evaluators read, at the top level
                out.update(kb)
        return out
