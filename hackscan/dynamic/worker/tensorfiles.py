"""Tensor files: outputs and input sets written in hackscan's raw format within the disk budget,
and the input sets read back as they are needed, within the host's memory."""
from __future__ import annotations

import json
import os

from .common import _cast, _infile, _tensor_bytes, _tree_map


# where outputs go: the auditor's channel where the job has one (worker.channel), else files
SINK = {"channel": None, "sent": set()}


class _LazySets(dict):
    """Input sets loaded from disk right before their first use, and kept while they fit in
    `cap` bytes of host memory: the least recently used go first (a full-size problem's fifteen
    sets of 8 GiB each must not all stay in host memory; the one in use always does). A set
    dropped here is read again from disk when a later step names it."""

    def __init__(self, torch, jobdir, cap: int | None = None):
        super().__init__()
        self._torch, self._dir = torch, jobdir
        self._cap = host_cache_bytes() if cap is None else cap
        self._bytes: dict = {}
        self.reloads = 0
        self._loaded: set = set()

    def __getitem__(self, name):
        value = super().__getitem__(name)
        if name in self._bytes:    # most recently used last
            self._bytes[name] = self._bytes.pop(name)
        return value

    def _read(self, name):
        return self._torch.load(_infile(self._dir, f"in_{name}.pt"), weights_only=True)

    def has(self, name) -> bool:
        return name in self or os.path.exists(_infile(self._dir, f"in_{name}.pt"))

    def __missing__(self, name):
        value = self._read(name)
        if name in self._loaded:
            self.reloads += 1
        self._loaded.add(name)
        size = _tensor_bytes(self._torch, value)
        for old in list(self._bytes):
            if sum(self._bytes.values()) + size <= self._cap:
                break
            self.pop(old, None)
            self._bytes.pop(old)
        self[name] = value
        self._bytes[name] = size
        return value


class _FedSets(_LazySets):
    """Input sets handed over by the auditor's channel, each only with the step that uses it
    (worker.channel): a set this process was not given yet cannot be read, and none is named."""

    def __init__(self, torch, jobdir, cap, channel):
        super().__init__(torch, jobdir, cap)
        self._channel = channel
        self._missing: set = set()

    def _read(self, name):
        fh = self._channel.input_set(name)
        if fh is None:
            self._missing.add(name)
            raise KeyError(name)
        with fh:
            return self._torch.load(fh, weights_only=True)

    def has(self, name) -> bool:
        if name in self:
            return True
        if name in self._missing:
            return False
        try:
            self[name]
        except KeyError:
            return False
        return True


