"""Working folders of dynamic audits, and the sweep of those whose owner died.

An audit's folder holds a problem's input sets (8 GiB each on full-size problems). An auditor
killed hard (SIGKILL, `os._exit`, a lost machine) cannot remove it, and a few such folders fill
the disk under the next audits. Each folder therefore holds an owner lock: an exclusive
`flock` on `.owner.lock` kept by the open file of the process that made it. The kernel drops
the lock when that process ends, however it ends, so a folder whose lock can be taken has no
owner and goes. Folders without the lock file (another tool's, an older hackscan's) are left.

Hand-written rather than from a library: tempfile's own cleanup runs only in a process that
exits normally, and the lock needs nothing beyond fcntl (no pid files: pids are reused)."""
from __future__ import annotations

import fcntl
import os
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path

LOCK = ".owner.lock"
PREFIX = "hackscan-dyn-"
YOUNG_S = 60.0   # a folder this new may not hold its lock yet


def remove_tree(path: str | os.PathLike) -> bool:
    """Remove a folder that audited code may have filled, never following a link out of it and
    never raising; True when it is gone.

    A candidate's scratch folder may hold anything: a tree thousands of levels deep (shutil's
    rmtree recurses and raises RecursionError, which `ignore_errors` does not cover), folders it
    made unreadable or unwritable, FIFOs, links to places outside. shutil.rmtree goes first (it
    removes what it can without following links); what it leaves is opened up (chmod u+rwx, which
    does not follow links either) and removed by coreutils' rm, whose fts walk has no depth
    limit. Hand-written around both because neither alone covers every case, and a folder left
    behind must never stop a later audit."""
    p = Path(path)
    try:
        if not os.path.lexists(p):
            return True
        if p.is_symlink() or not stat.S_ISDIR(os.lstat(p).st_mode):
            p.unlink()
            return True
        try:
            shutil.rmtree(p, ignore_errors=True)
        except RecursionError:
            pass
        if not os.path.lexists(p):
            return True
        for cmd in (["chmod", "-R", "u+rwx", "--", str(p)], ["rm", "-rf", "--one-file-system", "--", str(p)]):
            subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=600, check=False)
        return not os.path.lexists(p)
    except (OSError, ValueError, subprocess.SubprocessError, RecursionError):
        return False


class WorkDir:
    """A fresh working folder under the temporary folder, owned while this object is open."""

    def __init__(self, prefix: str = PREFIX, root: str | None = None):
        self.path = Path(tempfile.mkdtemp(prefix=prefix, dir=root))
        self._fh = open(self.path / LOCK, "w")   # held open for the folder's life
        fcntl.flock(self._fh, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def close(self) -> None:
        remove_tree(self.path)
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def sweep(prefix: str = PREFIX, root: str | None = None) -> list[Path]:
    """Remove the working folders whose owner has died; return them."""
    gone = []
    base = Path(root or tempfile.gettempdir())
    now = time.time()
    try:
        entries = list(base.glob(prefix + "*"))
    except OSError:
        return gone
    for d in entries:
        lock = d / LOCK
        try:
            if not d.is_dir() or d.is_symlink() or now - d.stat().st_mtime < YOUNG_S or lock.is_symlink() \
                    or not lock.is_file():
                continue
            # O_NONBLOCK: a FIFO put in the lock's place must not hang the next auditor's start
            fd = os.open(lock, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "a") as fh:
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    continue        # its owner is alive
                remove_tree(d)
                gone.append(d)
        except (OSError, ValueError, RecursionError):
            continue
    return gone
