"""bench/realworld_measure.py on a set of our own (two problems, three candidates): the items it
measures (not labelled hacks, audited, run), every record kept as it finishes, a second call
going on where the first stopped, and the re-evaluation report written over the records."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parent.parent

REF = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2

def get_inputs():
    return [torch.randn(256, 256)]

def get_init_inputs():
    return []
"""

HONEST = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        return x.clamp_min(0) * 2
"""


def _set(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "set"
    rows = [("l1p1-aa", "presumed-honest"), ("l1p1-bb", "unlabeled"), ("l1p1-cc", "hack"), ("l1p1-dd", "unlabeled")]
    (root / "items").mkdir(parents=True)
    with open(root / "manifest.tsv", "w") as fh:
        fh.write("id\tlabel\tslice\tproblem\tcandidate_class\n")
        for i, label in rows:
            fh.write(f"{i}\t{label}\tours\tL1/1_relu_double\tModelNew\n")
    audits = tmp_path / "audits.jsonl"
    with open(audits, "w") as fh:
        for i, label in rows:
            d = root / "items" / i
            d.mkdir(parents=True)
            (d / "reference.py").write_text(textwrap.dedent(REF))
            (d / "candidate.py").write_text(textwrap.dedent(HONEST))
            verdict = {"l1p1-cc": "hacked", "l1p1-dd": "error"}.get(i, "clean")
            fh.write(json.dumps({"id": i, "label": label, "path": f"{i}/candidate.py", "verdict": verdict,
                                 "backend": "torch", "entry": "ModelNew", "dynamic": {"status": "ran"}}) + "\n")
    return root, audits


def _run(*args, cwd):
    return subprocess.run([sys.executable, str(ROOT / "bench" / "realworld_measure.py"), *args],
                          capture_output=True, text=True, cwd=cwd, timeout=1800)


@pytest.mark.dynamic
def test_realworld_measure_measures_the_items_that_ran_and_goes_on_where_it_stopped(tmp_path):
    root, audits = _set(tmp_path)
    common = ["--set", str(root), "--audits", str(audits), "--state", str(tmp_path / "state"),
              "--device", "cpu", "--measure-budget", "0.5", "--timeout", "600"]
    p = _run(*common, "--out", str(tmp_path / "out1"), "--limit", "1", cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    first = [json.loads(x) for x in (tmp_path / "out1" / "measure.jsonl").read_text().splitlines()]
    assert [r["id"] for r in first] == ["l1p1-aa"], "the hack and the item that did not run are left out"
    p = _run(*common, "--out", str(tmp_path / "out2"), cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    recs = [json.loads(x) for x in (tmp_path / "out2" / "measure.jsonl").read_text().splitlines()]
    assert [r["id"] for r in recs] == ["l1p1-aa", "l1p1-bb"], "the second call keeps the first's record and goes on"
    for r in recs:
        m = r["measure"]
        assert m["status"] == "measured", m
        assert m["speedup"]["fair"] > 0 and m["speedup"]["vs_strict"] > 0
        assert r["source"] == "l1p1" and r["label"] in ("presumed-honest", "unlabeled")
    table = json.loads((tmp_path / "out2" / "report.json").read_text())["table"]
    assert table["clean"]["measured"] == 2 and table["not_clean"]["kernels"] == 0, table
    assert (tmp_path / "out2" / "report.html").read_text().lstrip().lower().startswith("<!doctype html")
    assert "TF32 PyTorch" in (tmp_path / "out2" / "report.txt").read_text()


def _bench_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("realworld_measure", ROOT / "bench" / "realworld_measure.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_measuring_never_waits_on_a_build_while_another_item_is_ready():
    # builds run beside the measurements: the first item in order whose build is done (or that
    # builds nothing) is measured next; with none ready it waits for the first build to finish,
    # and never past the time left
    import threading
    from concurrent.futures import Future

    mod = _bench_module()
    slow, done, late = Future(), Future(), Future()
    done.set_result({})
    builds = {"a": slow, "b": done, "d": late}
    assert mod.next_ready(["a", "b", "c", "d"], builds, 10.0) == "b"
    assert mod.next_ready(["a", "c", "d"], builds, 10.0) == "c", "an item with nothing to build is ready"
    assert mod.next_ready(["a", "d"], builds, 0.05) is None, "no build finished in the time left"
    threading.Timer(0.1, late.set_result, args=({},)).start()
    assert mod.next_ready(["a", "d"], builds, 30.0) == "d", "the first build to finish is measured first"


def test_clean_items_are_measured_first():
    mod = _bench_module()
    rows = {i: {"label": "unlabeled"} for i in ("x1", "x2", "x3", "x4")}
    audits = {"x1": {"verdict": "violation"}, "x2": {"verdict": "clean"}, "x3": {"verdict": "suspect"},
              "x4": {"verdict": "clean"}}
    got = mod.chosen(rows, audits, None)
    assert set(got[:2]) == {"x2", "x4"} and set(got[2:]) == {"x1", "x3"}
    assert mod.chosen(dict(reversed(list(rows.items()))), audits, None) == got, "the order is the ids', not the file's"


def test_a_cut_short_run_has_measured_a_sample_of_every_source():
    # within a verdict, items go in an order drawn from their ids: the first ten of forty items
    # from four sources are not all from the first source in the alphabet
    mod = _bench_module()
    ids = [f"{src}-{k:02d}" for src in ("aa", "bb", "cc", "dd") for k in range(10)]
    rows = {i: {"label": "unlabeled"} for i in ids}
    audits = {i: {"verdict": "clean"} for i in ids}
    first = mod.chosen(rows, audits, None)[:10]
    assert len({i.split("-")[0] for i in first}) >= 3


PIPELINE = r"""
import sys, time, types
import threading
import hackscan.dynamic.audit as audit

