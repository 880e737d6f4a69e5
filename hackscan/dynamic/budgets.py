"""What one audit's workers may take of the machine, claimed on the machine-wide ledger
(dynamic.ledger) so that every hackscan process on it sees the others' promises:

- disk: a worker's budget for the files it writes (a reference's input sets and outputs, a
  candidate's outputs), a share of the disk that is free and not promised to a running worker
  of any process, or what its outputs need where that is known;
- builds: two cores per extension build (MAX_JOBS=2), so that every process's builds together run at most
  as many compilers as the machine has cores;
- host memory on a GPU run: what each worker keeps on the host (its input-set cache, the sets
  and outputs on their way to disk), so that workers of every process together stay within it;
- memory: a problem's working set on the device its workers run on (a GPU's memory, the host's
  on a CPU run): its input sets' bytes times the worker's factor (MEMORY_FACTOR, the check the
  reference's worker makes before it draws anything). A problem whose working set is not known
  yet claims a sixteenth of the machine's; its reference run, where the set is larger, stops
  before drawing, says how large, and is run again with what it needs (waiting for room).

The machine's memory capacity is fixed (90% of a GPU's total, half of the host's), never what
happens to be free: audits beside it used to shrink every later problem's budget until a
full-size one was refused ("8x that exceeds the 26 GB budget") where it fits alone. Only a need
larger than the capacity fails, and its error names the resource and both sizes.

Each claim's wait is recorded (`waits()`, per thread: the audit in flight) and goes into the
audit's record (`dynamic.waits`)."""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import threading
from pathlib import Path

from hackscan.dynamic.ledger import Claim, NeverFits, WaitedTooLong, ledger

MEMORY_FACTOR = 8           # the worker's own check: inputs x this must fit the memory budget
UNKNOWN_SHARE = 16          # an unknown problem's first claim: this fraction of the capacity
DISK_FLOOR = 1 << 30        # a worker's disk budget is at least this, room allowing
DISK_SLACK = 512 << 20      # beside what a candidate's outputs need (logs, the build's objects)

__all__ = ["Budgets", "Claim", "NeverFits", "WaitedTooLong", "MEMORY_FACTOR", "memory_capacity", "memory_need",
           "refused_for_memory"]


def memory_capacity(device: str) -> int:
    """What one machine has for problems' working sets: 90% of the (first) GPU's total memory,
    or half of the host's physical memory; 8 GiB where neither can be read."""
    try:
        if device == "cuda":
            import torch

            if torch.cuda.is_available():
                return int(torch.cuda.get_device_properties(0).total_memory * 0.9)
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError, RuntimeError, AssertionError):
        return 8 << 30


# the auditor's memory for one candidate's comparisons beyond its outputs, for small ones
COMPARE_BASE = 64 << 20


def comparison_need(out_bytes: list[int], dtype) -> int:
    """What one candidate's comparisons hold in the auditor at once: its largest output read back,
    and three float64 copies of that size (the candidate's, the reference's and their difference:
    hackscan.dynamic.compare), one set at a time."""
    elem = getattr(dtype, "itemsize", None) or 4
    largest = max(out_bytes, default=0)
    return largest + 3 * largest * 8 // elem + COMPARE_BASE


def memory_need(input_bytes: int) -> int:
    return int(input_bytes) * MEMORY_FACTOR


_INPUTS_TAKE = re.compile(r"inputs take ([\d,]+) bytes; \d+x that exceeds")


def refused_for_memory(error: str | None) -> int | None:
    """The input bytes a reference worker named when it stopped for its memory budget, or None."""
    m = _INPUTS_TAKE.search(error or "")
    return int(m.group(1).replace(",", "")) if m else None


