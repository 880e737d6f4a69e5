"""The annotated corpus: parse `hackscan: expect[rule]` / `ok[rule]` / `todo-expect[rule]` /
`todo-ok[rule]` markers and the sidecar of each pair, and score the rules against them.

A marker applies to its own line when it ends a line of code, else to the next line of
code (comments and blank lines skipped). `//` markers inside embedded C++/CUDA strings
apply to the host line they sit on."""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from hackscan.findings import SubmissionResult
from hackscan.inputs.discover import read_sidecar

MARK = re.compile(r"(?:#|//)\s*hackscan:\s*((?:todo-)?(?:expect|ok))\[([a-z0-9,\- ]+)\]")


@dataclass
class Expectations:
    path: Path
    marks: list[tuple[str, str, int]] = field(default_factory=list)   # (kind, rule, line)
    sidecar: dict = field(default_factory=dict)


def parse_marks(path: Path) -> Expectations:
    lines = path.read_text("utf-8").splitlines()
    exp = Expectations(path, [], read_sidecar(path.with_suffix(".toml")))
    for i, raw in enumerate(lines):
        for m in MARK.finditer(raw):
            before = raw[: m.start()].strip()
            target = i + 1
            slash = m.group(0).startswith("/")
            comment_only = not before or before in ('"""', "'''") or before.startswith("//") or (
                before.startswith("#") and not slash)
            if comment_only:
                j = i + 1
                while j < len(lines) and (not lines[j].strip() or lines[j].strip().startswith(("#", "//"))
                                          and not MARK.search(lines[j])):
                    j += 1
                target = j + 1
            for rule in m.group(2).split(","):
                exp.marks.append((m.group(1), rule.strip(), target))
    return exp


@dataclass
class RuleScore:
    expected: int = 0
    found: int = 0
    todo: int = 0
    false_positives: int = 0
    ok_marks: int = 0


def is_legit(sidecar: dict) -> bool:
    """A legitimate look-alike: it does none of the hack types (its expected verdict is `clean`,
    or `unverified` where hackscan cannot check what it does, as for an approximation inside the
    benchmark's check)."""
    return not sidecar.get("hack_types") and sidecar.get("verdict") in ("clean", "unverified")


def score(results: list[tuple[Expectations, SubmissionResult]]) -> dict:
    """Per rule and per hack type: recall on `expect` marks, false positives (findings on
    `ok` marks, or unannotated findings in files whose sidecar says legitimate)."""
    rules: dict[str, RuleScore] = defaultdict(RuleScore)
    problems: list[str] = []
    for exp, res in results:
        legit = is_legit(exp.sidecar)
        found = {(f.rule_id, f.location.line) for f in res.findings}
        found_rules_lines = defaultdict(set)
        for f in res.findings:
            found_rules_lines[f.rule_id].add(f.location.line)
        marked_lines = defaultdict(set)
        for kind, rule, line in exp.marks:
            marked_lines[rule].add(line)
            s = rules[rule]
            if kind == "expect":
                s.expected += 1
                if (rule, line) in found:
                    s.found += 1
                else:
                    problems.append(f"{exp.path}:{line}: expected {rule}, not reported")
            elif kind == "ok":
                s.ok_marks += 1
                if (rule, line) in found:
                    s.false_positives += 1
                    problems.append(f"{exp.path}:{line}: {rule} reported on a line marked ok")
            elif kind == "todo-expect":
                s.todo += 1
        for f in res.findings:
            if legit and f.location.line not in marked_lines.get(f.rule_id, set()):
                rules[f.rule_id].false_positives += 1
                problems.append(f"{exp.path}:{f.location.line}: unannotated {f.rule_id} on a legitimate file")
        want = exp.sidecar.get("static", exp.sidecar.get("verdict"))
        if want != res.verdict:
            problems.append(f"{exp.path}: static verdict {res.verdict}, the sidecar says {want}")
    return {"rules": dict(rules), "problems": problems}


