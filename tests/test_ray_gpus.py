"""Placement over several GPUs, checked where no GPU exists: a local Ray instance declares four
GPUs it does not have, and `--backend ray`'s GPU tasks (one GPU each, a fresh process each) must
each get exactly one of them, in CUDA_VISIBLE_DEVICES as the audit's workers inherit it, never two
tasks on one GPU at once, and all four used."""
from __future__ import annotations

import os
import sys
import time

import pytest

ray = pytest.importorskip("ray")

from hackscan.parallel import RayBackend  # noqa: E402

FAKE_GPUS = 4


@pytest.fixture(scope="module", autouse=True)
def ray_with_fake_gpus():
    if ray.is_initialized():
        ray.shutdown()
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ray.init(num_cpus=FAKE_GPUS, num_gpus=FAKE_GPUS, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    yield
    ray.shutdown()


def _placement(k):
    start = time.monotonic()
    time.sleep(1.0)
    return {"k": k, "pid": os.getpid(), "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "ids": [str(i) for i in ray.get_gpu_ids()], "start": start, "end": time.monotonic()}


def test_gpu_tasks_each_get_one_gpu_and_never_share_it():
    b = RayBackend(num_gpus=1)
    assert b.jobs == FAKE_GPUS and b.fresh
    got = [r for _, r in b.map(_placement, range(3 * FAKE_GPUS))]
    assert [r["k"] for r in got] == list(range(3 * FAKE_GPUS))
    for r in got:
        # what the audit's workers inherit (runner.KEEP_ENV passes CUDA_VISIBLE_DEVICES on)
        assert len(r["ids"]) == 1 and r["visible"] == r["ids"][0], r
    assert {r["visible"] for r in got} == {str(i) for i in range(FAKE_GPUS)}
    assert len({r["pid"] for r in got}) == len(got), "a fresh process per GPU task"
    # lengths of time, measured on one machine: two tasks running at once are on two GPUs
    for a in got:
        for c in got:
            if a["k"] < c["k"] and a["start"] < c["end"] and c["start"] < a["end"]:
                assert a["visible"] != c["visible"], (a, c)


def test_the_gpu_ray_gives_a_task_reaches_the_audits_workers(monkeypatch, tmp_path):
    """Inside a task, the session sees one GPU (no spreading of its own) and its workers get
    that one."""
    from hackscan.dynamic.audit import visible_gpus
    from hackscan.dynamic.runner import scrubbed_env

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    assert visible_gpus() == []
    assert scrubbed_env(tmp_path)["CUDA_VISIBLE_DEVICES"] == "3"


def test_gpu_work_asking_for_more_gpus_than_the_cluster_has_is_refused():
    with pytest.raises(RuntimeError, match="GPU"):
        RayBackend(num_gpus=FAKE_GPUS + 1)
