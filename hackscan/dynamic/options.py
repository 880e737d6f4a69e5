"""The dynamic layer's options (DynamicOptions) and the GPUs a session may spread its audits
over."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import torch

from hackscan.dynamic import check_dtype


@dataclass
class DynamicOptions:
    mode: str = "auto"          # auto | all
    device: str = "cpu"
    timeout_s: float = 180.0
    memory_budget_bytes: int | None = None   # None: from the device's free memory (host memory on a CPU)
    disk_budget_bytes: int | None = None     # per worker; None: a share of the free disk (disk_budget)
    seed: int | None = None     # secret per-audit seed; drawn fresh when None
    policy: str = "kernelbench"
    # kept for callers of earlier versions, and checked: ghost replay no longer rebuilds CUDA
    # kernels (it poisons what every launch of the candidate's own writes, in the main run, at no
    # build cost), so "suspects", "always" and "never" now do the same
    cuda_ghost: str = "suspects"
    # fair measurement after the audit: "off", "survivors" (verdict clean or suspect) or "all"
    measure: str = "off"
    measure_budget_s: float = 10.0   # each worker's timed loop
    measure_compile: bool = False    # a torch.compile'd reference as a third baseline
    # the problem run in this floating dtype: every floating input and both models cast to it
    # (KernelBench's `precision`); None: the dtypes the reference's get_inputs and modules make
    dtype: str | None = None
    # the one GPU every worker runs on, as an index into this process's visible devices (the
    # evaluator's `device=1`); None: the default device, or one per concurrent audit where
    # several are visible
    gpu: int | None = None
    measure_min_reps: int = 10       # timed calls at least, however soon the median is known
    # the profiled call (and the plain call next to it) in a worker of its own beside the main
    # one: a process's first profiler session costs seconds of CUPTI set-up, which then overlaps
    # the main worker's calls. "gpu": on a CUDA device, for problems of at most PROFILE_BESIDE_BYTES
    # (two processes hold the problem); "always"; "never": in the main worker, last. "never"
    # unless HACKSCAN_PROFILE_BESIDE says otherwise, until the real-kernel set has been re-run
    # with it on a GPU (verdicts must not move for the speed)
    profile_beside: str = field(default_factory=lambda: os.environ.get("HACKSCAN_PROFILE_BESIDE", "never"))
    # candidate workers kept started ahead of their jobs (hackscan.dynamic.pool; bubblewrap only):
    # interpreter, torch, the device's context and the profiler's set-up done before a job comes
    prestart: int = field(default_factory=lambda: int(os.environ.get("HACKSCAN_PRESTART") or 0))
    # the protections of the evidence (dynamic.feeder, worker.guard), on unless a test turns one
    # off to show what it stops: without the channel every input set is a file the candidate's
    # worker can read (such a run verifies nothing: `unverified`); without the guard the worker's
    # modules stay in sys.modules and no audit hook watches
    channel: bool = True
    guard: bool = True

    def __post_init__(self):
        check_dtype(self.dtype)


def _listed_gpus() -> list[str] | None:
    """This process's CUDA_VISIBLE_DEVICES entries, or None where it is not set; the list ends at
    the first entry that is not a device (CUDA's own rule)."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is None:
        return None
    out = []
    for t in (t.strip() for t in env.split(",") if t.strip()):
        if t.startswith("-"):
            break
        out.append(t)
    return out


def prepare_threads() -> int:
    """Threads a reference worker may use to draw its problem's input sets: every candidate of the
    problem waits for them, and a full-size problem's fourteen sets took minutes on one thread.
    Half of the cores this process may run on, at most eight (audits beside it keep the rest)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(8, cores // 2))


def visible_gpus() -> list[str]:
    """The GPUs this process may use, as CUDA_VISIBLE_DEVICES entries (its own list where it is
    set); empty where there are fewer than two (nothing to spread over)."""
    out = _listed_gpus()
    if out is None:
        try:
            out = [str(i) for i in range(torch.cuda.device_count())]
        except Exception:  # noqa: BLE001 - no driver
            out = []
    return out if len(out) > 1 else []


def gpu_entry(index: int) -> str:
    """The CUDA_VISIBLE_DEVICES entry of device `index` as this process numbers its devices (the
    index-th entry of its own list where one is set)."""
    if index < 0:
        raise ValueError(f"a GPU index is 0 or more, not {index}")
    ids = _listed_gpus()
    if ids is None:
        return str(index)
    if index >= len(ids):
        raise ValueError(f"GPU {index} is not visible (CUDA_VISIBLE_DEVICES={os.environ['CUDA_VISIBLE_DEVICES']!r})")
    return ids[index]
