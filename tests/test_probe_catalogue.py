"""Probes are found by walking hackscan/dynamic/probes/: the names a rule may give in its
`probes` come from the probe modules themselves (each probe's name and its `answers`), read
without importing them, and a rule naming no probe is refused when rules load."""
from __future__ import annotations

import shutil
import textwrap

import pytest

from hackscan.dynamic.probe import ALL_PROBES, probe_catalogue
from hackscan.engine import _load, load_rules, rules_dir
from hackscan.rule import RuleError


def test_the_catalogue_read_from_source_is_the_loaded_probes():
    pytest.importorskip("torch")
    from hackscan.dynamic.probe import load_probes

    want: dict[str, set[str]] = {ALL_PROBES: set()}
    for p in load_probes():
        want.setdefault(p.name, set()).add(p.name)
        for alias in p.answers:
            want.setdefault(alias, set()).add(p.name)
    assert {k: set(v) for k, v in probe_catalogue().items()} == want


def test_every_rule_names_probes_that_exist():
    catalogue = probe_catalogue()
    for rule in load_rules():
        assert all(p in catalogue for p in rule.probes), (rule.id, rule.probes)


def test_a_rule_naming_no_probe_is_refused_when_rules_load(tmp_path):
    folder = tmp_path / "rules"
    shutil.copytree(rules_dir(), folder)
    target = folder / "output" / "returns-input.py"
    src = target.read_text()
    assert "probes = (" in src
    target.write_text(src.replace("probes = (", 'probes = ("no-such-probe", ', 1))
    _load.cache_clear()
    try:
        with pytest.raises(RuleError, match="no-such-probe"):
            load_rules(folder)
    finally:
        _load.cache_clear()


def test_a_probes_answers_are_read_from_its_module(tmp_path, monkeypatch):
    """A probe module's own declaration is the only place its aliases live."""
    import hackscan.probe_names as probe_mod

    probes = tmp_path / "probes"
    probes.mkdir()
    (probes / "one.py").write_text(textwrap.dedent('''
        class One:
            name = "one-probe"
            answers = ("asked-as-one", "shared")

        class Two:
            name: str = "two-probe"
            answers = ("shared",)
    '''))
    monkeypatch.setattr(probe_mod, "PROBES_DIR", probes)
    probe_mod.probe_catalogue.cache_clear()
    try:
        cat = probe_mod.probe_catalogue()
    finally:
        probe_mod.probe_catalogue.cache_clear()
    assert cat["asked-as-one"] == ("one-probe",) and cat["shared"] == ("one-probe", "two-probe")
    assert cat["two-probe"] == ("two-probe",) and cat[ALL_PROBES] == ()
