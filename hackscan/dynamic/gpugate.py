"""Turns on a shared GPU. Audits side by side share a GPU's memory; a worker that ran out of it
there (a full-size reference beside three others held 130 of 139 GiB on the H200) is run again
alone: every other worker on that GPU finishes first and no new one starts until it is done.

File locks in the temporary folder that every hackscan process on the machine shares (held by
the open file: a process that dies gives its hold back). Linux's flock prefers no one, so a
turnstile keeps a stream of new sharers from starving a worker that waits to run alone. The
standard library has no reader-writer lock across processes; flock is what the host-memory turn
(audit.host_memory_turn) already uses."""
from __future__ import annotations

import contextlib
import fcntl
import os
import re
import tempfile
from pathlib import Path


def _paths(visible: str | None) -> tuple[Path, Path]:
    key = re.sub(r"[^0-9A-Za-z,-]", "_", visible or os.environ.get("CUDA_VISIBLE_DEVICES") or "all")[:64]
    base = Path(tempfile.gettempdir())
    return base / f"hackscan-gpu-{key}.turn", base / f"hackscan-gpu-{key}.lock"


@contextlib.contextmanager
def gpu_turn(device: str, alone: bool = False, visible: str | None = None):
    """Hold the GPU shared (the default) or alone while a worker runs on it; nothing on a CPU.
    `visible` names the GPUs the worker sees (its CUDA_VISIBLE_DEVICES), this process's where None.
    Yields a reader of how long the turn was waited for."""
    if device != "cuda":
        yield lambda: 0.0
        return
    import time

    t0 = time.monotonic()
    waited = [0.0]
    turn, main = _paths(visible)
    with open(turn, "a+") as t, open(main, "a+") as m:
        if alone:
            fcntl.flock(t, fcntl.LOCK_EX)    # new sharers wait here from now on
            try:
                fcntl.flock(m, fcntl.LOCK_EX)
                waited[0] = time.monotonic() - t0
                try:
                    yield lambda: waited[0]
                finally:
                    fcntl.flock(m, fcntl.LOCK_UN)
            finally:
                fcntl.flock(t, fcntl.LOCK_UN)
        else:
            fcntl.flock(t, fcntl.LOCK_EX)    # through the turnstile: none waits to run alone
            fcntl.flock(t, fcntl.LOCK_UN)
            fcntl.flock(m, fcntl.LOCK_SH)
            waited[0] = time.monotonic() - t0
            try:
                yield lambda: waited[0]
            finally:
                fcntl.flock(m, fcntl.LOCK_UN)


_OOM = re.compile(r"CUDA out of memory|CUDA error: out of memory|OutOfMemoryError|cudaErrorMemoryAllocation")


def _errors(res) -> list[str]:
    """A worker's error and its calls' errors."""
    return [res.error or ""] + [str(s.get("error", "")) for s in res.data.get("steps", []) if isinstance(s, dict)]


def ran_out_of_gpu_memory(res) -> bool:
    """Whether a worker's run failed for GPU memory: its error, or a call's."""
    return any(_OOM.search(t) for t in _errors(res))


_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
_TRIED = re.compile(r"Tried to allocate ([\d.]+) (B|KiB|MiB|GiB|TiB)")
_IN_USE = re.compile(r"this process has ([\d.]+) (B|KiB|MiB|GiB|TiB) memory in use")


def gpu_memory_in_use(res) -> int | None:
    """What a worker that ran out of GPU memory needed, from PyTorch's message: the memory its
    process had in use plus the allocation that failed (a quarter more, for what follows it);
    None where the message does not say both."""
    for text in _errors(res):
        tried, used = _TRIED.search(text), _IN_USE.search(text)
        if tried and used:
            need = float(tried.group(1)) * _UNITS[tried.group(2)] + float(used.group(1)) * _UNITS[used.group(2)]
            return int(need * 1.25)
    return None
