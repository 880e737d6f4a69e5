"""The machine-wide ledger (hackscan.dynamic.ledger) and the budgets claimed on it
(hackscan.dynamic.budgets): processes side by side never promise the same bytes twice, a claim
that does not fit waits for room and says how long, a claim that could never fit is refused at
once naming the resource and the sizes, a dead process gives its claims back, and a reference
larger than its first claim is run again with what it needs instead of failing."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from hackscan.dynamic import ledger as ledger_mod
from hackscan.dynamic.ledger import Ledger, NeverFits, WaitedTooLong

ROOT = Path(__file__).resolve().parents[1]


def _cap(n):
    return dict(room=lambda held: n - held, most=lambda held: n)


def test_a_claim_that_does_not_fit_waits_and_one_that_never_fits_is_refused(tmp_path):
    led = Ledger(tmp_path / "l")
    with led.claim("host", 60, what="first", wait_s=5, **_cap(100)) as a:
        assert a.waited_s < 1 and led.held("host") == 60
        with pytest.raises(WaitedTooLong) as e:
            with led.claim("host", 50, what="second", wait_s=0.5, **_cap(100)):
                pass
        assert "first (60 bytes)" in str(e.value) and "host memory" in str(e.value)
        with pytest.raises(NeverFits) as e:
            with led.claim("host", 101, what="huge", wait_s=5, **_cap(100)):
                pass
        assert "101 bytes of host memory" in str(e.value) and "at most 100" in str(e.value)
        # other resources are apart
        with led.claim("gpu:0", 90, what="elsewhere", wait_s=0.5, **_cap(100)):
            pass
    assert led.held("host") == 0 and led.entries() == []


def test_a_waiting_claim_is_granted_when_room_is_given_back_and_says_behind_what(tmp_path):
    led = Ledger(tmp_path / "l")
    got = {}

    def second():
        with led.claim("host", 50, what="second", wait_s=20, **_cap(100)) as c:
            got["claim"] = c

    with led.claim("host", 60, what="first", wait_s=5, **_cap(100)):
        t = threading.Thread(target=second)
        t.start()
        time.sleep(1.0)
        assert "claim" not in got
        assert any(e.get("waiting") for e in led.entries("host"))
    t.join(20)
    c = got["claim"]
    assert c.waited_s >= 0.9 and c.behind == ["first (60 bytes)"]
    assert c.record()["waited_s"] >= 0.9


def test_a_claim_alone_on_its_resource_is_granted_what_there_is(tmp_path):
    """With nothing else claimed, a claim larger than the room it sees (a disk other files
    fill) still runs: waiting could never give it more."""
    led = Ledger(tmp_path / "l")
    with led.claim("disk:1", 80, room=lambda held: 10 - held, most=lambda held: 100, what="alone", wait_s=1) as c:
        assert c.waited_s < 0.5


def test_a_large_waiter_is_not_starved_by_a_stream_of_small_claims(tmp_path, monkeypatch):
    monkeypatch.setattr(ledger_mod, "PASS_S", 0.5)
    led = Ledger(tmp_path / "l")
    stop = threading.Event()
    big = {}

    def stream():   # small claims back to back, always overlapping
        while not stop.is_set():
            try:
                with led.claim("host", 30, what="small", wait_s=30, **_cap(100)):
                    time.sleep(0.3)
            except WaitedTooLong:
                return

    def large():
        with led.claim("host", 90, what="large", wait_s=30, **_cap(100)) as c:
            big["waited"] = c.waited_s

    threads = [threading.Thread(target=stream) for _ in range(2)]
    for t in threads:
        t.start()
        time.sleep(0.1)
    lt = threading.Thread(target=large)
    lt.start()
    lt.join(25)
    stop.set()
    for t in threads:
        t.join(30)
    assert "waited" in big, "the large claim never got its turn"
    assert big["waited"] < 15


_CLAIMER = textwrap.dedent("""
    import json, os, sys, time
    from pathlib import Path
    from hackscan.dynamic.ledger import Ledger
    root, need, hold, log = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    go = sys.argv[5] if len(sys.argv) > 5 else None
    led = Ledger(Path(root))
    if go:   # every process ready (imports done) before any claims: a slow start is no head start
        open(go + f".ready{os.getpid()}", "w").close()
        while not os.path.exists(go):
            time.sleep(0.02)
    with led.claim("host", need, room=lambda h: 100 - h, most=lambda h: 100, what=f"pid", wait_s=60) as c:
        t0 = time.time()
        with open(log, "a") as fh:
            fh.write(json.dumps({"start": t0, "need": need, "waited": c.waited_s}) + "\\n")
        time.sleep(hold)
        with open(log, "a") as fh:
            fh.write(json.dumps({"end": time.time(), "start": t0, "need": need}) + "\\n")
