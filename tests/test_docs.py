"""docs/rules/<id>.md is generated from the rule docstrings and must be current."""
from __future__ import annotations

import pytest

from hackscan.cli import rule_markdown
from hackscan.engine import load_rules

from conftest import ROOT


def test_rule_docs_are_current():
    docs = ROOT / "docs" / "rules"
    stale = []
    for r in load_rules():
        page = docs / f"{r.id}.md"
        if not page.is_file() or page.read_text() != rule_markdown(r):
            stale.append(r.id)
    extra = sorted(p.stem for p in docs.glob("*.md") if p.stem not in {r.id for r in load_rules()})
    assert not stale, f"regenerate with `hackscan docs`: {stale}"
    assert not extra, f"pages for rules that no longer exist: {extra}"


def test_every_probe_is_in_the_dynamic_docs_table():
    pytest.importorskip("torch")
    from hackscan.dynamic.probe import load_probes

    text = (ROOT / "docs" / "dynamic.md").read_text()
    rows = {line.split("|")[1].strip().split(" (")[0] for line in text.splitlines() if line.startswith("| ")}
    missing = [p.name for p in load_probes() if p.name not in rows]
    assert not missing, f"probes without a row in docs/dynamic.md: {missing}"
