"""The walls around a worker, attacked from inside as a root-capable candidate would, under each
engine this machine can run; and the auditor's own reading of what held."""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hackscan.dynamic import sandbox
from hackscan.dynamic.runner import Limits, scrubbed_env, spawn

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandboxes")

ATTACKS = r'''
import ctypes, json, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
auditor = AUDITOR
out = {}
out["ptrace_attach_auditor"] = libc.ptrace(16, auditor, 0, 0)          # PTRACE_ATTACH
out["ptrace_traceme"] = libc.ptrace(0, 0, 0, 0)
class IOV(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
buf = ctypes.create_string_buffer(16)
local, remote = IOV(ctypes.addressof(buf), 16), IOV(0x400000, 16)
out["process_vm_readv"] = libc.process_vm_readv(auditor, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
out["unshare_mount"] = libc.unshare(0x00020000)
out["setns"] = libc.setns(0, 0x40000000)
out["mount_remount_root_rw"] = libc.mount(None, b"/", None, 32 | 4096, None)
class RLIM(ctypes.Structure):
    _fields_ = [("cur", ctypes.c_ulong), ("max", ctypes.c_ulong)]
old = RLIM()
out["prlimit_auditor"] = libc.prlimit(auditor, 0, None, ctypes.byref(old))   # read the auditor's CPU limit
import resource
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))                                 # its own: still allowed
out["own_setrlimit"] = 0
def readable(p):
    try:
        with open(p, "rb") as fh:
            fh.read(64)
        return True
    except OSError:
        return False
out["auditor_environ"] = readable("/proc/%d/environ" % auditor)
out["auditor_mem"] = readable("/proc/%d/mem" % auditor)
try:
    os.kill(auditor, 0); out["signal_auditor"] = True
except OSError:
    out["signal_auditor"] = False
def writes(p):
    try:
        with open(p, "w") as fh:
            fh.write("x")
        os.unlink(p)
        return True
    except OSError:
        return False
out["write_outside"] = writes(OUTSIDE)
out["write_via_proc_root"] = writes("/proc/1/root" + OUTSIDE)
out["sibling_listing"] = sorted(os.listdir(HIDDEN)) if os.path.isdir(HIDDEN) else None
out["sibling_secret"] = readable(os.path.join(HIDDEN, "other", "secret.txt"))
# a descendant that leaves the process group and outlives the worker, then writes
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(2.0)
        open(os.path.join(os.getcwd(), "survivor.txt"), "w").write("alive")
        os._exit(0)
    os._exit(0)
time.sleep(0.6)       # long enough for the auditor to sample
print(json.dumps(out))
'''


def engines():
    out = ["basic"]
    if sandbox.bwrap_status(sandbox.bwrap_binary())[0]:
        out.append("bwrap")
    return out


def _attack(tmp_path: Path, engine: str, monkeypatch):
    monkeypatch.setenv(sandbox.ENGINE_ENV, engine)
    sandbox.harden_auditor()
    root = tmp_path / "session"
    job = root / "cand"
    other = root / "other"
    job.mkdir(parents=True)
    other.mkdir()
    (other / "secret.txt").write_text("reference outputs")
    outside = tmp_path / "outside.txt"
    code = (ATTACKS.replace("AUDITOR", str(os.getpid())).replace("OUTSIDE", repr(str(outside)))
            .replace("HIDDEN", repr(str(root))))
    limits = Limits(timeout_s=60, memory_bytes=None, hide=(str(root),))
    with open(job / "out.txt", "wb") as fo, open(job / "err.txt", "wb") as fe:
        run = spawn([sys.executable, "-I", "-c", code], job, limits, "cpu", scrubbed_env(job), fo, fe)
    text = (job / "out.txt").read_text()
    assert run.proc.returncode == 0 and text, (job / "err.txt").read_text()
    return run, json.loads(text.splitlines()[-1]), job, outside


