"""Candidate workers started ahead of their jobs: a warm audit does not wait for an interpreter,
torch, the device's context and the profiler's first-session set-up (hackscan.dynamic.worker.
prestart), which took most of a small candidate's worker on an H200.

Each pooled worker is single use and runs inside the same walls as a fresh one. Its folders
are its own (a slot): the job folder (writable), a build folder (writable) and an inputs folder
(read-only), bound when it starts, before any job is known. When a job comes:

- the candidate's files and job go into the job folder;
- the problem's shared files (init inputs, parameters, state) are hard-linked into the inputs
  folder (no copy; the folder is read-only inside the sandbox, so the links cannot be written
  through); its input sets never go there: they come one step at a time over the channel the
  worker was started with (dynamic.feeder), whose auditor's end the job's feeder takes;
- the candidate's keyed build folder is copied into the build folder, and the worker is told to
  show it at the keyed path (a link inside its private, empty view of the build cache): torch's
  extension builds record absolute paths, and a build seen at another path would be rebuilt.

Only with bubblewrap (its views of the work folder and the build cache are empty and private
to the worker); with the basic engine every worker starts fresh. A candidate whose extension
is not built yet starts fresh too (its build goes to the keyed folder as before)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections import deque
from dataclasses import replace
from pathlib import Path

from hackscan.dynamic import feeder as feeding, sandbox
from hackscan.dynamic.workdirs import remove_tree
from hackscan.dynamic.runner import (Limits, Spawned, WorkerResult, _kill_group, collect, finish, scrubbed_env, start,
                                     through_channel, with_channel, worker_command, write_job)

# variables a job sets in its worker at hand-off; every other variable is the pool's
JOB_VARIABLES = ("TORCH_EXTENSIONS_DIR", "TRITON_CACHE_DIR")


def available() -> bool:
    return sandbox.engine()[0] == "bwrap"


class Prestarted:
    """One worker started in a slot of its own under `root`, waiting for its job on stdin."""

    def __init__(self, root: Path, limits: Limits, device: str, env: dict[str, str], profile: bool = True):
        self.slot = Path(tempfile.mkdtemp(prefix="pool-", dir=root))
        self.jobdir, self.build, self.inputs = (self.slot / n for n in ("job", "build", "inputs"))
        for d in (self.jobdir, self.build, self.inputs):
            d.mkdir()
        self.device, self.env = device, dict(env)
        self.limits = replace(limits, writable=(str(self.build),), read_only=(str(self.inputs),))
        # a worker of a measurement's pool (no profiler session) may be handed the reference's
        # job: it warms what that job's input preparation needs (worker.prestart._warm_meta)
        cmd = worker_command(self.jobdir, "--wait", device, *(() if profile else ("noprofile", "meta")))
        self._out = open(self.jobdir / "_stdout.txt", "wb")
        self._err = open(self.jobdir / "_stderr.txt", "wb")
        # its channel to the auditor (dynamic.feeder), made before anything runs in it: a job
        # served by a feeder takes the auditor's end at hand-off
        self.chan, right = feeding.pair()
        self.chan_fd = right.fileno()
        try:
            self.proc, self.engine, self.why, self.watch = start(
                cmd, self.jobdir, self.limits, device, scrubbed_env(self.jobdir, self.env), self._out, self._err,
                stdin=subprocess.PIPE, fds=(self.chan_fd,))
        finally:
            right.close()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def ready(self) -> bool:
        """Whether its warm-up is done (it wrote `_ready.json` in its folder)."""
        return self.alive() and (self.jobdir / "_ready.json").exists()

    def fits(self, env: dict[str, str], limits: Limits) -> bool:
        """Whether a job with these variables and limits can run here: the same variables but
        the job's own, the same hidden folders, device limits and network rule."""
        mine = {k: v for k, v in self.env.items() if k not in JOB_VARIABLES}
        theirs = {k: v for k, v in env.items() if k not in JOB_VARIABLES}
        return (mine == theirs and set(limits.hide) == set(self.limits.hide)
                and limits.no_network == self.limits.no_network and limits.memory_bytes == self.limits.memory_bytes
                and limits.timeout_s <= self.limits.timeout_s and limits.file_bytes <= self.limits.file_bytes)

    def stage(self, job: dict, build_dir: Path | None) -> tuple[dict, dict[str, str]]:
        """The job's inputs linked into the slot and its build copied there: the job as this
        worker reads it, and the links it is to make. Raises OSError where the slot cannot be
        filled (the caller then starts a fresh worker)."""
        src = job.get("inputs_dir")
        if src:
            for dirpath, _dirs, names in os.walk(src):
                rel = os.path.relpath(dirpath, src)
                os.makedirs(self.inputs / rel, exist_ok=True)
                for n in names:
                    os.link(os.path.join(dirpath, n), self.inputs / rel / n)
            job = dict(job, inputs_dir=str(self.inputs))
        links = {}
        if build_dir is not None:
            # copy2 keeps the times that ninja compares; links stay links
            shutil.copytree(build_dir, self.build, symlinks=True, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("lock"))
            links[str(build_dir)] = str(self.build)
        return job, links

    def run(self, job: dict, files: dict[str, Path], limits: Limits, env: dict[str, str],
            links: dict[str, str], gate=None, feeder=None) -> WorkerResult:
        """Hand the job over and wait for it under the job's timeout, counted from the hand-off.
        With `gate` (a lock; the job has `device_gate`), the worker first runs until it asks for
        the device, then waits for the lock, which is held until it ends: the timeout counts
        each part apart, never the wait for the lock."""
        if feeder is not None:
            feeder.adopt(self.chan, self.chan_fd)
            self.chan = None
            job = with_channel(job, self.chan_fd)
            feeder.start()
        write_job(self.jobdir, job, files)
        msg = {"env": {k: env[k] for k in JOB_VARIABLES if k in env}, "links": links, "file_bytes": limits.file_bytes}
        t0 = time.perf_counter()
        self._say(json.dumps(msg), close=gate is None)
        try:
            if gate is None:
                timed_out = finish(self.proc, self.watch, limits.timeout_s)
            else:
                timed_out = self._gated(gate, limits.timeout_s)
        finally:
            self._close_files()
            if feeder is not None:
                feeder.close()
        run = Spawned(self.proc, self.engine, self.why, self.watch, timed_out)
        return through_channel(collect(run, self.jobdir, limits, self.device, time.perf_counter() - t0), feeder)

    def _say(self, line: str | None, close: bool) -> None:
        try:
            if line is not None:
                self.proc.stdin.write((line + "\n").encode())
                self.proc.stdin.flush()
            if close:
                self.proc.stdin.close()
        except (BrokenPipeError, OSError, ValueError):
            pass   # a worker that died waiting: collect() says how it ended

    def _gated(self, gate, timeout_s: float) -> bool:
        """Wait (watching the worker) until it asks for the device in its folder or ends; then,
        holding `gate`, give it the word and wait for the rest under a timeout of its own. A
        worker that ends or runs out its time before it asks never gets the device."""
        asked = self.jobdir / "_gate.json"
        end = time.monotonic() + timeout_s
        while self.proc.poll() is None and not asked.exists() and time.monotonic() < end:
            sandbox.wait_watching(self.proc, self.watch, min(0.1, max(0.0, end - time.monotonic())))
        if self.proc.poll() is not None or not asked.exists():
            self._say(None, close=True)
            return finish(self.proc, self.watch, max(0.0, end - time.monotonic()))
        with gate:
            self._say("go", close=True)
            return finish(self.proc, self.watch, timeout_s)

    def _close_files(self) -> None:
        for fh in (self._out, self._err):
            try:
                fh.close()
            except OSError:
                pass

    def close(self) -> None:
        try:
            if self.proc.stdin and not self.proc.stdin.closed:
                self.proc.stdin.close()
        except OSError:
            pass
        _kill_group(self.proc)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        self._close_files()
        if self.chan is not None:
            self.chan.close()
            self.chan = None
        remove_tree(self.slot)


