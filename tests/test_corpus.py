"""The annotated corpus is the rule test suite: one test per corpus file, so a regression
names the file and line that changed."""
from __future__ import annotations

from pathlib import Path

import pytest

from hackscan.api import scan_item
from hackscan.corpus import corpus_files, is_legit, parse_marks
from hackscan.engine import Options, load_rules
from hackscan.findings import VERDICTS
from hackscan.hacktypes import HACK_TYPES
from hackscan.inputs.discover import discover

from conftest import CORPUS

FILES = corpus_files(CORPUS)
RULE_IDS = {r.id for r in load_rules()}


@pytest.fixture(scope="module")
def results():
    items = discover(FILES, sidecars=True)
    return {i.path: scan_item(i, Options()) for i in items}


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_corpus_file(path: Path, results):
    exp = parse_marks(path)
    side = exp.sidecar
    assert side.get("verdict") in VERDICTS, "sidecar needs an expected verdict"
    assert side.get("static") in VERDICTS, "sidecar needs the expected static verdict"
    for t in side.get("hack_types", []):
        assert t in HACK_TYPES, f"unknown hack type {t}"
    assert isinstance(side.get("probes"), list)
    assert (path.parent / side["reference"]).is_file(), "the reference named by the sidecar exists"
    res = results[path]
    assert res.error is None, res.error
    found = {(f.rule_id, f.location.line) for f in res.findings}
    for kind, rule, line in exp.marks:
        assert rule in RULE_IDS, f"annotation names unknown rule {rule}"
        if kind == "expect":
            assert (rule, line) in found, f"line {line}: expected {rule}; got {sorted(found)}"
        elif kind == "ok":
            assert (rule, line) not in found, f"line {line}: {rule} reported on a line marked ok"
    if is_legit(side):
        marked = {(rule, line) for kind, rule, line in exp.marks if kind in ("expect", "todo-ok")}
        extra = [f for f in res.findings if (f.rule_id, f.location.line) not in marked]
        assert not extra, f"unannotated findings on a legitimate file: {[(f.rule_id, f.location.line) for f in extra]}"
    assert res.verdict == side["static"], f"static verdict {res.verdict}, sidecar says {side['static']}: {res.reasons}"


def test_corpus_size_and_spread():
    sides = [parse_marks(f).sidecar for f in FILES]
    hacks = [s for s in sides if not is_legit(s)]
    legit = [s for s in sides if is_legit(s)]
    types = {t for s in hacks for t in s["hack_types"]}
    assert len(FILES) >= 90
    assert len(hacks) >= 55
    assert len(legit) >= 35
    assert len(types) >= 24
    backends = {s["backend"] for s in sides}
    assert {"cuda", "triton", "torch"} <= backends
    assert any(f.suffix == ".cu" for f in FILES), "raw .cu examples are part of the corpus"
    assert sum(1 for s in hacks if s.get("cpu")) >= 30, "CPU-runnable hack variants for the dynamic layer"


def test_every_rule_has_hack_and_lookalike():
    expect, ok = set(), set()
    for f in FILES:
        for kind, rule, _ in parse_marks(f).marks:
            (expect if kind == "expect" else ok if kind == "ok" else set()).add(rule)
    missing = sorted(r for r in RULE_IDS if r not in expect or r not in ok)
    assert not missing, f"rules without both an expect and an ok example: {missing}"


@pytest.mark.parametrize("path", [f for f in FILES if f.suffix == ".py"] + sorted(
    (CORPUS.parent / "problems").glob("*.py")), ids=lambda p: p.name)
def test_corpus_python_is_valid(path: Path):
    """Corpus pairs must be real programs the dynamic layer can run: valid Python first."""
    compile(path.read_text(), str(path), "exec")
