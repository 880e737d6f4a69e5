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


def test_the_dynamic_docs_probe_table_is_current():
    """docs/dynamic.md's probe table is generated from the probes (`hackscan docs`)."""
    pytest.importorskip("torch")
    from hackscan.dynamic.probe import load_probes, with_probe_table

    text = (ROOT / "docs" / "dynamic.md").read_text()
    assert with_probe_table(text) == text, "regenerate with `hackscan docs`"
    rows = {line.split("|")[1].strip().split(" (")[0] for line in text.splitlines() if line.startswith("| ")}
    assert {p.name for p in load_probes()} <= rows


def test_the_architecture_page_names_modules_that_exist_and_every_part_of_the_session():
    """docs/architecture.md follows one candidate through the code: every path it names exists,
    and every module of hackscan/dynamic (the session's parts) has its step on the page."""
    import re

    text = (ROOT / "docs" / "architecture.md").read_text()
    named = set(re.findall(r"`((?:hackscan|rules)/[A-Za-z0-9_/.]*)`", text))
    assert len(named) > 25, sorted(named)
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert not missing, f"docs/architecture.md names what does not exist: {missing}"
    parts = {f"hackscan/dynamic/{p.name}" for p in (ROOT / "hackscan" / "dynamic").glob("*.py") if p.name != "__init__.py"}
    unnamed = sorted(parts - named)
    assert not unnamed, f"modules of the dynamic session the architecture page does not place: {unnamed}"
