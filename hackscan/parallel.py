"""Where batches of work run: a local process pool (the default) or Ray tasks (`--backend ray`,
the optional extra `ray`).

Both take a picklable function and an iterable of arguments and yield `(argument, result)` for
every argument, in input order, with a bounded number of batches in flight (a dataset of any size is never held
in memory). A batch that fails as a whole (its task timed out, its worker died twice, it raised)
yields a `BatchFailure` in its place, which callers turn into one error per item: the run goes
on and nothing already computed is lost.

Ray specifics:
- `address=None` starts (or joins, inside a Ray job) a local instance; "auto" or
  "ray://host:10001" joins a cluster.
- GPU work asks for `num_gpus` per task (1 for dynamic audits on CUDA) and runs each task in a
  fresh worker process (`max_calls=1`): no CUDA context, allocator state or leaked thread of one
  task meets the next. Static work (parsing only, never running the audited code) reuses
  worker processes, as a local pool does.
- A task that runs past `timeout_s` is cancelled (`ray.cancel(force=True)` kills its worker);
  a task whose worker dies is retried once (`max_retries=1`), then reported.
"""
from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator


@dataclass
class BatchFailure:
    """A whole batch failed; `reason` is one line."""
    reason: str


def die_with_parent() -> None:
    """In a pool worker: on Linux, the kernel kills it when its parent dies (a killed `hackscan
    clean` leaves no workers running on for minutes); elsewhere nothing."""
    import signal
    import sys

    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class LocalBackend:
    """`jobs` processes (spawned, so no state of the parent leaks in), or the calling process
    itself when jobs is 1."""

    name = "local"

    def __init__(self, jobs: int = 1):
        self.jobs = max(1, jobs)
        self._ex = None

    def map(self, fn: Callable, items: Iterable, window: int | None = None) -> Iterator:
        if self.jobs == 1:
            for x in items:
                yield x, _call(fn, x)
            return
        if self._ex is None:
            import multiprocessing as mp
            from concurrent.futures import ProcessPoolExecutor

            self._ex = ProcessPoolExecutor(max_workers=self.jobs, mp_context=mp.get_context("spawn"),
                                           initializer=die_with_parent)
        pending: deque = deque()
        window = window or 2 * self.jobs
        for x in items:
            pending.append((x, self._ex.submit(_call, fn, x)))
            if len(pending) >= window:
                x0, fut = pending.popleft()
                yield x0, _result(fut)
        while pending:
            x0, fut = pending.popleft()
            yield x0, _result(fut)

    def close(self) -> None:
        if self._ex is not None:
            self._ex.shutdown(cancel_futures=True)
            self._ex = None


def _call(fn, x):
    try:
        return fn(x)
    except Exception as e:  # noqa: BLE001 - reported per batch, the run goes on
        return BatchFailure(f"{type(e).__name__}: {e}"[:500])


def _result(fut):
    try:
        return fut.result()
    except Exception as e:  # noqa: BLE001 - a pool process died (BrokenProcessPool) and the like
        return BatchFailure(f"{type(e).__name__}: {e}"[:500])


class RayBackend:
    """Batches as Ray tasks. `jobs` bounds the tasks in flight (default: the cluster's CPUs, or
    its GPUs for GPU work)."""

    name = "ray"

    def __init__(self, jobs: int | None = None, *, address: str | None = None, num_gpus: float = 0,
                 timeout_s: float | None = None, fresh_process: bool | None = None, retries: int = 1,
                 num_cpus_local: int | None = None):
        try:
            import ray
        except ImportError:
            from hackscan.install import hint

            raise RuntimeError(f"--backend ray needs Ray: {hint('ray')}") from None
        self.ray = ray
        if not ray.is_initialized():
            kw = {"address": address} if address else {"num_cpus": num_cpus_local or jobs or os.cpu_count()}
            # the auditor's own modules must be importable on the workers: local instances share
            # this interpreter's path; a cluster needs hackscan installed on its nodes
            ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False, **kw)
            self._started = True
        else:
            self._started = False
        res = ray.cluster_resources()
        self.num_gpus = num_gpus
        slots = int(res.get("GPU", 0) // num_gpus) if num_gpus else int(res.get("CPU", 1))
        self.jobs = max(1, jobs or slots)
        if num_gpus and slots < 1:
            raise RuntimeError(f"--backend ray: GPU work asks for {num_gpus} GPU per task and the Ray "
                               f"cluster has {res.get('GPU', 0):g}")
        self.timeout_s = timeout_s
        self.fresh = bool(num_gpus) if fresh_process is None else fresh_process
        self.retries = retries

    def map(self, fn: Callable, items: Iterable, window: int | None = None) -> Iterator:
        ray = self.ray
        opts = {"num_cpus": 1, "max_retries": self.retries, "retry_exceptions": False}
        if self.num_gpus:
            opts["num_gpus"] = self.num_gpus
        if self.fresh:
            opts["max_calls"] = 1
        task = ray.remote(**opts)(_call)
        pending: deque = deque()
        window = window or self.jobs
        for x in items:
            pending.append((x, task.remote(fn, x), time.monotonic()))
            if len(pending) >= window:
                x0, ref, t = pending.popleft()
                yield x0, self._get(ref, t)
        while pending:
            x0, ref, t = pending.popleft()
            yield x0, self._get(ref, t)

    def _get(self, ref, submitted: float):
        ray = self.ray
        try:
            if self.timeout_s is None:
                return ray.get(ref)
            left = max(0.0, self.timeout_s - (time.monotonic() - submitted))
            ready, _ = ray.wait([ref], timeout=left)
            if not ready:
                ray.cancel(ref, force=True)
                return BatchFailure(f"Ray task timed out after {self.timeout_s:g}s and was cancelled")
            return ray.get(ref)
        except Exception as e:  # noqa: BLE001 - worker died twice, task cancelled, object lost
            return BatchFailure(f"Ray task failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:500])

    def close(self) -> None:
        if self._started:
            self.ray.shutdown()
            self._started = False


def make_backend(name: str, jobs: int | None, *, gpu: bool = False, address: str | None = None,
                 timeout_s: float | None = None):
    if name == "local":
        return LocalBackend(jobs or 1)
    if name == "ray":
        return RayBackend(jobs, address=address, num_gpus=1 if gpu else 0, timeout_s=timeout_s)
    raise ValueError(f"unknown backend {name!r} (local or ray)")
