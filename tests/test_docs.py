"""docs/rules/<id>.md is generated from the rule docstrings and must be current."""
from __future__ import annotations

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