def host_cache_bytes() -> int:
    """How much host memory a worker keeps loaded input sets in: an eighth of what the host has
    available when the worker starts (several audits run side by side), at least 256 MiB."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return max(256 << 20, int(line.split()[1]) * 1024 // 8)
    except OSError:
        pass
    return 1 << 30


_RAW_DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool",
               "complex64", "complex128")


# outputs written by this worker, by the SHA-256 of their header and bytes: a call whose outputs
# are byte for byte those of an earlier call (a deterministic kernel called again on the same
# inputs, the reference's second call) names the earlier file instead of writing another. A
# full-size problem's fifteen calls on the visible inputs took fifteen times its outputs' disk,
# and the sets after them were skipped for want of it. (The candidate's own process writes these
# files and its report, hash or not: a file named twice proves no more and no less than two.)
_WRITTEN: dict = {}
_KINDS: set = set()      # the dtypes and shapes of outputs of 1 MiB or more written so far
_SHARE_MIN = 1 << 20     # below this, outputs are written again: a lookup saves no disk worth having
# outputs this small are kept past the disk budget (above the disk's floor): a loss's scalar after
# an 8 GiB visible set that took the budget on its own is the only thing the set can be checked by
_SMALL = 64 << 10


def _save_outputs(torch, outs, stem, required: bool = False) -> str:
    """Outputs in the raw format hackscan/dynamic/tensorfile.py reads (a JSON header, then each
    tensor's bytes, 64-byte aligned), faster to write and read than torch.save's zip archive with
    its checksum. Outputs it cannot hold (nested containers, strings, other dtypes) go through
    torch.save. Returns the file's name: an earlier file's where an earlier call of this worker
    wrote the same bytes (_WRITTEN). `required` outputs (the first call on the visible inputs),
    like small ones, are kept past the worker's disk budget where the disk has room above its floor."""
    need = sum(o.numel() * o.element_size() for o in outs if isinstance(o, torch.Tensor))
    budgeted = not (required or need <= _SMALL)
    # an earlier file can hold these bytes only where an earlier call returned the same dtypes and
    # shapes: otherwise the disk is checked before the outputs are copied to host memory and hashed
    kinds = repr([(str(o.dtype), tuple(o.shape)) if isinstance(o, torch.Tensor) else type(o).__name__ for o in outs])
    share = need >= _SHARE_MIN and kinds in _KINDS
    if need >= _SHARE_MIN:
        _KINDS.add(kinds)
    if not share:
        _disk_guard(os.path.dirname(stem), need, budgeted=budgeted)
    header, blobs, off = [], [], 0
    for o in outs:
        if isinstance(o, torch.Tensor) and str(o.dtype).replace("torch.", "") in _RAW_DTYPES:
            t = o.detach().contiguous().cpu()
            raw = t.reshape(-1).view(torch.uint8).numpy() if t.numel() else b""
            n = t.numel() * t.element_size()
            header.append({"t": str(t.dtype).replace("torch.", ""), "shape": list(t.shape), "offset": off, "nbytes": n})
            blobs.append((raw, n))
            off += -(-n // 64) * 64
        elif o is None or isinstance(o, (bool, int, float)) and not isinstance(o, torch.Tensor):
            header.append({"v": o})
        else:
            if share:
                _disk_guard(os.path.dirname(stem), need, budgeted=budgeted)
            if SINK["channel"] is not None:
                import io

                buf = io.BytesIO()
                torch.save(outs, buf)
                SINK["channel"].output(os.path.basename(stem) + ".pt", [buf.getbuffer()], buf.tell())
                SINK["sent"].add(os.path.basename(stem) + ".pt")
            else:
                torch.save(outs, stem + ".pt")
            return os.path.basename(stem) + ".pt"
    head = json.dumps(header).encode()
    digest = None
    if need >= _SHARE_MIN:
        import hashlib

        h = hashlib.sha256(head)
        for raw, n in blobs:
            if n:
                h.update(memoryview(raw))
        digest = h.hexdigest()
        earlier = _WRITTEN.get(digest)
        if share and earlier is not None and (earlier in SINK["sent"] if SINK["channel"] is not None
                                              else os.path.isfile(os.path.join(os.path.dirname(stem), earlier))):
            return earlier
    if share:
        _disk_guard(os.path.dirname(stem), need, budgeted=budgeted)
    magic = b"HSRAW1\n"
    start = len(magic) + 8 + len(head)

    def chunks():
        yield magic + len(head).to_bytes(8, "little") + head + b"\0" * (-(-start // 64) * 64 - start)
        for raw, n in blobs:
            if n:
                yield memoryview(raw)
            yield b"\0" * (-(-n // 64) * 64 - n)

    if SINK["channel"] is not None:
        # committed to the auditor at once (worker.channel): nothing of this process reaches it later
        SINK["channel"].output(os.path.basename(stem) + ".raw", chunks(),
                               -(-start // 64) * 64 + sum(-(-n // 64) * 64 for _r, n in blobs))
        SINK["sent"].add(os.path.basename(stem) + ".raw")
    else:
        with open(stem + ".raw", "wb") as fh:
            for c in chunks():
                fh.write(c)
    if digest is not None:
        _WRITTEN[digest] = os.path.basename(stem) + ".raw"
    return os.path.basename(stem) + ".raw"


# this worker's disk: its budget (from the job), what it wrote, whether the budget binds the
# required sets too, and what input sets already written will need for their outputs
_DISK = {"budget": None, "used": 0, "hard": False, "pending": 0}


def _save_set(torch, vals, path: str, required: bool = False, write=None, reserve: int = 0) -> str | None:
    """Write one input set (reference only) within this worker's disk budget: a set that would
    take the worker past it, or leave the disk under its floor, is not written and the reason
    is returned (the auditor skips the set with it). A required set (the visible inputs, the
    init inputs) is written wherever the disk has room for it above its floor, past a budget
    the session worked out as a share of the free disk (the budget bounds the optional sets;
    an 8 GiB visible set beside a dozen other audits must not lose the whole reference run), and
    within one the user set; one that cannot be written is an error of the reference run, said
    plainly, never a torch.save cut short. `write(torch, vals, path)` writes it (_write_set by default;
    SetWriter's hands it to its thread; a set on the GPU is copied to host memory first).
    `reserve`: bytes of outputs the set will need beside it, promised to it once it is written."""
    vals = _cast(vals)
    try:
        _disk_guard(os.path.dirname(path), _tensor_bytes(torch, vals), "an input set",
                    budgeted=not required or _DISK["hard"], reserve=reserve)
    except OutputsNotKept as e:
        why = f"not written: {e}"
        if required:
            raise MemoryError(why) from None
        return why
    (write or _write_set)(torch, vals, path)
    return None


def _write_set(torch, vals, path: str) -> None:
    """torch.save of a set in host memory: a set drawn on the GPU (inputs._Drawer) is copied
    out first, so that every reader loads it where it chooses, a CPU-only auditor included."""
    torch.save(_tree_map(torch, vals, lambda t: t.cpu()), path)


class SetWriter:
    """Hidden input sets written while the next one is drawn: one write in flight at a time (so
    at most two sets are in host memory), each within the disk budget checked before it starts
    (the reason for a set not written is known at once). Writing a 256 MiB set took about as
    long as drawing and checking it (bench/results/reference-prepare-2026-12-04.json). `close()`
    waits for the last write and raises its error.
    With `overlap` False every write happens in the caller's thread."""

    def __init__(self, torch, overlap: bool = True):
        self.torch = torch
        self._pool = None
        self._last = None
        if overlap:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hackscan-set-writer")

    def save(self, vals, path: str, reserve: int = 0) -> str | None:
        return _save_set(self.torch, vals, path, write=self._write, reserve=reserve)

    def _write(self, torch, vals, path: str) -> None:
        self._wait()
        if self._pool is None:
            _write_set(torch, vals, path)
        else:
            self._last = self._pool.submit(_write_set, torch, vals, path)

    def _wait(self) -> None:
        if self._last is not None:
            last, self._last = self._last, None
            last.result()

    def close(self) -> None:
        try:
            self._wait()
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class OutputsNotKept(Exception):
    """Outputs too large for the disk this worker may use: the call ran, its outputs are not
    kept (the auditor counts the step as absent, never as a wrong answer)."""


def _disk_guard(folder: str, nbytes: int, what: str = "outputs", budgeted: bool = True, reserve: int = 0) -> None:
    """Refuse a write that would take this worker past its disk budget (from the job; where
    `budgeted`) or leave the disk nearly full: many full-size outputs (fourteen input sets, two
    precisions) do not fit a machine's disk, and a full disk fails every audit beside this one.
    An input set with `reserve` is written only where its outputs (`reserve` bytes) fit after
    it, beside the outputs promised to the sets written before it; once written, its reserve is
    promised (_DISK["pending"]) until the hidden sets are all drawn."""
    import shutil

    budget = _DISK["budget"]
    # (pending is nonzero only while input sets with a reserve are written)
    if budgeted and budget is not None and _DISK["used"] + _DISK["pending"] + nbytes + reserve > budget:
        if reserve:
            raise OutputsNotKept(f"{what} of {nbytes:,} bytes and the reference's outputs on it ({reserve:,} bytes) "
                                 f"would exceed this worker's disk budget ({budget:,} bytes, {_DISK['used']:,} used, "
                                 f"{_DISK['pending']:,} promised to the outputs of sets already written)")
        raise OutputsNotKept(f"{what} of {nbytes:,} bytes would exceed this worker's disk budget "
                             f"({budget:,} bytes, {_DISK['used']:,} used)")
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        free = None
    # the floor: 4 GiB, or a quarter of what is free on a small disk (a few kilobytes of outputs
    # are always written where there is room for them)
    if free is not None and free - nbytes - reserve - _DISK["pending"] < min(4 << 30, free // 4):
        raise OutputsNotKept(f"{what} of {nbytes:,} bytes would leave the disk nearly full ({free:,} bytes free)")
    _DISK["used"] += nbytes
    _DISK["pending"] += reserve