def corpus_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.suffix in (".py", ".cu", ".cuh", ".cpp")
                  and p.with_suffix(".toml").is_file())


def corpus_stats(root: Path) -> dict:
    """Audit every annotated corpus file and score the rules: recall per rule and per hack
    type on `expect` marks, false-positive rate on legitimate files, verdict agreement."""
    from hackscan.api import iter_scan
    from hackscan.engine import Options, load_rules
    from hackscan.inputs.discover import discover

    files = corpus_files(root)
    items = discover(files, root=root, sidecars=True)
    results = list(iter_scan(items, Options()))
    pairs = [(parse_marks(f), r) for f, r in zip(files, results)]
    sc = score(pairs)
    rule_type = {r.id: r.hack_type for r in load_rules()}
    legit = [(e, r) for e, r in pairs if is_legit(e.sidecar)]
    hacks = [(e, r) for e, r in pairs if not is_legit(e.sidecar)]
    per_type: dict[str, dict] = {}
    for e, r in hacks:
        for t in e.sidecar.get("hack_types", []):
            d = per_type.setdefault(t, {"hacks": 0, "flagged": 0, "legit_files_flagged": 0})
            d["hacks"] += 1
            if t in {f.hack_type for f in r.findings}:
                d["flagged"] += 1
    for t in per_type:
        per_type[t]["legit_files_flagged"] = sum(
            1 for e, r in legit if any(f.hack_type == t and f.severity not in ("info", "low") for f in r.findings))
    verdict_ok = sum(1 for e, r in pairs if e.sidecar.get("static", e.sidecar.get("verdict")) == r.verdict)
    rules = {}
    for rid, s in sorted(sc["rules"].items()):
        rules[rid] = {"hack_type": rule_type.get(rid, "?"), "expected": s.expected, "found": s.found,
                      "recall": round(s.found / s.expected, 3) if s.expected else None,
                      "todo": s.todo, "false_positives": s.false_positives,
                      "fp_rate": round(s.false_positives / len(legit), 4) if legit else None}
    for t, d in per_type.items():
        d["recall"] = round(d["flagged"] / d["hacks"], 3) if d["hacks"] else None
        d["fp_rate"] = round(d["legit_files_flagged"] / len(legit), 4) if legit else None
    return {"files": len(pairs), "hack_files": len(hacks), "legit_files": len(legit),
            "hack_types_covered": len(per_type), "static_verdict_agreement": verdict_ok,
            "rules": rules, "hack_types": dict(sorted(per_type.items())), "problems": sc["problems"]}


def render_stats(stats: dict) -> str:
    out = [f"{stats['files']} corpus files: {stats['hack_files']} hacks over {stats['hack_types_covered']} "
           f"hack types, {stats['legit_files']} legitimate; static verdict as the sidecar says on "
           f"{stats['static_verdict_agreement']}/{stats['files']}", "",
           f"{'hack type':<26}{'hacks':>6}{'flagged':>9}{'recall':>8}{'FP rate':>9}"]
    for t, d in stats["hack_types"].items():
        out.append(f"{t:<26}{d['hacks']:>6}{d['flagged']:>9}{d['recall'] if d['recall'] is not None else '-':>8}"
                   f"{d['fp_rate'] if d['fp_rate'] is not None else '-':>9}")
    out += ["", f"{'rule':<34}{'expect':>7}{'found':>7}{'recall':>8}{'todo':>6}{'FP':>5}"]
    for rid, d in stats["rules"].items():
        out.append(f"{rid:<34}{d['expected']:>7}{d['found']:>7}{d['recall'] if d['recall'] is not None else '-':>8}"
                   f"{d['todo']:>6}{d['false_positives']:>5}")
    if stats["problems"]:
        out += ["", "Problems:"] + [f"  {p}" for p in stats["problems"]]
    return "\n".join(out) + "\n"