@pytest.mark.parametrize("engine", engines())
def test_attacks_from_inside_the_worker_fail(tmp_path, engine, monkeypatch):
    run, seen, job, outside = _attack(tmp_path, engine, monkeypatch)
    # the seccomp filter and the dropped capabilities, whoever runs the auditor
    for call in ("ptrace_attach_auditor", "ptrace_traceme", "process_vm_readv", "unshare_mount", "setns",
                 "mount_remount_root_rw", "prlimit_auditor"):
        assert seen[call] == -1, (call, seen)
    prot = run.watch.protections()
    assert "no new privileges" in prot and any(p.startswith("seccomp filter") for p in prot), prot
    if os.geteuid() == 0 or engine == "bwrap":
        assert not seen["write_outside"] and not seen["write_via_proc_root"], seen
        assert not outside.exists()
        assert not seen["auditor_mem"], seen
        assert "no capabilities" in prot and any(p.startswith("filesystem read-only") for p in prot), prot
    if engine == "bwrap" or os.geteuid() == 0:
        # the auditor is in another PID namespace: no file of it, no signal to it (the basic
        # engine as root mounts a /proc of the worker's own namespace)
        assert not seen["auditor_environ"] and not seen["signal_auditor"], seen
        assert any(p.startswith("own PID namespace") for p in prot), prot
    if engine == "bwrap":
        assert seen["sibling_listing"] == ["cand"] and not seen["sibling_secret"], seen
        assert any(p.startswith("own PID namespace") for p in prot) and "own user namespace" in prot, prot


@pytest.mark.parametrize("engine", engines())
def test_a_descendant_that_leaves_the_process_group_dies_with_the_worker_or_is_not_claimed(tmp_path, engine,
                                                                                          monkeypatch):
    run, _, job, _ = _attack(tmp_path, engine, monkeypatch)
    time.sleep(3.0)      # the survivor writes 2 s after its start
    prot = run.watch.protections()
    if engine == "bwrap" or os.geteuid() == 0:
        # bubblewrap, and the basic engine as root (a PID namespace whose first process is the worker)
        assert not (job / "survivor.txt").exists()
        assert any(p.startswith("own PID namespace") for p in prot), prot
    else:
        # the basic engine without root has no PID namespace: it never claims to kill every descendant
        assert not any(p.startswith("own PID namespace") for p in prot), prot


def test_the_watch_claims_nothing_for_an_unwalled_process():
    """The auditor's reading, not the engine's intent: a plain child has none of the walls."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.8)"])
    watch = sandbox.Watch(proc.pid, ["/nonexistent"], hide_root=False)
    sandbox.wait_watching(proc, watch, 30)
    assert watch.samples >= 1
    prot = watch.protections()
    assert not any(p.startswith(("own", "no network", "seccomp", "no new", "filesystem")) for p in prot), prot
    if os.geteuid() == 0:
        assert "no capabilities" not in prot, prot     # an ordinary user's process has none anyway


def test_bubblewraps_own_setup_processes_are_not_judged_but_the_worker_is():
    """Bubblewrap loads the seccomp filter just before it runs the worker: a sample taken while
    a process still runs bubblewrap's command line is not a reading of the audited code."""
    launcher = [sys.executable, "-c", "import time; time.sleep(5)", "setup"]
    worker = [sys.executable, "-c", "import time; time.sleep(5)", "worker"]
    setup = subprocess.Popen(launcher)
    other = subprocess.Popen(worker)
    try:
        # both have run their exec (a busy machine may take a while)
        for proc, argv in ((setup, launcher), (other, worker)):
            want = b"\0".join(a.encode() for a in argv) + b"\0"
            deadline = time.monotonic() + 30
            while Path(f"/proc/{proc.pid}/cmdline").read_bytes() != want and time.monotonic() < deadline:
                time.sleep(0.01)
        skipped = sandbox.Watch(setup.pid, [], hide_root=False, launcher=launcher)
        skipped.sample()
        judged = sandbox.Watch(other.pid, [], hide_root=False, launcher=launcher)
        judged.sample()
    finally:
        setup.kill()
        other.kill()
        setup.wait()
        other.wait()
    assert skipped.samples == 0 and skipped.protections() == []
    assert judged.samples == 1 and not any(p.startswith("seccomp") for p in judged.protections())


def test_a_watch_without_a_sample_claims_nothing():
    w = sandbox.Watch(2**22 + 12345, [], hide_root=False)
    w.sample()
    assert w.samples == 0 and w.protections() == []


