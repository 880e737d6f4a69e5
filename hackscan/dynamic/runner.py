"""Spawn a worker in a fresh interpreter with the protections the platform allows, and collect
what it wrote. A crash, hang, segfault, `os._exit`, `sys.exit` or exception at import becomes a
`WorkerResult` with `error` set; nothing here raises for the audited code's behaviour."""
from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from hackscan.dynamic import sandbox

WORKER = Path(__file__).with_name("worker")   # the package, copied into each job's folder
KEEP_ENV = ("PATH", "LANG", "LC_ALL", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH",
            "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "TRITON_INTERPRET", "TRITON_CACHE_DIR",
            "TORCH_EXTENSIONS_DIR", "MAX_JOBS", "TORCH_CUDA_ARCH_LIST", "OMP_NUM_THREADS", "PYTHONPATH")
CLONE_NEWNET = 0x40000000
CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 32, 4096, 16384, 1 << 18
MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
SKIP_RO = ("/proc", "/sys", "/dev")


@dataclass
class Limits:
    timeout_s: float = 120.0
    memory_bytes: int | None = 16 << 30     # address-space limit on CPU runs; CUDA needs none
    file_bytes: int = 1 << 30              # largest file the worker may write
    no_network: bool = True
    read_only_fs: bool = True               # everything but the scratch folder (and build caches) read-only
    writable: tuple[str, ...] = ()
    hide: tuple[str, ...] = ()              # folders shown empty to the worker (session work, build cache)
    read_only: tuple[str, ...] = ()         # folders under a hidden one shown read-only (the reference's shared inputs)


@dataclass
class WorkerResult:
    ok: bool
    error: str | None
    data: dict
    jobdir: Path
    wall_s: float
    returncode: int | None
    protections: list[str] = field(default_factory=list)
    stderr_tail: str = ""
    outdir: Path | None = None     # where its committed outputs are (a channel's), else jobdir


RESULT_MAX = 64 << 20   # a worker's result.json: records of every call, far below this


def read_regular(path: Path, max_bytes: int | None = None, tail: int | None = None) -> bytes:
    """The bytes of a file the audited code could have replaced, read only where it is a
    regular file and not a link (a named pipe would hang the auditor, /dev/zero or a sparse file
    fill its memory): at most `max_bytes` (nothing where it is larger), or the last `tail`
    bytes. Empty where it is missing or anything else."""
    import stat

    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            return b""
        if max_bytes is not None and st.st_size > max_bytes:
            return b""
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            if tail is not None:
                fh.seek(max(0, st.st_size - tail))
                return fh.read(tail)
            return fh.read(max_bytes if max_bytes is not None else -1)
    except OSError:
        return b""


def protections_available(limits: Limits, device: str) -> list[str]:
    """What the spawn itself sets up; what the namespaces and filters add is read off the
    running worker (sandbox.Watch)."""
    out = ["fresh interpreter (python -I)", "scratch working directory", "scrubbed environment",
           f"wall-clock timeout {limits.timeout_s:g}s", "process group killed at the end"]
    if sys.platform.startswith("linux"):
        if limits.memory_bytes and device == "cpu":
            out.append(f"address-space limit {limits.memory_bytes >> 20} MiB")
        out.append(f"file-size limit {limits.file_bytes >> 20} MiB")
    return out


def _preexec(limits: Limits, device: str, scratch: Path, basic: bool):
    """Limits for either engine; for the basic one, also the namespaces (as root), then the
    capabilities dropped, no new privileges and the seccomp filter, in that order (the filter
    refuses the mount and unshare calls the first steps make)."""
    def fn():
        os.setsid()
        if not sys.platform.startswith("linux"):
            return
        if limits.memory_bytes and device == "cpu":
            resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        cpu = int(limits.timeout_s * 4) + 10
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
        if not basic:
            return
        libc = sandbox.libc()
        if libc is None:
            return
        if os.geteuid() == 0:
            if limits.no_network:
                libc.unshare(CLONE_NEWNET)
            private = False
            if limits.read_only_fs:
                private = _read_only_except(libc, [scratch, *limits.writable])
                os.chdir(str(scratch))  # re-enter the scratch folder through its writable bind mount
            if libc.unshare(CLONE_NEWPID) == 0:
                _monitor_or_init(libc, private)
            sandbox.drop_capabilities(libc)
        sandbox.no_new_privs(libc)
        sandbox.install_seccomp(libc)
    return fn


