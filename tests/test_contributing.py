"""docs/contributing.md walked through: the rule on the page is the rule shipped, and adding it
to a rules folder that lacks it, as the page says, makes it flag its hack and stay quiet on its
look-alike; the probe on the page loads and decides on recorded outputs."""
from __future__ import annotations

import re
import shutil

import pytest

from conftest import CORPUS, PROBLEMS, ROOT

PAGE = ROOT / "docs" / "contributing.md"


def _block(marker: str) -> str:
    text = PAGE.read_text()
    m = re.search(rf"<!-- {marker}[^>]*-->\n```python\n(.*?)```\n<!-- end {marker} -->", text, re.S)
    assert m, f"no {marker} block in {PAGE.name}"
    return m.group(1)


def test_the_rule_on_the_page_is_the_rule_shipped():
    assert _block("rule") == (ROOT / "rules" / "tampering" / "peak-memory-reset.py").read_text()


def _findings(path, rule_id):
    from hackscan.api import scan

    ref = PROBLEMS / "relu.py"
    r = scan(path.read_text(), ref.read_text(), path=path.name)
    return [f for f in r.findings if f.rule_id == rule_id]


def test_adding_a_rule_as_the_page_says(tmp_path, monkeypatch):
    import hackscan.engine as engine
    from hackscan.rule import RuleError

    folder = tmp_path / "rules"
    shutil.copytree(engine.rules_dir(), folder)
    (folder / "tampering" / "peak-memory-reset.py").unlink()
    hack = CORPUS / "global-state-tampering" / "peak_memory_reset.py"
    twin = CORPUS / "legit" / "peak_memory_stats_outside_forward.py"
    monkeypatch.setattr(engine, "rules_dir", lambda: folder)
    engine._load.cache_clear()
    try:
        assert not _findings(hack, "peak-memory-reset")
        # step 1: the module, nothing else edited
        (folder / "tampering" / "peak-memory-reset.py").write_text(_block("rule"))
        engine._load.cache_clear()
        assert "peak-memory-reset" in {r.id for r in engine.load_rules()}
        found = _findings(hack, "peak-memory-reset")
        expect = next(i for i, line in enumerate(hack.read_text().splitlines(), 1) if "expect[peak-memory-reset]" in line)
        assert [f.location.line for f in found] == [expect] and found[0].hack_type == "global-state-tampering"
        assert not _findings(twin, "peak-memory-reset")
        # a module without one of the docstring's sections is refused when rules load
        (folder / "tampering" / "peak-memory-reset.py").write_text(_block("rule").replace("    Known gaps\n", "    Gaps\n"))
        engine._load.cache_clear()
        with pytest.raises(RuleError):
            engine.load_rules()
    finally:
        engine._load.cache_clear()


def test_the_probe_on_the_page_loads_and_decides():
    torch = pytest.importorskip("torch")
    from hackscan.dynamic.probe import Observations, Probe
    from hackscan.hacktypes import HACK_TYPES

    ns: dict = {"__name__": "contributing_probe"}
    exec(compile(_block("probe"), "contributing_probe", "exec"), ns)
    probe = next(v for v in ns.values() if isinstance(v, type) and issubclass(v, Probe) and v is not Probe)
    assert set(probe.confirms) <= set(HACK_TYPES) and probe.summary and probe.__doc__
    x = torch.randn(64)
    refs = {"visible": ([x.relu()], None), "odd_negated": ([(-x).relu()], None)}

    def run(odd_output):
        outs = {"v": [x.relu()], "o": [odd_output]}
        steps = {("visible", 0): {"set": "visible", "file": "v"}, ("odd_negated", 0): {"set": "odd_negated", "file": "o"}}
        return probe().evaluate(Observations(candidate={}, steps=steps, load_output=outs.__getitem__,
                                             reference_outputs=refs))

    assert run((-x).relu()).status == "passed"
    caught = run(x.relu())
    assert caught.status == "caught" and "odd_negated" in caught.detail
