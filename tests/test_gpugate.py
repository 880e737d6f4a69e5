"""Turns on a shared GPU: workers hold it shared, a worker that ran out of its memory beside
others runs again alone (the others finish first, new ones wait), and nothing changes on a CPU."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from hackscan.dynamic import gpugate
from hackscan.dynamic.runner import WorkerResult


@pytest.fixture(autouse=True)
def _own_locks(tmp_path, monkeypatch):
    monkeypatch.setattr(gpugate.tempfile, "gettempdir", lambda: str(tmp_path))


def _hold(log, name, alone, hold_s, started=None):
    with gpugate.gpu_turn("cuda", alone=alone, visible="0"):
        log.append(("in", name, time.monotonic()))
        if started is not None:
            started.set()
        time.sleep(hold_s)
        log.append(("out", name, time.monotonic()))


def test_workers_share_the_gpu():
    log: list = []
    ts = [threading.Thread(target=_hold, args=(log, k, False, 0.3)) for k in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    ins = [e for e in log if e[0] == "in"]
    first_out = min(e[2] for e in log if e[0] == "out")
    assert len(ins) == 3 and all(e[2] < first_out for e in ins), "all three held it at once"


def test_a_rerun_alone_waits_for_the_others_and_new_ones_wait_for_it():
    log: list = []
    held = threading.Event()
    a = threading.Thread(target=_hold, args=(log, "sharer", False, 0.6, held))
    a.start()
    held.wait(5)
    b = threading.Thread(target=_hold, args=(log, "alone", True, 0.4))
    b.start()
    time.sleep(0.2)                                   # "alone" now waits at the turnstile's far side
    c = threading.Thread(target=_hold, args=(log, "late", False, 0.1))
    c.start()
    for t in (a, b, c):
        t.join()
    order = [(kind, name) for kind, name, _ in log]
    assert order.index(("out", "sharer")) < order.index(("in", "alone")), order
    assert order.index(("out", "alone")) < order.index(("in", "late")), f"the late sharer ran beside the rerun: {order}"


def test_nothing_is_locked_on_a_cpu(tmp_path):
    with gpugate.gpu_turn("cpu", alone=True):
        with gpugate.gpu_turn("cpu", alone=True):
            pass
    assert not list(Path(tmp_path).glob("hackscan-gpu-*"))


def _res(error=None, steps=()):
    return WorkerResult(ok=error is None and not steps, error=error, data={"steps": list(steps)},
                        jobdir=Path("."), wall_s=0.0, returncode=0)


def test_out_of_memory_is_read_from_the_error_or_a_call():
    assert gpugate.ran_out_of_gpu_memory(_res("OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert gpugate.ran_out_of_gpu_memory(_res(steps=[{"set": "visible", "error": "AcceleratorError: CUDA error: out of memory"}]))
    assert not gpugate.ran_out_of_gpu_memory(_res("RuntimeError: shape mismatch"))
    assert not gpugate.ran_out_of_gpu_memory(_res(steps=[{"set": "visible"}]))


def test_a_worker_out_of_gpu_memory_runs_again_alone_once():
    from hackscan.dynamic.audit import DynamicOptions, DynamicSession

    s = DynamicSession(DynamicOptions(mode="all", device="cuda", seed=1))
    try:
        runs, cleared = [], []

        def run():
            runs.append(1)
            return _res("OutOfMemoryError: CUDA out of memory") if len(runs) == 1 else _res()
        res = s.run_on_device(run, before_rerun=lambda: cleared.append(1))
        assert res.ok and len(runs) == 2 and cleared == [1]
        assert "run again alone on the GPU" in res.data["events"][-1]
        # a second failure is the result: never a loop
        runs.clear()
        res = s.run_on_device(lambda: (runs.append(1), _res("CUDA out of memory"))[1])
        assert not res.ok and len(runs) == 2
        # on a CPU session nothing is rerun
        cpu = DynamicSession(DynamicOptions(mode="all", device="cpu", seed=1))
        runs.clear()
        res = cpu.run_on_device(lambda: (runs.append(1), _res("CUDA out of memory"))[1])
        cpu.close()
        assert len(runs) == 1
    finally:
        s.close()


OOM = ("OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.18 GiB "
       "of which 1.50 GiB is free. Including non-PyTorch memory, this process has 6.00 GiB memory in use.")


def test_what_a_worker_out_of_gpu_memory_needed_is_read_from_torchs_message():
    assert gpugate.gpu_memory_in_use(_res(OOM)) == int((8 << 30) * 1.25)
    assert gpugate.gpu_memory_in_use(_res(steps=[{"set": "visible", "error": OOM}])) == int((8 << 30) * 1.25)
    assert gpugate.gpu_memory_in_use(_res("OutOfMemoryError: CUDA out of memory")) is None


def test_a_worker_that_said_what_it_needs_runs_again_beside_the_others_not_alone(tmp_path, monkeypatch):
    """Its rerun waits on the machine's ledger only while claims of other audits leave too little
    room for it, and never holds the GPU alone: a sharer that does not fit beside it is not
    frozen for the rerun's whole run. The wait is recorded."""
    from hackscan.dynamic import budgets
    from hackscan.dynamic.audit import DynamicOptions, DynamicSession
    from hackscan.dynamic.ledger import Ledger

    monkeypatch.setenv("HACKSCAN_LEDGER", str(tmp_path / "ledger"))
    monkeypatch.setattr(budgets, "memory_capacity", lambda device: 20 << 30)
    s = DynamicSession(DynamicOptions(mode="all", device="cuda", seed=1))
    other = Ledger(tmp_path / "ledger")
    try:
        release = threading.Event()
        holding = threading.Event()

        def neighbour():   # another audit holds 15 GiB of the 20 until the rerun has waited a while
            res = s.budgets.memory_resource("0")
            with other.claim(res, 15 << 30, room=lambda h: (20 << 30) - h,
                             most=lambda h: 20 << 30, what="a neighbour", wait_s=30):
                holding.set()
                for _ in range(600):
                    if any(e.get("waiting") for e in other.entries(res)):
                        break
                    time.sleep(0.05)
                release.wait(0.8)
        t = threading.Thread(target=neighbour)
        t.start()
        holding.wait(5)
        monkeypatch.setattr(s, "worker_env", lambda: {"CUDA_VISIBLE_DEVICES": "0"})
        runs = []

        def run():
            runs.append(1)
            return _res(OOM) if len(runs) == 1 else _res()
        res = s.run_on_device(run)
        t.join(10)
        assert res.ok and len(runs) == 2
        assert "beside other audits once 10,737,418,240 bytes" in res.data["events"][-1], res.data["events"]
        turns = {w["turn"]: w for w in s.budgets.waits()}
        assert "gpu alone" not in turns
        assert turns["gpu:0"]["waited_s"] >= 0.5 and turns["gpu:0"]["behind"] == ["a neighbour (16,106,127,360 bytes)"]
    finally:
        s.close()


def test_a_rerun_that_runs_out_again_beside_the_others_ends_alone(tmp_path, monkeypatch):
    from hackscan.dynamic import budgets
    from hackscan.dynamic.audit import DynamicOptions, DynamicSession

    monkeypatch.setenv("HACKSCAN_LEDGER", str(tmp_path / "ledger"))
    monkeypatch.setattr(budgets, "memory_capacity", lambda device: 20 << 30)
    s = DynamicSession(DynamicOptions(mode="all", device="cuda", seed=1))
    try:
        runs = []

        def run():
            runs.append(1)
            return _res(OOM) if len(runs) < 3 else _res()
        res = s.run_on_device(run)
        assert res.ok and len(runs) == 3
        assert "alone on the GPU" in res.data["events"][-1]
        assert [w["turn"] for w in s.budgets.waits()][-1] == "gpu alone"
    finally:
        s.close()