def _monitor_or_init(libc, private_mounts: bool) -> None:
    """After unshare(CLONE_NEWPID), in the child of the auditor's fork: fork again. The child is
    the first process of the new PID namespace and goes on to run the worker; when it ends, the
    kernel kills every process left in that namespace (a helper the candidate started with
    `setsid`, which the process-group kill misses), so no process of the candidate outlives its
    worker to touch another worker's files or memory. With mounts of its own it gets a /proc of
    that namespace: other workers' processes are not there to open. The parent (the monitor,
    never judged as the worker: sandbox.Watch) holds no descriptor and no capability, and exits
    as the worker did."""
    pid = os.fork()
    if pid == 0:
        if private_mounts:
            libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
        return
    try:
        # the exec-error pipe of subprocess, the channel, stdout: the worker holds its own copies
        os.closerange(0, 1 << 16)
        sandbox.drop_capabilities(libc)
        sandbox.no_new_privs(libc)
        sandbox.install_seccomp(libc)
        while True:
            try:
                _, status = os.waitpid(pid, 0)
                break
            except InterruptedError:
                continue
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            signal.signal(sig, signal.SIG_DFL)
            os.kill(os.getpid(), sig)
        os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)
    finally:
        os._exit(1)


def _read_only_except(libc, writable: list) -> bool:
    """In a private mount namespace: bind each writable folder onto itself, then remount every
    other mount read-only. Failures leave the namespace as it is (the protection is reported
    only where it can be set up). True where the namespace is private."""
    if libc.unshare(CLONE_NEWNS) != 0:
        return False
    libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None)
    keep = []
    for w in writable:
        wb = str(w).encode()
        if libc.mount(wb, wb, None, MS_BIND | MS_REC, None) == 0:
            keep.append(str(w))
    try:
        mounts = [line.split()[4] for line in open("/proc/self/mountinfo")]
    except OSError:
        return True
    for m in mounts:
        if m.startswith(SKIP_RO) or any(m == k or m.startswith(k.rstrip("/") + "/") for k in keep):
            continue
        libc.mount(None, m.encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY, None)
    return True


def scrubbed_env(scratch: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: os.environ[k] for k in KEEP_ENV if k in os.environ}
    env.update({"HOME": str(scratch), "TMPDIR": str(scratch), "PYTHONDONTWRITEBYTECODE": "1",
                "PYTHONHASHSEED": "0"})
    env.update(extra or {})
    return env


@dataclass
class Spawned:
    proc: subprocess.Popen
    engine: str            # bwrap | basic
    why: str               # why not bubblewrap, where basic
    watch: "sandbox.Watch"
    timed_out: bool


def start(cmd: list[str], jobdir: Path, limits: Limits, device: str, env: dict[str, str], stdout, stderr,
          stdin=subprocess.DEVNULL, fds: tuple[int, ...] = ()) -> tuple[subprocess.Popen, str, str, "sandbox.Watch"]:
    """Start `cmd` inside the walls (sandbox.engine()): the process, the engine, why not
    bubblewrap, and the watch that reads the kernel's record of its process tree."""
    engine, why = sandbox.engine()
    writable = [str(jobdir), *(w for w in limits.writable if os.path.isdir(w))]
    fd = None
    if engine == "bwrap":
        cmd, fd = sandbox.bwrap_command(cmd, jobdir, writable[1:], list(limits.hide), limits.no_network, device,
                                        read_only=[r for r in limits.read_only if os.path.isdir(r)])
    try:
        proc = subprocess.Popen(cmd, cwd=jobdir, env=env, stdin=stdin, stdout=stdout, stderr=stderr,
                                pass_fds=((fd,) if fd is not None else ()) + tuple(fds),
                                preexec_fn=_preexec(limits, device, jobdir, engine == "basic"))
    finally:
        if fd is not None:
            os.close(fd)
    watch = sandbox.Watch(proc.pid, writable, hide_root=engine == "bwrap", launcher=cmd if engine == "bwrap" else None,
                          monitor=engine == "basic")
    return proc, engine, why, watch


