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


def test_no_module_outside_the_probes_names_a_probe():
    """What a probe does in the audit (always run, measures a claim, reads a rewritten
    candidate, needs the re-initialised runs, how the run qualifies its outcome, what a crash
    answers) is declared in its own module: the auditor, the measurer and the reports name no
    probe, so adding one touches its module and its corpus pair only."""
    import ast

    from conftest import ROOT

    from hackscan.hacktypes import HACK_TYPES, NOTE_TYPES

    # a probe named after the finding type it reports (numerical-robustness) is named as a type
    names = {n for n in probe_catalogue() if n != ALL_PROBES} - set(HACK_TYPES) - set(NOTE_TYPES)
    assert len(names) >= 15
    offenders = []
    for path in sorted((ROOT / "hackscan").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("hackscan/dynamic/probes/"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
                offenders.append((rel, node.lineno, node.value))
    assert not offenders, offenders


def test_the_probes_declare_their_roles():
    pytest.importorskip("torch")
    from hackscan.dynamic.probe import Outcome, RunFacts, load_probes

    probes = {p.name: p for p in load_probes()}
    # the core questions `auto` asks of every submission (issue 35: the default verifies whenever it can)
    assert {n for n, p in probes.items() if p.always} == {
        "hidden-distributions", "fresh-call-consistency", "other-shapes", "kernel-attribution", "parameter-reinit",
        "poisoned-allocator", "output-type", "input-integrity", "sensitivity", "ghost-replay"}
    assert {p.rewrite: n for n, p in probes.items() if p.rewrite} == {"poison": "ghost-replay", "refuse": "forced-failure"}
    assert {n for n, p in probes.items() if p.measures_claim} == {"kernel-attribution"}
    assert {n for n, p in probes.items() if p.needs_reinit_runs} == {"parameter-reinit"}
    # the default qualification: with no kernel run a pass, and a rewritten run's catch, clear nothing
    quiet = RunFacts(no_kernel_ran=True)
    for n, p in probes.items():
        passed = p().qualify(Outcome(n, "passed", "ok"), quiet)
        assert passed.status == "inconclusive" and "no custom kernel ran" in passed.detail, n
        caught = p().qualify(Outcome(n, "caught", "x"), quiet)
        assert (caught.status == "inconclusive") == bool(p.rewrite), n
    crash = probes["isolated-worker"].on_crash({"error": "ModuleNotFoundError: No module named 'reference'"},
                                               "ModuleNotFoundError: No module named 'reference'")
    assert crash.status == "caught" and crash.hack_type == "reference-reuse"
    assert probes["sensitivity"].on_crash({}, "ModuleNotFoundError: x") is None


def test_probes_load_whole_when_several_threads_ask_at_once():
    # a session's audits run in threads; on the H200 two of them loading the probes at once once
    # handed a probe another thread's half-executed module ("cannot import name 'MATERIAL'")
    import sys
    import threading

    from hackscan.dynamic import probe as probe_mod

    saved = {k: v for k, v in sys.modules.items() if k.startswith("hackscan.dynamic.probes.")}
    results, errors = [], []
    start = threading.Barrier(8)

    def load():
        start.wait()
        try:
            results.append(probe_mod.load_probes())
        except Exception as e:  # noqa: BLE001 - the failure is what the test looks for
            errors.append(e)

    try:
        for _ in range(3):
            probe_mod.load_probes.cache_clear()
            for k in list(sys.modules):
                if k.startswith("hackscan.dynamic.probes."):
                    del sys.modules[k]
            threads = [threading.Thread(target=load) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        assert not errors, errors
        names = {p.name for p in results[0]}
        assert "parameter-reinit" in names and "hidden-distributions" in names
        assert all({p.name for p in r} == names for r in results)
    finally:
        probe_mod.load_probes.cache_clear()
        sys.modules.update(saved)