class Pool:
    """Up to `size` workers kept started; `take()` hands out one that fits and has its
    replacement started at once.

    Workers are started by one thread of the pool's own that lives as long as the pool:
    bubblewrap's --die-with-parent kills a worker when the *thread* that started it ends, and
    audits take workers from short-lived threads (a profiled call's executor beside the main run)."""

    def __init__(self, size: int, root: Path, limits: Limits, device: str, env: dict[str, str],
                 profile: bool = True):
        self.size, self.root, self.limits, self.device, self.env = size, root, limits, device, dict(env)
        self.profile = profile
        self._idle: deque[Prestarted] = deque()
        self._lock = threading.Lock()
        self._want = threading.Event()
        self._closed = False
        self.started = self.taken = 0
        self._thread = threading.Thread(target=self._starter, name="hackscan-pool", daemon=True)
        self._thread.start()
        self.fill()

    def _starter(self) -> None:
        while True:
            self._want.wait()
            self._want.clear()
            with self._lock:
                if self._closed:
                    return
                while len(self._idle) < self.size:
                    try:
                        self._idle.append(Prestarted(self.root, self.limits, self.device, self.env, self.profile))
                        self.started += 1
                    except OSError:
                        break

    def fill(self) -> None:
        """Have the pool's thread start workers up to `size`."""
        self._want.set()

    def take(self, env: dict[str, str], limits: Limits) -> Prestarted | None:
        # the pool's thread starts a worker in well under a second (a Popen): a worker it is
        # starting now is further on than a fresh one would be
        end = time.monotonic() + 5.0
        while not self._idle and not self._closed and time.monotonic() < end:
            time.sleep(0.01)
        found = None
        with self._lock:
            for pw in list(self._idle):
                if not pw.alive():
                    self._idle.remove(pw)
                    pw.close()
                elif found is None and pw.fits(env, limits):
                    self._idle.remove(pw)
                    found = pw
        if found is not None:
            self.taken += 1
            self.fill()
        return found

    def wait_ready(self, timeout_s: float) -> bool:
        """Wait until every kept worker has finished its warm-up (benchmarks time an audit that
        finds one ready, as a loop that feeds the pool slower than it refills does)."""
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            with self._lock:
                if len(self._idle) >= self.size and all(w.ready() for w in self._idle):
                    return True
            time.sleep(0.05)
        return False

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = list(self._idle), deque()
        self._want.set()
        self._thread.join(timeout=30)
        for pw in idle:
            pw.close()