def finish(proc: subprocess.Popen, watch, timeout_s: float) -> bool:
    """Wait for a started worker under the timeout while watching its tree, then kill whatever
    is left of it. True where it timed out."""
    try:
        return sandbox.wait_watching(proc, watch, timeout_s)
    finally:
        _kill_group(proc)
        proc.wait()


def spawn(cmd: list[str], jobdir: Path, limits: Limits, device: str, env: dict[str, str], stdout, stderr,
          feeder=None) -> Spawned:
    """Run `cmd` inside the walls, wait for it under the timeout while the auditor reads the
    kernel's record of its process tree, then kill whatever is left of it. With `feeder`
    (dynamic.feeder), the worker's end of its channel is passed to it and served meanwhile."""
    if feeder is not None:
        feeder.start()
    try:
        proc, engine, why, watch = start(cmd, jobdir, limits, device, env, stdout, stderr,
                                         fds=(feeder.child_fd,) if feeder is not None else ())
    finally:
        if feeder is not None:
            feeder.after_spawn()
    timed_out = finish(proc, watch, limits.timeout_s)
    return Spawned(proc, engine, why, watch, timed_out)


def worker_command(jobdir: Path, *extra: str) -> list[str]:
    """The worker's package copied into the job's folder, and the command that runs it there."""
    worker_copy = jobdir / "_worker.py"
    shutil.copytree(WORKER, jobdir / "_hsworker", ignore=shutil.ignore_patterns("__pycache__", "_entry.py"),
                    dirs_exist_ok=True)
    shutil.copy(WORKER / "_entry.py", worker_copy)
    return [sys.executable, "-I", "-X", "faulthandler", str(worker_copy), str(jobdir), *extra]


def write_job(jobdir: Path, job: dict, files: dict[str, Path]) -> None:
    for name, src in files.items():
        shutil.copy(src, jobdir / name)
    (jobdir / "job.json").write_text(json.dumps(job))


def run_worker(job: dict, files: dict[str, Path], limits: Limits, device: str = "cpu",
               env_extra: dict[str, str] | None = None, jobdir: Path | None = None,
               keep_jobdir: bool = True, feeder=None) -> WorkerResult:
    """Write the job into a fresh scratch folder, run the worker there, read result.json. With
    `feeder` the plan and its sets go through the channel, not the job (dynamic.feeder)."""
    jobdir = jobdir or Path(tempfile.mkdtemp(prefix=f"hackscan-{job['role']}-"))
    jobdir.mkdir(parents=True, exist_ok=True)
    if feeder is not None:
        job = with_channel(job, feeder.child_fd)
    write_job(jobdir, job, files)
    cmd = worker_command(jobdir)
    t0 = time.perf_counter()
    # stdout and stderr go to files: children the candidate leaves behind cannot hold a pipe open
    try:
        with open(jobdir / "_stdout.txt", "wb") as out, open(jobdir / "_stderr.txt", "wb") as errf:
            run = spawn(cmd, jobdir, limits, device, scrubbed_env(jobdir, env_extra), out, errf, feeder=feeder)
    finally:
        if feeder is not None:
            feeder.close()
    return through_channel(collect(run, jobdir, limits, device, time.perf_counter() - t0), feeder)


