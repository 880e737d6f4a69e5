"""The machine's budgets, one ledger for every hackscan process on the machine.

Audits side by side (one process over a folder with `--jobs`, or ten processes started apart)
share the disk under the temporary folder, the host's memory and each GPU's memory. Each process
used to size what it took from what it saw free, blind to the others: ten of them promised the
same free disk ten times over, and a full-size problem's reference ran out of it. Here every
promise is written down in one place before a worker runs, and taken back when it ends:

- a claim names a resource (`disk:<device>`, `host`, `gpu:<id>`), its bytes and what it is for;
  it is granted when it fits beside the claims of every other live process, and waits for room
  otherwise (the wait is bounded and said: `Claim.waited_s`, `Claim.behind`);
- a claim that could never fit on this machine (more than the resource holds with nothing else
  on it) is refused at once with `NeverFits`, which names the resource and the sizes;
- a process that dies gives its claims back: each process holds an exclusive `flock` on a file
  of its own for as long as it lives, and a claim whose holder's file can be locked is a dead
  process's (no pid files: pids are reused);
- waiting is first come, first served, with back-filling: a claim that fits may pass an earlier
  one that does not, until the earlier one has waited `PASS_S`; from then on claims queue behind
  it, so that a stream of small claims cannot starve a large one.

The ledger is a JSON file under an exclusive `flock` (a few hundred bytes per claim: held only
while read and written, never during a wait). Hand-written on fcntl rather than a library: the
standard library has no cross-process semaphore with sizes, and filelock/portalocker give a
mutex, not a ledger of promises with liveness. The folder is the user's own (0700): workers see
a private temporary folder (bubblewrap) and never this one; under the basic engine a worker of
the same user could write the ledger, which can delay audits (every wait is bounded) but never
change a verdict.

A problem's needs, learned from its reference's first run (its input set's bytes), are kept in
`needs/<key>.json`, so that the next run of that problem, in any process, claims what it needs
up front."""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

PASS_S = 30.0          # how long a waiting claim may be passed by later ones that fit
POLL_S = 0.2           # how often a waiting claim looks again
MAX_LEDGER_BYTES = 4 << 20   # a ledger file larger than this is not read (reset: every claim is re-made)


class NeverFits(Exception):
    """A claim larger than its resource holds with nothing else on it."""

    def __init__(self, resource: str, need: int, most: int, what: str):
        self.resource, self.need, self.most, self.what = resource, need, most, what
        super().__init__(f"{what} needs {need:,} bytes of {describe(resource)}; this machine has at most "
                         f"{most:,} for it")


class WaitedTooLong(Exception):
    """A claim that found no room within its bound."""

    def __init__(self, resource: str, need: int, room: int, waited: float, behind: list[str], what: str):
        self.resource, self.need, self.room, self.waited, self.behind = resource, need, room, waited, behind
        held = "; ".join(behind[:4]) or "nothing"
        super().__init__(f"{what} waited {waited:.0f} s for {need:,} bytes of {describe(resource)} and found "
                         f"{max(0, room):,} (held by: {held})")


def describe(resource: str) -> str:
    kind, _, where = resource.partition(":")
    return {"disk": f"disk (filesystem {where})", "host": "host memory",
            "gpu": f"GPU memory (GPU {where})"}.get(kind, resource)


@dataclass
class Claim:
    """A granted claim: its bytes, how long it waited and behind what."""
    resource: str
    bytes: int
    what: str
    waited_s: float = 0.0
    behind: list[str] = field(default_factory=list)
    id: str = ""

    def record(self) -> dict:
        out = {"turn": self.resource, "for": self.what, "bytes": self.bytes, "waited_s": round(self.waited_s, 3)}
        if self.behind:
            out["behind"] = self.behind[:4]
        return out


def default_root() -> Path:
    """`$HACKSCAN_LEDGER`, else a folder of the user's in the temporary folder: every hackscan
    process of the user on the machine shares it."""
    return Path(os.environ.get("HACKSCAN_LEDGER") or Path(tempfile.gettempdir()) / f"hackscan-ledger-{os.getuid()}")


