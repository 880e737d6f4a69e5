"""The hostile corpus attacks the auditor, not the benchmark. Each candidate gets a verdict, the
auditor survives, and nothing outside the scratch folder changes."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from hackscan.api import scan_item  # noqa: E402
from hackscan.dynamic.audit import DynamicOptions, DynamicSession  # noqa: E402
from hackscan.engine import Options  # noqa: E402
from hackscan.inputs.discover import discover, read_sidecar  # noqa: E402

from conftest import ROOT  # noqa: E402

HOSTILE = sorted((ROOT / "corpus" / "hostile").glob("*.py"))


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    canary_dir = tmp_path_factory.mktemp("canary")
    os.environ["HACKSCAN_TEST_CANARY_DIR"] = str(canary_dir)  # not passed to workers: scrubbed
    before = {p: p.stat().st_mtime for p in (ROOT / "corpus").rglob("*")}
    # the candidates whose sidecar says they run until the limit (`hangs`) run under a short one;
    # every other one under a limit no busy machine reaches, so a slow run never fails a test
    out, works = {}, []
    items = discover(HOSTILE, sidecars=True)
    hangs = [i for i in items if read_sidecar(i.path.with_suffix(".toml")).get("hangs")]
    for group, timeout in ((hangs, 30), ([i for i in items if i not in hangs], 600)):
        s = DynamicSession(DynamicOptions(mode="all", device="cpu", timeout_s=timeout, seed=99))
        works.append(str(s.work))
        try:
            # two at a time, as a user's `hackscan audit --jobs 2` runs them
            done = s.audit_many([(scan_item(i, Options()), i.path, i.reference) for i in group], jobs=2)
            out.update({i.path.name: r for i, r in zip(group, done)})
        finally:
            s.close()
    after = {p: p.stat().st_mtime for p in (ROOT / "corpus").rglob("*")}
    return out, canary_dir, before, after, works


def test_at_least_twenty_hostile_candidates():
    assert len(HOSTILE) >= 27


@pytest.mark.parametrize("path", HOSTILE, ids=lambda p: p.stem)
def test_hostile_candidate_gets_its_verdict(path: Path, audited):
    results, *_ = audited
    side = read_sidecar(path.with_suffix(".toml"))
    r = results[path.name]
    text = " ".join(r.reasons) + " " + (r.error or "") + " " + str(r.dynamic)
    if side.get("gpu"):
        # on the CPU it survives without being run, with one verdict and the reason said
        assert r.verdict == side["cpu_verdict"] and re.search(side["cpu_reason"], text), (r.verdict, text)
        return
    assert r.verdict == side["verdict"], (r.verdict, r.reasons, r.dynamic)
    assert side.get("reason"), "every hostile case names the reason its verdict must carry"
    assert re.search(side["reason"], text), text


def test_nothing_outside_scratch_changed(audited):
    _, canary_dir, before, after, _ = audited
    assert not (Path("/tmp") / "hackscan-hostile-canary.txt").exists()
    assert not list(canary_dir.iterdir())
    assert before == after, "the corpus folder was modified"


def test_no_process_left_behind(audited):
    import subprocess
    import time

    from hackscan.dynamic import sandbox

    if sandbox.engine()[0] != "bwrap" and os.geteuid() != 0:
        pytest.skip("the basic engine without root has no PID namespace: a descendant that calls setsid can "
                    "outlive its worker (docs/security.md); bubblewrap cannot run here")
    time.sleep(1.0)   # setsid_survivor's grandchild would still be asleep now

    # this fixture's workers, by their sessions' folders (other tests may audit beside this one)
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    works = audited[-1]
    assert works and not [line for line in ps.splitlines() if "_worker.py" in line and any(w in line for w in works)]


def test_the_auditor_memory_stayed_bounded(audited):
    """Named pipes, /dev/zero links, sparse files, memory hogs, floods of output: none of it
    reaches the auditor's own memory (peak resident size of this process, workers excluded)."""
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024   # KiB on Linux
    assert peak < 6 << 30, f"auditor peak RSS {peak >> 20} MiB"


def test_the_auditors_environment_is_out_of_reach_and_the_case_could_see_it(tmp_path):
    """proc_parent_environ looks for a canary in the environment of every process it can see.
    A variable set with os.environ inside pytest never reaches /proc/<pid>/environ (the kernel
    shows the environment a process was started with), so the module fixture cannot show the
    attack failing. Here the auditor is a process started with the canary in its environment:
    run bare under that process (no sandbox), the case finds it and writes beside it; audited by
    that process, it finds nothing and its verdict is the honest ReLU's."""
    import json
    import subprocess
    import sys

    case = ROOT / "corpus" / "hostile" / "proc_parent_environ.py"
    canary = tmp_path / "canary"
    canary.mkdir()
    env = dict(os.environ, HACKSCAN_TEST_CANARY_DIR=str(canary), PYTHONPATH=str(ROOT))
    child = tmp_path / "bare.py"   # the case in a process whose environment shows the canary, unsandboxed
    child.write_text("import importlib.util as u, sys\n"
                     "s = u.spec_from_file_location('case', sys.argv[1]); m = u.module_from_spec(s)\n"
                     "s.loader.exec_module(m); print(bool(m.FOUND))\n")
    got = subprocess.run([sys.executable, str(child), str(case)], env=env, capture_output=True, text=True,
                         timeout=300)
    assert got.stdout.strip() == "True", got.stderr[-2000:]
    assert (canary / "from-environ.txt").exists(), "the unprotected case could not reach the canary"
    for f in canary.iterdir():
        f.unlink()
    audit = subprocess.run([sys.executable, "-m", "hackscan", "audit", str(case), "--sidecars", "--dynamic", "all",
                            "--format", "json", "--no-progress"], env=env, capture_output=True, text=True,
                           timeout=900, cwd=tmp_path)
    res = json.loads(audit.stdout)["submissions"][0]
    assert res["verdict"] == "violation" and res["dynamic"]["correct_on_visible"] is True, res["dynamic"]
    assert not list(canary.iterdir())