def with_channel(job: dict, fd: int) -> dict:
    """The job as a worker served by a channel reads it: no plan, no folder of input sets."""
    job = {k: v for k, v in job.items() if k != "plan"}
    job["channel"] = int(fd)
    return job


def through_channel(res: WorkerResult, feeder) -> WorkerResult:
    """The result with what the channel committed in place of what the worker's report says of
    its calls: the step records as they came, step by step (outputs in the feeder's folder), the
    tampering the worker's process saw, and an error where the worker broke the protocol or
    left steps unaccounted for."""
    if feeder is None:
        return res
    got = feeder.results()
    res.data["steps"] = got["steps"]
    res.data["channel"] = {k: got[k] for k in ("handed", "committed", "planned", "refused")}
    res.data["tampering"] = got["events"]
    if got["violation"]:
        # the worker's own loop keeps the protocol: a broken one is another voice in its process
        res.data["tampering"] = res.data["tampering"] + [f"spoke on the auditor's channel out of turn: "
                                                         f"{got['violation']}"[:300]]
    if got["windows"]:
        res.data["auditor_windows_s"] = got["windows"]
    res.outdir = feeder.outdir
    if res.ok and got["refused"]:
        res.ok, res.error = False, f"the worker broke the auditor's channel: {got['refused']}"
    elif res.ok and got["committed"] < got["planned"]:
        res.ok, res.error = False, (f"the worker committed {got['committed']} of the {got['planned']} steps it "
                                    "was planned: its run was cut short")
    return res


def collect(run: Spawned, jobdir: Path, limits: Limits, device: str, wall: float) -> WorkerResult:
    """The WorkerResult of a finished worker: its result.json, read as the audited code's
    output (a regular file of bounded size), and how it ended."""
    proc, engine, why, watch, timed_out = run.proc, run.engine, run.why, run.watch, run.timed_out
    tail = read_regular(jobdir / "_stderr.txt", tail=3000).decode("utf-8", "replace")
    data: dict = {}
    raw = read_regular(jobdir / "result.json", max_bytes=RESULT_MAX)
    if raw:
        try:
            data = json.loads(raw)
        except ValueError:
            data = {}
        if not isinstance(data, dict):
            data = {}
    error = None
    if timed_out and data.get("ok"):
        # the work finished and reported, but the process would not exit: threads or
        # children left running past the call
        data["left_running"] = True
    elif timed_out:
        error = f"timed out after {limits.timeout_s:g}s (hang, infinite loop or a kernel that never returns)"
    elif _signal_of(proc.returncode, engine) is not None:
        sig = _signal_of(proc.returncode, engine)
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        error = f"worker killed by {name}" + (" (memory limit)" if name in ("SIGKILL", "SIGSEGV") and "MemoryError" in tail
                                               else "")
    elif not data:
        error = f"worker exited with code {proc.returncode} without a result (os._exit, a crash or a fault)"
    elif not data.get("ok"):
        error = data.get("error") or "worker reported failure"
    prot = protections_available(limits, device) + watch.protections()
    prot.append("sandbox: bubblewrap" if engine == "bwrap" else f"sandbox: basic ({why})" if why else "sandbox: basic")
    iso = data.get("isolation") or {}
    if iso.get("no_network") is False:
        prot = [p for p in prot if not p.startswith("no network")]
    if iso and not iso.get("fs_read_only_outside_scratch"):
        prot = [p for p in prot if not p.startswith("filesystem read-only")]
    return WorkerResult(ok=error is None, error=error, data=data, jobdir=jobdir, wall_s=wall,
                        returncode=proc.returncode, protections=prot, stderr_tail=tail)


def _signal_of(returncode: int | None, engine: str) -> int | None:
    """The signal that ended the worker: Popen's negative code, or, under bubblewrap (which
    exits with 128 + the signal of the process it ran), that."""
    if returncode is None:
        return None
    if returncode < 0:
        return -returncode
    if engine == "bwrap" and 128 < returncode <= 128 + 64:
        return returncode - 128
    return None


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass
