"""Rule metadata is validated when a rule class is defined; these tests pin the contract."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from hackscan.engine import load_rules
from hackscan.hacktypes import HACK_TYPES
from hackscan.paths import rules_dir
from hackscan.rule import DOC_SECTIONS, Rule, RuleError

RULES = load_rules()


def test_at_least_thirty_rules():
    assert len(RULES) >= 30


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_rule_metadata(rule):
    path = rules_dir() / rule.category / f"{rule.id}.py"
    assert path.is_file(), "rule id equals its file stem, under its category folder"
    assert rule.hack_type in HACK_TYPES
    docs = rule.docs()
    for s in DOC_SECTIONS:
        assert docs.get(s), f"missing docstring section {s}"
    if rule.severity != "info":
        # a rule names the probes that would confirm it, or says that none does
        assert rule.probes or docs["Dynamic confirmation"].startswith("None"), \
            "a rule names the probes that would confirm it, or its Dynamic confirmation starts with None"


def test_every_hack_type_has_a_rule_or_a_reason():
    covered = {r.hack_type for r in RULES}
    readme = (rules_dir() / "README.md").read_text()
    for t in HACK_TYPES:
        assert t in covered or f"`{t}`" in readme, f"{t} has no rule and no reason in rules/README.md"


def test_missing_doc_section_is_rejected():
    with pytest.raises(RuleError, match="Known gaps"):
        type("Bad", (Rule,), {"__doc__": textwrap.dedent("""
            x

            What it flags
                a
            Why it is a hack
                b
            Example
                c
            Legitimate look-alike
                d
            Dynamic confirmation
                e
            """), "id": "bad-rule", "hack_type": "obfuscation", "severity": "low", "confidence": "low",
            "summary": "s"})


def test_bad_hack_type_is_rejected():
    doc = "\n".join(f"{s}\n    text" for s in DOC_SECTIONS)
    with pytest.raises(RuleError, match="hack_type"):
        type("Bad2", (Rule,), {"__doc__": doc, "id": "bad-two", "hack_type": "not-a-hack", "severity": "low",
                               "confidence": "low", "summary": "s"})


def test_rule_file_stem_must_equal_id(tmp_path: Path):
    from hackscan.engine import _load

    cat = tmp_path / "misc"
    cat.mkdir()
    doc = "\\n".join(f"{s}\\n    text" for s in DOC_SECTIONS)
    (cat / "some-name.py").write_text(
        "from hackscan.rule import Rule\n"
        f"class R(Rule):\n    __doc__ = '{doc}'\n    id = 'other-name'\n    hack_type = 'obfuscation'\n"
        "    severity = 'low'\n    confidence = 'low'\n    summary = 's'\n    def check(self, ctx):\n        pass\n")
    with pytest.raises(RuleError, match="file stem"):
        _load(str(tmp_path))


TRITON_2D = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_rows(a_ptr, b_ptr, c_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(1)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < cols
    v = tl.load(a_ptr + row * cols + offs, mask=m) + tl.load(b_ptr + row * cols + offs, mask=m)
    tl.store(c_ptr + row * cols + offs, v, mask=m)


class ModelNew(nn.Module):
    def forward(self, a, b):
        c = torch.empty_like(a)
        grid = GRID
        add_rows[grid](a, b, c, a.shape[1], BLOCK=1024)
        return c
'''


@pytest.mark.parametrize("grid,flagged", [("(triton.cdiv(a.shape[1], 1024),)", True),
                                          ("(triton.cdiv(a.shape[1], 1024), a.shape[0])", False)])
def test_a_triton_kernel_reading_an_axis_its_grid_lacks(tmp_path, grid, flagged):
    """program_id(1) under a one-axis grid is always 0: only the first row is computed."""
    from hackscan.api import scan_item
    from hackscan.engine import Options
    from hackscan.inputs.discover import Item

    p = tmp_path / "cand.py"
    p.write_text(TRITON_2D.replace("GRID", grid))
    res = scan_item(Item(p, None, "cand.py"), Options())
    hits = [f for f in res.findings if f.rule_id == "launch-dimensions-short"]
    assert bool(hits) == flagged, [(f.rule_id, f.message) for f in res.findings]
    if flagged:
        assert "program_id(1)" in hits[0].message