def test_seccomp_program_refuses_the_listed_calls_and_other_abis():
    prog = sandbox.seccomp_program()
    if prog is None:
        pytest.skip("seccomp program written for x86-64 only")
    ins = [struct.unpack("=HBBI", prog[i:i + 8]) for i in range(0, len(prog), 8)]

    def run(arch, nr, arg0=0):   # a tiny classic-BPF interpreter for this program's instructions
        pc, acc = 0, 0
        data = {0: nr, 4: arch, 16: arg0 & 0xFFFFFFFF, 20: arg0 >> 32}
        while True:
            code, jt, jf, k = ins[pc]
            if code == sandbox.BPF_LD_W_ABS:
                acc = data[k]
                pc += 1
            elif code == sandbox.BPF_JEQ_K:
                pc += 1 + (jt if acc == k else jf)
            elif code == sandbox.BPF_JGE_K:
                pc += 1 + (jt if acc >= k else jf)
            elif code == sandbox.BPF_RET_K:
                return k
            else:
                raise AssertionError(code)

    deny = sandbox.SECCOMP_RET_ERRNO | sandbox.EPERM
    x86 = sandbox.AUDIT_ARCH_X86_64
    for name, nr in sandbox.DENIED_X86_64.items():
        assert run(x86, nr) == deny, name
    for nr in (0, 1, 2, 9, 56, 57, 59, 231, 257):     # read write open mmap clone fork execve exit_group openat
        assert run(x86, nr) == sandbox.SECCOMP_RET_ALLOW, nr
    assert run(0x40000003, 26) == deny                  # i386 ptrace through int 0x80
    assert run(x86, 0x40000000 | 101) == deny           # x32 ABI
    # prlimit64: on the caller itself (pid 0, how glibc's setrlimit calls it) only
    assert run(x86, sandbox.PRLIMIT64_X86_64, 0) == sandbox.SECCOMP_RET_ALLOW
    assert run(x86, sandbox.PRLIMIT64_X86_64, 4242) == deny
    assert run(x86, sandbox.PRLIMIT64_X86_64, 1 << 32) == deny


def test_the_auditor_is_not_dumpable_once_a_session_starts():
    torch = pytest.importorskip("torch")  # noqa: F841 - the session needs it
    code = ("import ctypes; from hackscan.dynamic.audit import DynamicOptions, DynamicSession;"
            "s = DynamicSession(DynamicOptions()); libc = ctypes.CDLL(None);"
            "print(libc.prctl(3, 0, 0, 0, 0)); s.close()")      # PR_GET_DUMPABLE
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.strip().splitlines()[-1] == "0", out.stderr


def test_other_audits_folders_in_the_temporary_folder_are_not_shown_to_the_worker(tmp_path, monkeypatch):
    """A red team's candidate listed the machine's /tmp from inside the worker and read what lay
    there: another hackscan process's work folder (its references' input sets and outputs, when
    audits run side by side on one machine) is there too, and only this session's own was hidden.
    Under bubblewrap every worker sees the temporary folders empty but for its own folders (and
    the Python that runs it, where that lies there)."""
    if not sandbox.bwrap_status(sandbox.bwrap_binary())[0]:
        pytest.skip("bubblewrap does not run here")
    import tempfile

    monkeypatch.setenv(sandbox.ENGINE_ENV, "bwrap")
    planted = Path(tempfile.mkdtemp(prefix="hackscan-dyn-another-"))
    try:
        (planted / "outputs.txt").write_text("another audit's reference outputs")
        job = tmp_path / "cand"
        job.mkdir()
        code = ("import json, os, sys\n"
                f"p = {str(planted / 'outputs.txt')!r}\n"
                "print(json.dumps({'seen': os.path.exists(p),\n"
                "                  'listing': sorted(os.listdir(os.path.dirname(os.path.dirname(p))))}))\n")
        limits = Limits(timeout_s=60, memory_bytes=None, hide=(str(tmp_path / "session"),))
        with open(job / "out.txt", "wb") as fo, open(job / "err.txt", "wb") as fe:
            run = spawn([sys.executable, "-I", "-c", code], job, limits, "cpu", scrubbed_env(job), fo, fe)
        assert run.proc.returncode == 0, (job / "err.txt").read_text()
        seen = json.loads((job / "out.txt").read_text().splitlines()[-1])
        assert not seen["seen"] and planted.name not in seen["listing"], seen
        # the same worker outside the walls reads it: the test can fail
        plain = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True)
        assert json.loads(plain.stdout.splitlines()[-1])["seen"]
    finally:
        import shutil

        shutil.rmtree(planted, ignore_errors=True)
