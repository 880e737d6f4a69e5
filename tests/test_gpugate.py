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