class Ledger:
    """One machine's ledger (see the module's docstring). One object per process is enough
    (`ledger()`); several are harmless."""

    def __init__(self, root: Path | None = None):
        self.root = Path(root) if root is not None else default_root()
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = self.root.stat()
        if st.st_uid != os.getuid() or st.st_mode & 0o077:
            # a folder of another user's, or one others may write: a ledger of this process
            # alone (safe, and blind to the machine's other audits) rather than theirs
            self.root = Path(tempfile.mkdtemp(prefix="hackscan-ledger-private-"))
        (self.root / "holders").mkdir(mode=0o700, exist_ok=True)
        (self.root / "needs").mkdir(mode=0o700, exist_ok=True)
        self._lockfile = self.root / "ledger.lock"
        self._file = self.root / "claims.json"
        self._mutex = threading.Lock()
        self._holder_fh = None
        self.token = ""

    # ---- liveness ---------------------------------------------------------------
    def _holder(self) -> str:
        """This process's token, its file locked for as long as the process lives (made on first
        use, and again in a forked child, which does not inherit the parent's flock's meaning)."""
        with self._mutex:   # threads of one process share one holder (a second would drop the first's claims)
            if self._holder_fh is None or not self.token.startswith(f"{os.getpid()}-"):
                token = f"{os.getpid()}-{secrets.token_hex(6)}"
                fh = open(self.root / "holders" / f"{token}.lock", "a+")
                fcntl.flock(fh, fcntl.LOCK_EX)
                self._holder_fh, self.token = fh, token
            return self.token

    def _alive(self, holder: str) -> bool:
        if holder == self.token and self._holder_fh is not None:
            return True
        path = self.root / "holders" / f"{os.path.basename(holder)}.lock"
        try:
            fh = open(path, "r")
        except OSError:
            return False
        with fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:
                return True     # its process holds it
            fcntl.flock(fh, fcntl.LOCK_UN)
        with contextlib.suppress(OSError):
            path.unlink()
        return False

    # ---- the file ------------------------------------------------------------------
    @contextlib.contextmanager
    def _edit(self):
        """The ledger's live entries, under the machine-wide lock; written back on exit."""
        with self._mutex, open(self._lockfile, "a+") as lk:
            fcntl.flock(lk, fcntl.LOCK_EX)
            try:
                entries = self._read()
                alive: dict[str, bool] = {}
                live = [e for e in entries if alive.setdefault(e.get("holder", ""), self._alive(e.get("holder", "")))]
                yield live
                if live != entries:   # a read that dropped no dead claim writes nothing
                    tmp = self._file.with_suffix(f".{os.getpid()}.tmp")
                    tmp.write_text(json.dumps(live))
                    os.replace(tmp, self._file)
            finally:
                fcntl.flock(lk, fcntl.LOCK_UN)

    def _read(self) -> list[dict]:
        try:
            if self._file.stat().st_size > MAX_LEDGER_BYTES:
                return []
            data = json.loads(self._file.read_text() or "[]")
        except (OSError, ValueError):
            return []
        # an entry not shaped as this module writes them (the file is writable by the user's other
        # processes) is dropped, never a KeyError in every audit that reads it
        shape = {"id": str, "holder": str, "resource": str, "bytes": int, "since": (int, float)}
        return [e for e in data if isinstance(e, dict) and all(isinstance(e.get(k), t) for k, t in shape.items())] \
            if isinstance(data, list) else []

    def entries(self, resource: str | None = None) -> list[dict]:
        """The live claims (and waiters, `"waiting": true`), of one resource or all."""
        with self._edit() as live:
            return [dict(e) for e in live if resource is None or e["resource"] == resource]

    def held(self, resource: str) -> int:
        """Bytes of `resource` granted to live claims."""
        return sum(e["bytes"] for e in self.entries(resource) if not e.get("waiting"))

    # ---- claims ----------------------------------------------------------------------
    @contextlib.contextmanager
    def claim(self, resource: str, need: int, *, room: Callable[[int], int], most: Callable[[int], int],
              what: str, wait_s: float):
        """Hold `need` bytes of `resource` while the block runs. `room(held)`: what is free for a
        new claim while live claims hold `held` bytes; `most(held)`: the most this claim could
        ever be given (with every other claim gone). Raises NeverFits where need > most(held),
        WaitedTooLong after `wait_s` without room. A claim with nothing else on its resource is
        granted whatever `room` says (alone, it gets all there is)."""
        need = max(0, int(need))
        holder = self._holder()
        cid = secrets.token_hex(8)
        t0 = time.monotonic()
        behind: list[str] = []
        entry = {"id": cid, "holder": holder, "resource": resource, "bytes": need, "what": what[:120],
                 "since": time.time(), "pid": os.getpid(), "waiting": True}
        try:
            while True:
                with self._edit() as live:
                    others = [e for e in live if e["resource"] == resource and e["id"] != cid]
                    granted = [e for e in others if not e.get("waiting")]
                    held = sum(e["bytes"] for e in granted)
                    top, free = most(held), room(held)
                    now = time.time()
                    # earlier waiters that have waited past PASS_S are not passed
                    first = [e for e in others if e.get("waiting") and e["since"] < entry["since"]
                             and now - e["since"] > PASS_S]
                    live[:] = [e for e in live if e["id"] != cid]
                    if need > top:
                        outcome = "never"
                    elif (need <= free or not granted) and not first:
                        entry.pop("waiting", None)
                        live.append(entry)
                        outcome = "granted"
                    else:
                        live.append(entry)
                        outcome = "wait"
                        if not behind:
                            behind = [f"{e['what']} ({e['bytes']:,} bytes)" for e in granted]
                if outcome == "never":
                    raise NeverFits(resource, need, top, what)
                waited = time.monotonic() - t0
                if outcome == "granted":
                    break
                if waited > wait_s:
                    raise WaitedTooLong(resource, need, free, waited, behind, what)
                time.sleep(POLL_S)
            yield Claim(resource, need, what, waited, behind if waited >= POLL_S else [], cid)
        finally:
            with self._edit() as live:
                live[:] = [e for e in live if e["id"] != cid]

    # ---- what problems need ---------------------------------------------------------
    def need_of(self, key: str) -> dict:
        """What an earlier run learned of problem `key` (input_bytes, sets, ...), or {}."""
        try:
            data = json.loads((self.root / "needs" / f"{os.path.basename(key)}.json").read_text())
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def learn(self, key: str, **facts) -> None:
        path = self.root / "needs" / f"{os.path.basename(key)}.json"
        data = {**self.need_of(key), **{k: v for k, v in facts.items() if v is not None}}
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        with contextlib.suppress(OSError):
            tmp.write_text(json.dumps(data))
            os.replace(tmp, path)


_LEDGERS: dict[str, Ledger] = {}
_LEDGERS_LOCK = threading.Lock()


def ledger(root: Path | None = None) -> Ledger:
    """This process's ledger of the machine (one per folder)."""
    key = str(root or default_root())
    with _LEDGERS_LOCK:
        if key not in _LEDGERS:
            _LEDGERS[key] = Ledger(Path(key))
        return _LEDGERS[key]
