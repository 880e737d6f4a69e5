"""The rule base class. A rule is one module under rules/<category>/<rule-id>.py holding one
subclass of `Rule`; its metadata lives on the class and is validated when the class is
defined; its docstring is its user documentation, with fixed sections."""
from __future__ import annotations

import re
import textwrap
from typing import ClassVar

import tree_sitter as ts

from hackscan.facts import CudaUnit, Facts
from hackscan.findings import CONFIDENCES, SEVERITIES, Finding, Location, Related
from hackscan.hacktypes import HACK_TYPES
from hackscan.parse.trees import text

DOC_SECTIONS = ("What it flags", "Why it is a hack", "Example", "Legitimate look-alike",
                "Dynamic confirmation", "Known gaps")
FACT_NAMES = ("python", "flow", "cuda", "cflow", "triton", "reference", "graph", "comments")
LANGUAGES = ("python", "cuda", "triton")
ID_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


class RuleError(TypeError):
    pass


def doc_sections(doc: str) -> dict[str, str]:
    """Split a rule docstring into its sections (a line holding only the title opens one)."""
    out: dict[str, list[str]] = {}
    current = None
    lines = (doc or "").splitlines()
    indent = min((len(l) - len(l.lstrip()) for l in lines[1:] if l.strip()), default=0)
    for raw in lines:
        line = raw[indent:] if raw[:indent].strip() == "" else raw.strip()
        if line.strip() in DOC_SECTIONS:
            current = line.strip()
            out[current] = []
        elif current is not None:
            out[current].append(line)
    return {k: textwrap.dedent("\n".join(v)).strip() for k, v in out.items()}


class Rule:
    id: ClassVar[str]
    hack_type: ClassVar[str]
    severity: ClassVar[str]
    confidence: ClassVar[str]
    summary: ClassVar[str]
    languages: ClassVar[tuple[str, ...]] = ("python",)
    needs: ClassVar[tuple[str, ...]] = ("python",)
    probes: ClassVar[tuple[str, ...]] = ()
    certain: ClassVar[bool] = False
    category: ClassVar[str] = ""
    # the device on which the construct this rule flags has any effect ("cuda": TF32, tensor-core
    # math modes), None for every device; kept in each finding's evidence as `effect_on`, so that
    # a run on another device leaves the finding standing rather than refuting it
    effect_on: ClassVar[str | None] = None

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        problems = []
        for attr in ("id", "hack_type", "severity", "confidence", "summary"):
            if not isinstance(getattr(cls, attr, None), str):
                problems.append(f"missing {attr}")
        if not problems:
            if not ID_RE.match(cls.id):
                problems.append(f"id {cls.id!r} is not kebab-case")
            if cls.hack_type not in HACK_TYPES:
                problems.append(f"hack_type {cls.hack_type!r} is not one of hacks.md's ids")
            if cls.severity not in SEVERITIES:
                problems.append(f"severity {cls.severity!r} not in {SEVERITIES}")
            if cls.confidence not in CONFIDENCES:
                problems.append(f"confidence {cls.confidence!r} not in {CONFIDENCES}")
        for n in cls.needs:
            if n not in FACT_NAMES:
                problems.append(f"unknown fact {n!r}")
        for lang in cls.languages:
            if lang not in LANGUAGES:
                problems.append(f"unknown language {lang!r}")
        secs = doc_sections(cls.__doc__ or "")
        for s in DOC_SECTIONS:
            if not secs.get(s):
                problems.append(f"docstring section {s!r} missing or empty")
        if problems:
            raise RuleError(f"rule {getattr(cls, 'id', cls.__name__)}: " + "; ".join(problems))

    def check(self, ctx: "Context") -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def docs(cls) -> dict[str, str]:
        return doc_sections(cls.__doc__ or "")


class Context:
    """What a rule sees: the shared facts, and `report` to emit a finding."""

    def __init__(self, facts: Facts, lines: list[str], rule: Rule):
        self.facts = facts
        self.lines = lines
        self.rule = rule
        self.findings: list[Finding] = []

    @property
    def py(self):
        return self.facts.py

    @property
    def reference(self):
        return self.facts.reference

    def report(self, node: ts.Node, message: str, *, unit: CudaUnit | None = None,
               severity: str | None = None, confidence: str | None = None,
               evidence: dict[str, str] | None = None, related: list[tuple[ts.Node, str, CudaUnit | None]] | None = None,
               certain: bool | None = None, probes: tuple[str, ...] | None = None) -> None:
        """`probes`: where this finding's probes differ from the rule's (none, for a suspicion
        that no run in hackscan's worker can settle)."""
        r = self.rule
        self.findings.append(Finding(
            rule_id=r.id, hack_type=r.hack_type, category=r.category,
            severity=severity or r.severity, confidence=confidence or r.confidence,
            message=message, location=self.locate(node, unit), snippet=self.snippet(node, unit),
            evidence=tuple(sorted({**({"effect_on": r.effect_on} if r.effect_on else {}), **(evidence or {})}.items())),
            related=tuple(Related(self.locate(n, u), m) for n, m, u in (related or [])),
            probes=tuple(r.probes if probes is None else probes), certain=r.certain if certain is None else certain))

    def locate(self, node: ts.Node, unit: CudaUnit | None = None) -> Location:
        if unit is not None and unit.facts.embedded:
            u = unit.facts
            return Location(self.facts.path, u.host_line(node), node.start_point[1] + 1,
                            None, u.label, node.start_point[0] + 1)
        if unit is not None:
            return Location(unit.facts.host_path if unit.facts.host_path else self.facts.path,
                            node.start_point[0] + 1, node.start_point[1] + 1, node.end_point[0] + 1,
                            end_column=node.end_point[1] + 1)
        return Location(self.facts.path, node.start_point[0] + 1, node.start_point[1] + 1, node.end_point[0] + 1,
                        end_column=node.end_point[1] + 1)

    def snippet(self, node: ts.Node, unit: CudaUnit | None = None) -> str:
        if unit is not None:
            src_lines = unit.facts.source.splitlines()
            r = node.start_point[0]
            return src_lines[r].strip()[:200] if r < len(src_lines) else text(node)[:200]
        r = node.start_point[0]
        return self.lines[r].strip()[:200] if r < len(self.lines) else text(node)[:200]