""")


def _spawn(args, **kw):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-c", _CLAIMER, *map(str, args)], env=env, **kw)


def test_processes_side_by_side_never_hold_more_than_the_resource_and_none_fails(tmp_path):
    """Six processes each claim 40 of 100: at most two hold at once, every one runs."""
    log = tmp_path / "log.jsonl"
    go = tmp_path / "go"
    procs = [_spawn([tmp_path / "l", 40, 0.6, log, go]) for _ in range(6)]
    for _ in range(1200):
        if len(list(tmp_path.glob("go.ready*"))) == 6:
            break
        time.sleep(0.1)
    go.touch()
    assert all(p.wait(120) == 0 for p in procs)
    recs = [json.loads(line) for line in log.read_text().splitlines()]
    spans = [(r["start"], r["end"]) for r in recs if "end" in r]
    assert len(spans) == 6
    for s, _e in spans:
        overlapping = sum(1 for s2, e2 in spans if s2 <= s < e2)
        assert overlapping * 40 <= 100
    assert sum(1 for r in recs if "waited" in r and r["waited"] > 0.3) >= 3


def test_a_killed_process_gives_its_claims_back(tmp_path):
    log = tmp_path / "log.jsonl"
    p = _spawn([tmp_path / "l", 90, 600, log])
    for _ in range(1200):
        if log.exists() and log.read_text():
            break
        time.sleep(0.1)
    led = Ledger(tmp_path / "l")
    assert led.held("host") == 90
    os.kill(p.pid, signal.SIGKILL)
    p.wait(30)
    with led.claim("host", 90, what="after", wait_s=5, **_cap(100)) as c:
        assert c.waited_s < 2


def test_a_ledger_file_written_by_anyone_else_cannot_stop_the_audits(tmp_path):
    """Garbage or a claim of a holder that never existed (the basic engine's workers run as
    the auditor's user) is dropped: no holder lock, no claim."""
    root = tmp_path / "l"
    led = Ledger(root)
    (root / "claims.json").write_text(json.dumps([{"id": "x", "holder": "1-forged", "resource": "host",
                                                    "bytes": 100, "what": "forged", "since": 0}]))
    with led.claim("host", 100, what="real", wait_s=2, **_cap(100)) as c:
        assert c.waited_s < 1
    (root / "claims.json").write_text(json.dumps([{"bytes": 100}, {"id": 1, "resource": None, "bytes": 5}]))
    with led.claim("host", 100, what="real", wait_s=2, **_cap(100)):    # entries of another shape
        pass
    (root / "claims.json").write_text("not json")
    with led.claim("host", 100, what="real", wait_s=2, **_cap(100)):
        pass


def test_disk_budgets_of_another_process_are_seen(tmp_path, monkeypatch):
    """What one process promised its workers comes off what the next is offered."""
    from hackscan.dynamic.budgets import Budgets

    root = tmp_path / "l"
    free = 90 << 30
    b = Budgets(tmp_path, "cpu", root=root)
    monkeypatch.setattr(Budgets, "_free_disk", lambda self: free)
    with b.disk(3, what="mine") as alone:
        pass
    assert alone == free // 3
    log = tmp_path / "log.jsonl"
    # another process holds 60 GiB of this disk's resource for a while
    res = b.disk_resource()
    script = _CLAIMER.replace('"host"', repr(res)).replace("room=lambda h: 100 - h, most=lambda h: 100",
                                                          "room=lambda h: 1 << 62, most=lambda h: 1 << 62")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen([sys.executable, "-c", script, str(root), str(60 << 30), "600", str(log)], env=env)
    try:
        for _ in range(1200):
            if log.exists() and log.read_text():
                break
            time.sleep(0.1)
        with b.disk(3, what="beside") as beside:
            pass
        assert beside == (free - (60 << 30)) // 3
        assert b.waits()[-1]["turn"] == res
    finally:
        p.kill()
        p.wait(30)


REF = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return x * 2.0

def get_inputs():
    return [torch.randn(256, 256)]

def get_init_inputs():
    return []
"""

CAND = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        return x + x
"""


def _pair(tmp_path):
    (tmp_path / "p").mkdir()
    ref, cand = tmp_path / "p" / "reference.py", tmp_path / "p" / "candidate.py"
    ref.write_text(REF)
    cand.write_text(CAND)
    return cand, ref


def test_a_reference_larger_than_its_first_claim_runs_again_with_what_it_needs(tmp_path, monkeypatch):
    """Its working set (256x256 fp32 inputs x 8 = 2 MiB) is more than a sixteenth of a capacity
    of 16 MiB: the first run stops before drawing, the ledger learns the size, the second run
    claims it and the audit is verified; the next process starts with the learned claim."""
    from hackscan.api import scan_item
    from hackscan.dynamic import budgets
    from hackscan.dynamic.audit import DynamicOptions, DynamicSession
    from hackscan.engine import Options
    from hackscan.inputs.discover import Item

    monkeypatch.setenv("HACKSCAN_LEDGER", str(tmp_path / "ledger"))
    monkeypatch.setattr(budgets, "memory_capacity", lambda device: 16 << 20)
    cand, ref = _pair(tmp_path)
    s = DynamicSession(DynamicOptions(mode="auto", device="cpu", seed=3))
    try:
        r = s.audit(scan_item(Item(cand, ref, "candidate.py"), Options()), cand, ref)
        key = s.ref_key(ref)
        # verified (a PyTorch-only candidate is a violation of the benchmark's rules, not unverified)
        assert r.verdict == "violation" and r.evidence == "dynamic" and r.dynamic["status"] == "ran", r.dynamic
        timings = r.dynamic["timings"]
        assert "claiming 2,097,152 bytes" in timings.get("reference_rerun", ""), timings
        turns = [w["turn"] for w in r.dynamic["waits"]]
        # the reference's two runs, the candidate's worker, the auditor's comparisons
        assert turns.count("host") == 4 and any(t.startswith("disk:") for t in turns)
        assert [w["for"] for w in r.dynamic["waits"] if w["turn"] == "host"][-1] == "the comparisons of candidate.py"
        assert s.budgets.known_need(key) == 2 << 20
    finally:
        s.close()
    s = DynamicSession(DynamicOptions(mode="auto", device="cpu", seed=4))
    try:
        assert s.budgets.first_claim(s.ref_key(ref)) == 2 << 20
    finally:
        s.close()


def test_a_problem_the_machine_could_never_hold_fails_naming_the_memory_and_sizes(tmp_path, monkeypatch):
    """An error of the audit naming the resource and both sizes (hackscan.dynamic.verdict.failed:
    a static clean would be `error`, never clean)."""
    from hackscan.api import scan_item
    from hackscan.dynamic import budgets
    from hackscan.dynamic.audit import DynamicOptions, DynamicSession
    from hackscan.engine import Options
    from hackscan.inputs.discover import Item

    monkeypatch.setenv("HACKSCAN_LEDGER", str(tmp_path / "ledger"))
    monkeypatch.setattr(budgets, "memory_capacity", lambda device: 1 << 20)   # 1 MiB < 2 MiB needed
    cand, ref = _pair(tmp_path)
    s = DynamicSession(DynamicOptions(mode="auto", device="cpu", seed=3))
    try:
        r = s.audit(scan_item(Item(cand, ref, "candidate.py"), Options()), cand, ref)
    finally:
        s.close()
    # an audit that failed for the machine, not a verdict on the candidate (its static violation stands)
    assert r.verdict == "violation" and r.dynamic["status"] == "error" and r.evidence == "static", r.dynamic
    reason = r.dynamic["reason"]
    assert "needs 2,097,152 bytes of host memory" in reason and "at most 1,048,576" in reason, reason


def test_extension_builds_of_every_process_stay_within_the_cores(tmp_path, monkeypatch):
    """Two cores per build: on a four-core machine two builds run at once, a third waits for a
    slot and says so."""
    from hackscan.dynamic.budgets import Budgets

    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    b = Budgets(tmp_path, "cpu", root=tmp_path / "l")
    inside, peak, lock = [0], [0], threading.Lock()
    waits = []
    release = threading.Event()

    def build(k):
        with b.build_slot(f"build {k}") as c:
            with lock:
                inside[0] += 1
                peak[0] = max(peak[0], inside[0])
            release.wait(30)
            with lock:
                inside[0] -= 1
            waits.append(c.waited_s)

    ts = [threading.Thread(target=build, args=(k,)) for k in range(3)]
    for t in ts:
        t.start()
    for _ in range(300):
        if inside[0] == 2 and len(b.ledger.entries("builds")) == 3:   # two in, the third waiting
            break
        time.sleep(0.05)
    time.sleep(0.5)
    assert inside[0] == 2
    release.set()
    for t in ts:
        t.join(30)
    assert peak[0] == 2 and len(waits) == 3
    assert sorted(waits)[-1] >= 0.5


def test_workers_of_a_gpu_run_claim_their_host_memory_and_keep_their_cache_within_it(tmp_path, monkeypatch):
    from hackscan.dynamic.budgets import Budgets

    b = Budgets(tmp_path, "cuda", root=tmp_path / "l")
    monkeypatch.setattr(Budgets, "host_capacity", lambda self: 64 << 30)
    with b.host("unknown-problem", "a reference") as cache:
        assert cache == (64 << 30) // 16 // 2                   # a sixteenth until the sets are known
        assert b.ledger.held("host") == (64 << 30) // 16
    b.learn("known", 1 << 30)
    with b.host("known", "a candidate") as cache:
        assert b.ledger.held("host") == (4 << 30) + (512 << 20)   # four sets and 512 MiB
        assert cache == ((4 << 30) + (512 << 20)) // 2
    assert b.ledger.held("host") == 0
    cpu = Budgets(tmp_path, "cpu", root=tmp_path / "l")
    with cpu.host("known", "a candidate") as cache:              # the working set's claim counts it
        assert cache is None and cpu.ledger.held("host") == 0


def test_a_ledger_folder_others_may_write_is_not_used(tmp_path):
    shared = tmp_path / "open"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)
    led = Ledger(shared)
    assert led.root != shared and not (shared / "claims.json").exists()
    with led.claim("host", 1, what="x", wait_s=1, **_cap(10)):
        pass


