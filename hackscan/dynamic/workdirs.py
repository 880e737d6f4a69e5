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
import shutil
import tempfile
import time
from pathlib import Path

LOCK = ".owner.lock"
PREFIX = "hackscan-dyn-"
YOUNG_S = 60.0   # a folder this new may not hold its lock yet


class WorkDir:
    """A fresh working folder under the temporary folder, owned while this object is open."""

    def __init__(self, prefix: str = PREFIX, root: str | None = None):
        self.path = Path(tempfile.mkdtemp(prefix=prefix, dir=root))
        self._fh = open(self.path / LOCK, "w")   # held open for the folder's life
        fcntl.flock(self._fh, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def close(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
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
            if not d.is_dir() or d.is_symlink() or now - d.stat().st_mtime < YOUNG_S or not lock.is_file():
                continue
            with open(lock, "a") as fh:
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    continue        # its owner is alive
                shutil.rmtree(d, ignore_errors=True)
                gone.append(d)
        except OSError:
            continue
    return gone
