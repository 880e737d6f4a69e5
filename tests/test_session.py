"""hackscan.Session: kept across calls, bounded, safe from several threads."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from pathlib import Path

import hackscan

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus" / "synthetic"
PROBLEMS = ROOT / "corpus" / "problems"

LEGIT = (CORPUS / "legit" / "triton_relu.py").read_text()
REF = (PROBLEMS / "relu.py").read_text()


def test_static_session_from_several_threads_gives_each_call_its_own_verdict():
    hack = next(p for p in (CORPUS / "result-caching").glob("*.py")).read_text()
    with hackscan.Session(dynamic="off", max_concurrent=2) as s:
        with ThreadPoolExecutor(4) as ex:
            got = list(ex.map(lambda c: s.audit(c, REF).verdict, [LEGIT, hack] * 4))
    assert got == [hackscan.audit(LEGIT, REF, dynamic="off").verdict,
                   hackscan.audit(hack, REF, dynamic="off").verdict] * 4
    assert got[0] == "clean" and got[1] != "clean"


def test_the_bound_holds_and_a_closed_session_refuses_work():
    s = hackscan.Session(dynamic="auto", max_concurrent=2)
    held = []
    for _ in range(2):
        assert s._slots.acquire(blocking=False)
        held.append(1)
    assert not s._slots.acquire(blocking=False)   # a third audit would wait
    for _ in held:
        s._slots.release()
    s.close()
    with pytest.raises(RuntimeError, match="closed"):
        s.audit(LEGIT, REF)


def test_bad_options_are_refused():
    with pytest.raises(ValueError):
        hackscan.Session(dynamic="sometimes")
    with pytest.raises(ValueError):
        hackscan.Session(measure="maybe")
    with pytest.raises(ValueError):
        hackscan.Session(prestart=-1)


def test_prestart_reaches_the_dynamic_options_and_the_environment_is_the_default(monkeypatch):
    from hackscan.dynamic.audit import DynamicOptions

    with hackscan.Session(dynamic="all", prestart=3) as s:
        assert DynamicOptions(**s.options).prestart == 3
    monkeypatch.setenv("HACKSCAN_PRESTART", "2")
    with hackscan.Session(dynamic="all") as s:
        assert "prestart" not in s.options and DynamicOptions(**s.options).prestart == 2