def test_the_auditors_comparisons_claim_host_memory_and_wait_for_room(tmp_path, monkeypatch):
    """The outputs an audit reads back and compares in the auditor's own process are claimed on
    the host's line of the ledger, as a worker's memory is: with the host's share held by other
    processes' workers, the comparison waits (and says behind what) instead of reading beside
    them; its claim is sized by the largest output and the problem's dtype, and never more than
    the share."""
    import torch

    from hackscan.dynamic.budgets import COMPARE_BASE, Budgets, comparison_need

    assert comparison_need([4 << 20, 1 << 20], torch.float32) == (4 << 20) * 7 + COMPARE_BASE
    assert comparison_need([4 << 20], torch.float16) == (4 << 20) * 13 + COMPARE_BASE
    assert comparison_need([], None) == COMPARE_BASE
    b = Budgets(tmp_path, "cuda", root=tmp_path / "l")
    monkeypatch.setattr(Budgets, "host_capacity", lambda self: 1000)
    with b.comparing(400, "the comparisons of a.py"):
        assert b.ledger.held("host") == 400
    with b.comparing(10**9, "the comparisons of huge.py"):      # capped at the share: it never fails
        assert b.ledger.held("host") == 1000
    got = {}
    other = Ledger(tmp_path / "l")

    def compare_now():
        with b.comparing(400, "the comparisons of b.py") as c:
            got["claim"] = c

    with other.claim("host", 800, what="another process's worker", wait_s=5, **_cap(1000)):
        t = threading.Thread(target=compare_now)
        t.start()
        time.sleep(1.0)
        assert "claim" not in got                                  # no room beside the worker
    t.join(20)
    assert got["claim"].waited_s >= 0.5 and "another process's worker" in " ".join(got["claim"].behind)
    assert b.ledger.held("host") == 0
    cpu = Budgets(tmp_path, "cpu", root=tmp_path / "l2", memory_bytes=500)
    with cpu.comparing(10**9, "the comparisons of c.py"):          # a CPU run: the host's memory budget
        assert cpu.ledger.held("host") == 500