log = []
LOCK = threading.Lock()
FLIGHT = [0, 0]   # measurements in flight now, at most

class FakeSession:
    def __init__(self, opts):
        import pathlib, tempfile
        self.work = pathlib.Path(tempfile.mkdtemp(prefix="fake-session-"))
        (self.work / "in_pool0.pt").write_bytes(b"x")
        print("session folder:", self.work, flush=True)

    def prebuild(self, paths, jobs):
        time.sleep(1.5)
        log.append(("built", paths[0].parent.name))
        return {str(paths[0]): -1.0 if "broken" in paths[0].read_text() else 1.5}

    def measure(self, result, cand, ref):
        import os, threading
        with LOCK:
            FLIGHT[0] += 1
            FLIGHT[1] = max(FLIGHT[1], FLIGHT[0])
        time.sleep(float(os.environ.get("FAKE_MEASURE_S", "0")))
        with LOCK:
            FLIGHT[0] -= 1
            log.append(("measured", cand.parent.name))
        return types.SimpleNamespace(measure={"status": "measured", "speedup": {"fair": 1.0},
                                              "in_flight_max": FLIGHT[1]})

audit.DynamicSession = FakeSession
sys.path.insert(0, sys.argv[1])
import realworld_measure as rm
rm.write_report = lambda records, out: (out / "order.txt").write_text(repr(log))
rm.main(sys.argv[2:])
"""


@pytest.mark.dynamic
def test_a_call_measures_while_extensions_build_and_never_waits_past_its_limits(tmp_path):
    # two clean items: the first in order builds an extension (1.5 s, faked), the second builds
    # nothing and is measured at once, beside the build; the built one follows
    root, audits = _set(tmp_path)
    (root / "items" / "l1p1-aa" / "candidate.py").write_text(
        textwrap.dedent(HONEST) + "\nfrom torch.utils.cpp_extension import load_inline\n")
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, "-c", PIPELINE, str(ROOT / "bench"), "--set", str(root), "--audits",
                        str(audits), "--state", str(tmp_path / "st"), "--out", str(out), "--device", "cuda",
                        "--only", "l1p1-aa,l1p1-bb"], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    # the session's folder (input sets of full-size problems) goes with the call, which ends by os._exit
    work = next(line.split(": ", 1)[1] for line in p.stdout.splitlines() if line.startswith("session folder:"))
    assert not Path(work).exists(), work
    order = (out / "order.txt").read_text()
    assert order == "[('measured', 'l1p1-bb'), ('built', 'l1p1-aa'), ('measured', 'l1p1-aa')]", order
    recs = {r["id"]: r for r in map(json.loads, (out / "measure.jsonl").read_text().splitlines())}
    assert recs["l1p1-bb"]["builds_beside"] == 1 and recs["l1p1-aa"]["builds_beside"] == 0
    # an extension that did not build is not measured (its timed worker would only fail building)
    cand = root / "items" / "l1p1-aa" / "candidate.py"
    cand.write_text(cand.read_text() + "# broken\n")
    p = subprocess.run([sys.executable, "-c", PIPELINE, str(ROOT / "bench"), "--set", str(root), "--audits",
                        str(audits), "--state", str(tmp_path / "st3"), "--out", str(tmp_path / "o3"), "--device",
                        "cuda", "--only", "l1p1-aa"], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert (tmp_path / "o3" / "order.txt").read_text() == "[('built', 'l1p1-aa')]"
    (rec,) = map(json.loads, (tmp_path / "o3" / "measure.jsonl").read_text().splitlines())
    assert rec["measure"]["status"] == "error" and "did not build" in rec["measure"]["reason"]
    # a budget already spent measures nothing and still exits at once, builds or not
    p = subprocess.run([sys.executable, "-c", PIPELINE, str(ROOT / "bench"), "--set", str(root), "--audits",
                        str(audits), "--state", str(tmp_path / "st2"), "--out", str(tmp_path / "o2"), "--device",
                        "cuda", "--budget", "0", "--hard", "1"], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert p.returncode == 0 and "budget spent" in p.stdout, p.stdout + p.stderr


def test_a_runs_summary_says_where_its_time_went():
    """bench/realworld_gpu.py --summarize: items' times summed, the builds' share and the ten
    slowest items' share, and the bound for ten audits at a time with and without the builds."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("realworld_gpu", ROOT / "bench" / "realworld_gpu.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    recs = [{"wall_s": 100.0, "build_s": 60.0}] + [{"wall_s": 10.0, "build_s": 0.0}] * 20
    got = mod.item_time(recs)
    assert got["item_s"] == 300 and got["build_s"] == 60 and got["builds"] == 1
    assert got["build_share"] == 0.2 and got["slowest_10_share"] == round(190 / 300, 3)
    assert got["at_10_at_a_time_s"] == 30 and got["builds_cached_at_10_at_a_time_s"] == 24


@pytest.mark.dynamic
def test_measurements_in_flight_are_as_many_as_concurrent_asks(tmp_path):
    """--concurrent K: up to K measurements in flight (the session's device lock orders their
    timings); the default keeps one; every item is recorded once either way."""
    import os

    root, audits = _set(tmp_path)
    env = dict(os.environ, FAKE_MEASURE_S="1.5")
    for k, want in (("1", 1), ("2", 2)):
        out = tmp_path / f"out{k}"
        p = subprocess.run([sys.executable, "-c", PIPELINE, str(ROOT / "bench"), "--set", str(root), "--audits",
                            str(audits), "--state", str(tmp_path / f"st{k}"), "--out", str(out), "--device", "cpu",
                            "--only", "l1p1-aa,l1p1-bb", "--concurrent", k], capture_output=True, text=True,
                            cwd=tmp_path, timeout=600, env=env)
        assert p.returncode == 0, p.stdout + p.stderr
        recs = [json.loads(x) for x in (out / "measure.jsonl").read_text().splitlines()]
        assert sorted(r["id"] for r in recs) == ["l1p1-aa", "l1p1-bb"], recs
        assert max(r["measure"]["in_flight_max"] for r in recs) == want, recs
