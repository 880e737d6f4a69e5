"""A candidate worker started before its job (hackscan.dynamic.pool): what every candidate's
worker does first, done while no job is waiting, then the job taken from the auditor.

Before the job: torch imported, the device's context made, and a first profiler session run
around a kernel of our own (CUPTI's one-time set-up took 3.5-4.8 s of an H200 audit's profiled
call; a session that records nothing is not used as the warm-up: one public report has an empty
first session leave later sessions blind). Nothing of the candidate's exists yet: the process
has run only this package. After the job arrives, it runs exactly as a fresh worker does, once;
a worker is never handed a second job."""
from __future__ import annotations

import json
import os
import sys
import time


def prestart(device: str, profile: bool = True, meta: bool = False) -> dict:
    """The warm-up, timed: {"torch_s", "device_s", "profiler_s", "profiler_kernels": n} (or
    `profiler_error`); without `profile` (a measurement's worker), no profiler session. With
    `meta` (a worker that may be handed a reference's job), also `meta_s`: see _warm_meta."""
    info: dict = {}
    t0 = time.perf_counter()
    import torch

    info["torch_s"] = round(time.perf_counter() - t0, 3)
    t0 = time.perf_counter()
    if device == "cuda":
        torch.zeros(1, device="cuda")
        torch.cuda.synchronize()
    info["device_s"] = round(time.perf_counter() - t0, 3)
    if meta:
        t0 = time.perf_counter()
        _warm_meta(torch, info)
        info["meta_s"] = round(time.perf_counter() - t0, 3)
    t0 = time.perf_counter()
    if not profile:
        return _ready(info)
    try:
        from torch.autograd import DeviceType
        from .profiler import kineto_profile

        with kineto_profile(torch, device) as prof:
            x = torch.ones(256, device=device if device == "cuda" else "cpu")
            (x * 2).sum()
            if device == "cuda":
                torch.cuda.synchronize()
        events = list(prof.kineto_results.events())
        want = DeviceType.CUDA if device == "cuda" else DeviceType.CPU
        info["profiler_kernels"] = sum(1 for e in events if e.device_type() == want)
        del prof
    except Exception as e:  # noqa: BLE001 - the job's own profiled call says what it sees
        info["profiler_error"] = f"{type(e).__name__}: {e}"[:300]
    info["profiler_s"] = round(time.perf_counter() - t0, 3)
    return _ready(info)


def _warm_meta(torch, info: dict) -> None:
    """A reference's input preparation first draws its inputs on the meta device to learn their
    shapes (inputs._prepare). There randn and randint run PyTorch's Python references, whose
    first call imports the symbolic-shapes machinery and sympy (0.3-0.6 s on a 2-core CPU machine).
    On the H200 every reference's input preparation had a fixed part of about 2 s (its
    `reference_inputs_s` 1.9-3.5 s where its slowest set took under 0.1 s), inside a
    measurement's device lock; this import is the part of it found on the CPU. Done here, while
    no job waits; nothing of the problem's is known or run."""
    try:
        with torch.device("meta"):
            torch.randn(2, 2)
            torch.randint(0, 2, (2,))
            torch.rand(2)
    except Exception as e:  # noqa: BLE001 - the job's own draw says what fails
        info["meta_error"] = f"{type(e).__name__}: {e}"[:300]


def _ready(info: dict) -> dict:
    try:   # in its own folder: the auditor's sign that this worker is ready (Pool.ready)
        with open("_ready.json", "w") as fh:
            json.dump(info, fh)
    except OSError:
        pass
    return info


def handoff(info: dict) -> bool:
    """Wait for the auditor's word on stdin (one JSON line, once the job's files are in place),
    then apply it: the job's variables (its build folder, its Triton cache), links that show
    the slot's copy of its build folder at the path the build was made under (inside the
    sandbox's empty view of the build cache, private to this process), and the job's file-size
    limit (lower than the pool's: a limit is only ever lowered). False where the auditor closed
    the pipe without a job."""
    t0 = time.perf_counter()
    line = sys.stdin.readline()
    info["waited_s"] = round(time.perf_counter() - t0, 3)
    if not line.strip():
        return False
    msg = json.loads(line)
    os.environ.update({str(k): str(v) for k, v in (msg.get("env") or {}).items()})
    for link, target in (msg.get("links") or {}).items():
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(target, link)
    limit = msg.get("file_bytes")
    if limit:
        try:
            import resource

            _soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
            new = min(int(limit), hard) if hard != resource.RLIM_INFINITY else int(limit)
            resource.setrlimit(resource.RLIMIT_FSIZE, (new, new))
        except (ImportError, ValueError, OSError):
            pass
    return True