class Budgets:
    """One session's claims on the machine's ledger. `wait_s` bounds every wait: the longest
    a holder can keep a claim is its worker's timeout."""

    def __init__(self, work: Path, device: str, *, memory_bytes: int | None = None,
                 disk_bytes: int | None = None, wait_s: float = 900.0, root: Path | None = None):
        self.work, self.device = Path(work), device
        self.memory_opt, self.disk_opt, self.wait_s = memory_bytes, disk_bytes, wait_s
        self.ledger = ledger(root)
        self._capacity: int | None = None
        self._local = threading.local()

    # ---- records --------------------------------------------------------------------
    def waits(self) -> list[dict]:
        """This thread's claims since `reset_waits` (the audit in flight), each with its wait."""
        got = getattr(self._local, "waits", None)
        if got is None:
            got = self._local.waits = []
        return got

    def reset_waits(self) -> None:
        self._local.waits = []

    def note(self, record: dict) -> None:
        self.waits().append(record)

    # ---- resources -------------------------------------------------------------------
    def disk_resource(self) -> str:
        try:
            return f"disk:{os.stat(self.work).st_dev}"
        except OSError:
            return "disk:?"

    def memory_resource(self, visible: str | None = None) -> str:
        if self.device != "cuda":
            return "host"
        key = re.sub(r"[^0-9A-Za-z,-]", "_", visible or os.environ.get("CUDA_VISIBLE_DEVICES") or "all")[:64]
        return f"gpu:{key}"

    def capacity(self) -> int:
        """The memory a problem's working set may ever take here (the option, where given)."""
        if self.memory_opt:
            return int(self.memory_opt)
        if self._capacity is None:
            self._capacity = memory_capacity(self.device)
        return self._capacity

    def _free_disk(self) -> int:
        try:
            return shutil.disk_usage(self.work).free
        except OSError:
            return 64 << 30

    # ---- claims ----------------------------------------------------------------------
    @contextlib.contextmanager
    def disk(self, share: int = 8, need: int | None = None, what: str = "a worker"):
        """Bytes one worker may write, promised machine-wide while it runs: 1/share of the free
        disk not promised to a running worker of any hackscan process (at least DISK_FLOOR where
        the disk has it), or `need` + DISK_SLACK where that is less. A user's budget is taken as
        given (recorded, never waited for)."""
        res = self.disk_resource()
        bounded = not self.disk_opt
        if bounded:
            free = self._free_disk()
            held = self.ledger.held(res)
            n = max(DISK_FLOOR, (free - held) // share)
            if need is not None:
                n = min(n, max(0, int(need)) + DISK_SLACK)
            n = min(n, max(0, free + held))
        else:
            n = int(self.disk_opt)

        # promised bytes already written are counted twice (in `held` and gone from `free`): room
        # errs on the side of waiting, and a claim alone on the disk gets all there is
        def room(held: int) -> int:
            return self._free_disk() - held if bounded else 1 << 62

        def most(held: int) -> int:   # a disk share is never refused: it waits, or runs alone
            return max(self._free_disk() + held, n) if bounded else 1 << 62

        with self.ledger.claim(res, n, room=room, most=most, what=what, wait_s=self.wait_s) as c:
            self.note(c.record())
            yield n

    @contextlib.contextmanager
    def memory(self, need: int, what: str, visible: str | None = None):
        """Hold `need` bytes of the device's memory (a GPU's, or the host's on a CPU run) while a
        worker runs; NeverFits where it exceeds the capacity."""
        cap = self.capacity()
        with self.ledger.claim(self.memory_resource(visible), need, room=lambda held: cap - held,
                               most=lambda held: cap, what=what, wait_s=self.wait_s) as c:
            self.note(c.record())
            yield c

    @contextlib.contextmanager
    def build_slot(self, what: str, cores_each: int = 2):
        """`cores_each` of the machine's cores for an extension build, machine-wide: builds of
        every hackscan process on the machine together never run more compilers than it has
        cores (torch's inline extension is two sources, the binding and the kernels, compiled
        side by side; its waits are recorded as the turn `builds`)."""
        cores = os.cpu_count() or 1
        each = min(cores, cores_each)
        with self.ledger.claim("builds", each, room=lambda held: cores - held, most=lambda held: cores,
                               what=what, wait_s=self.wait_s) as c:
            self.note(c.record())
            yield c

    def host_capacity(self) -> int:
        """Host memory for the workers of a GPU run (their input-set caches, the sets and outputs
        on their way to and from disk): 60% of the host's physical memory (the auditor keeps the
        reference outputs it holds in a quarter)."""
        try:
            return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * 0.6)
        except (ValueError, OSError):
            return 8 << 30

    @contextlib.contextmanager
    def host(self, key: str, what: str):
        """On a GPU run, the host memory one worker of problem `key` takes, claimed machine-wide:
        four of its input sets and 512 MiB (a set drawn, one written, one cached, one loaded),
        or a sixteenth of the host's share until the problem's sets are known. Yields the bytes
        the worker may keep input sets in (half the claim), or None on a CPU run, where the
        working set's claim (`memory`) already counts the host's memory."""
        if self.device != "cuda":
            yield None
            return
        cap = self.host_capacity()
        got = self.ledger.need_of(key).get("input_bytes")
        need = min(cap, 4 * got + (512 << 20) if isinstance(got, int) and got >= 0 else cap // UNKNOWN_SHARE)
        with self.ledger.claim("host", need, room=lambda held: cap - held, most=lambda held: cap,
                               what=what, wait_s=self.wait_s) as c:
            self.note(c.record())
            yield max(256 << 20, need // 2)

    @contextlib.contextmanager
    def comparing(self, need: int, what: str):
        """The auditor's own memory while it compares a candidate's outputs with the reference's
        (each output read back from its file, with the comparison's temporaries), claimed on the
        host's line of the machine-wide ledger like a worker's: audits side by side never read
        more outputs at once than the host holds. Capped at the host's share (a comparison reads
        one output at a time, and never waits for room it could never get)."""
        cap = self.host_capacity() if self.device == "cuda" else self.capacity()
        need = max(0, min(int(need), cap))
        with self.ledger.claim("host", need, room=lambda held: cap - held, most=lambda held: cap,
                               what=what, wait_s=self.wait_s) as c:
            self.note(c.record())
            yield c

    def known_need(self, key: str) -> int | None:
        """A problem's working set as an earlier run (any process) learned it, or None."""
        got = self.ledger.need_of(key).get("input_bytes")
        return memory_need(got) if isinstance(got, int) and got >= 0 else None

    def first_claim(self, key: str) -> int:
        """What a problem's reference claims before its run: its known working set, else a
        sixteenth of the capacity; the user's budget where one was given."""
        if self.memory_opt:
            return self.capacity()
        known = self.known_need(key)
        return min(self.capacity(), known if known is not None else self.capacity() // UNKNOWN_SHARE)

    def learn(self, key: str, input_bytes: int | None) -> None:
        if isinstance(input_bytes, int) and input_bytes >= 0:
            self.ledger.learn(key, input_bytes=input_bytes)

