"""The auditor's side of a candidate worker's channel: the plan handed out one step at a time,
the input sets delivered per step, and each step's outputs and records committed before the next
step is known.

Why (the evidence issue): a worker that read its whole plan and every input set from files at its
start let a candidate read the hidden sets at import, answer exactly those from a table and take
its cheap path everywhere else; and a worker that wrote its outputs and report at the end let a
candidate rewrite them after its calls. Here:

- the candidate's job names no set and no plan. The plan stays in the auditor; set names and
  labels are replaced by tokens drawn per audit; the order of independent calls (visible and hidden
  interleaved) is drawn per audit; the input set files are never in the candidate's sandbox;
- each set reaches the worker only with the step that uses it, as a sealed memfd (immutable,
  nameless): a file of the auditor's, opened through /proc/self/fd, could be reopened for writing;
- the next step is handed out only once this one is committed: its outputs as sealed memfds that
  the auditor checks for size against a bound from the reference's outputs *before* copying them
  into a folder of its own (never in the worker's view), its records sent with `done`. An answer is
  therefore fixed before the next question exists, and nothing the candidate does later reaches it;
- the auditor times each step on its own clock (`auditor_s` on the step's records);
- tampering the worker saw (audit-hook events) arrives here as it happens, before the candidate
  can act on what it found.

The protocol: datagrams on an AF_UNIX SOCK_SEQPACKET pair, one JSON object each, file
descriptors attached with SCM_RIGHTS. Worker -> auditor: next, set, out (+ fd), done, ev."""
from __future__ import annotations

import fcntl
import json
import os
import random
import re
import secrets
import socket
import stat
import threading
import time
from pathlib import Path

from hackscan.dynamic.probe import LATE_SETS

SEALS_NEEDED = 2 | 4 | 8          # shrink, grow, write (linux/fcntl.h)
F_GET_SEALS = 1034
MAX_MESSAGE = 1 << 16
MAX_EVENTS = 200
MAX_TICKS = 20000
# the names outputs files have (worker.tensorfiles): a call's, or a timed loop's check's
OUT_NAME = re.compile(r"(out|chk)_[A-Za-z0-9_.+-]{1,180}\.(raw|pt)")
# steps kept at the end whatever the draw: inputs of another layout or size (a kernel that faults
# there loses the CUDA context and every call after it), then the reloaded parameters (they change
# the model for every later call)
LATE = LATE_SETS
ALTERED_ORDER = {"poison_some": 0, "poison_all": 1, "refuse": 2}


def pair() -> tuple[socket.socket, socket.socket]:
    """A channel: the auditor's end, and the worker's (inheritable, to pass to its process)."""
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    os.set_inheritable(right.fileno(), True)
    return left, right


def hide_from_basic(folder: Path) -> None:
    """Close a folder of input sets to candidates of the basic engine where that holds: as root,
    its workers keep uid 0 without a capability and see every mount read-only, so a folder of
    mode 000 is closed to them (they can neither read it nor change its mode), while the auditor,
    root with its capabilities, reads it. Under bubblewrap the session's folder is not in a
    candidate's view at all. Without root nothing closes it (`exposed` says so)."""
    if os.name == "posix" and os.geteuid() == 0:
        try:
            os.chmod(folder, 0)
        except OSError:
            pass


def exposed(engine: str) -> str | None:
    """Why a candidate's process could read the problem's input sets from disk, or None: under
    bubblewrap they are outside its view; under the basic engine as root in a folder closed to it
    (hide_from_basic); otherwise it runs as the auditor's user with the session's folder readable."""
    if not available():
        return "this platform has no channel to hand input sets over one call at a time"
    if engine == "bwrap" or os.geteuid() == 0:
        return None
    return ("the basic sandbox, not as root: the candidate's process runs as the auditor's user and can read "
            "the hidden input sets from the session's folder")


def available() -> bool:
    return hasattr(os, "memfd_create") and hasattr(socket, "send_fds") and hasattr(socket, "SOCK_SEQPACKET")


def blocks(plan: list[dict]) -> list[list[dict]]:
    """The plan cut into blocks whose order does not matter: a run of consecutive steps on working
    slots in one phase (a probe's sequence: its calls, the refills between them, the slot that
    follows) stays one block, in its order; the calls whose kernels are altered (`kernels`:
    poisoned writes, refused launches) one block, then load_params and the calls after it
    (reloading every parameter and buffer, whatever an altered call left in them), both kept
    last; every other step a block of its own."""
    out: list[list[dict]] = []
    tail: list[dict] = []
    altered: list[dict] = []
    prev = None
    for s in plan:
        if s.get("kernels"):
            altered.append(s)
            continue
        if tail or s.get("op") == "load_params":
            tail.append(s)
            continue
        slotted = s.get("slot") is not None or s.get("into") is not None
        if slotted and prev is not None and prev[0] and prev[1] == s.get("phase"):
            out[-1].append(s)
        else:
            out.append([s])
        prev = (slotted, s.get("phase"))
    # a share of the writes poisoned first (on a model nothing has poisoned yet), every write
    # next, refused launches last: whatever an altered call leaves behind can only make a later
    # one wrong, never right
    altered.sort(key=lambda s: ALTERED_ORDER.get(s["kernels"], len(ALTERED_ORDER)))
    return out + ([altered] if altered else []) + ([tail] if tail else [])


def _kept_last(b: list[dict]) -> bool:
    return b[0].get("op") == "load_params" or bool(b[0].get("kernels"))


def shuffled(plan: list[dict], rng: random.Random) -> list[dict]:
    """The plan's blocks in an order drawn per audit within each phase (a step's `phase`, from its
    probe: the calls that count calls meet a model nothing else has touched, timed calls come
    before any profiler), the late sets, the altered calls and the reloaded parameters last, as
    `blocks` and LATE say. The plain calls (the visible set's and every hidden one's) are one
    phase: interleaved."""
    bs = blocks(plan)
    ends: list[list[dict]] = []
    while bs and _kept_last(bs[-1]):
        ends.insert(0, bs.pop())
    rng.shuffle(bs)
    bs.sort(key=lambda b: (LATE.get(b[0].get("set") if "slot" not in b[0] else None, 0), b[0].get("phase", 0)))
    return [s for b in bs + ends for s in b]


MESSAGE_MAX = 64 << 20     # a message in a memfd (a step's records): as the worker's result.json


def _message_in_fd(fds: list[int]) -> dict:
    """A message the worker sent in a sealed memfd (too large for a datagram), read within
    MESSAGE_MAX bytes; its descriptors are closed here. ValueError where it is not one."""
    try:
        if not fds:
            raise ValueError("no memfd came with it")
        fd = fds[0]
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or fcntl.fcntl(fd, F_GET_SEALS) & SEALS_NEEDED != SEALS_NEEDED:
            raise ValueError("not a sealed memfd")
        if st.st_size > MESSAGE_MAX:
            raise ValueError(f"a message of {st.st_size:,} bytes")
        data = os.pread(fd, st.st_size, 0)
        msg = json.loads(data)
        if not isinstance(msg, dict):
            raise ValueError("not an object")
        return msg
    except OSError as e:
        raise ValueError(str(e)) from None
    finally:
        _close_all(fds)


def _close_all(fds) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


class Feeder:
    """One candidate worker's channel. `plan`: the steps with their real names; `sets`: set name ->
    file (a torch.save'd input set the worker may be handed); `outdir`: where committed outputs go
    (outside the worker's view); `out_cap`: the largest outputs file accepted."""

    def __init__(self, plan: list[dict], sets: dict[str, Path], outdir: Path, out_cap: int,
                 rng: random.Random | None = None, check_seeds: dict[int, int] | None = None):
        self.rng = rng or random.Random(secrets.randbits(64))
        # a measurement's checks: the seed of each input set's perturbation, handed over with the
        # tick of a check on that set and never before (its timed calls are perturbed with draws
        # of the worker's own, so a check's inputs look like any timed call's)
        self.check_seeds = {int(k): int(v) for k, v in (check_seeds or {}).items()}
        self.tokens: dict[str, str] = {}
        self.calls: dict[int, int] = {}
        self.names: dict[str, str] = {}
        self.sets = dict(sets)
        self.outdir = Path(outdir)
        self.outdir.mkdir(parents=True, exist_ok=True)
        self.out_cap = int(out_cap)
        self.real = shuffled(plan, self.rng)
        self.steps = [self._opaque(s) for s in self.real]
        # kept past the disk budget: the first call on the visible set, and the plain one on it
        # (every comparison starts from their outputs)
        for s, r in zip(self.steps, self.real):
            if r.get("set") == "visible" and r.get("op") in ("forward", "profile", "timing"):
                s["required"] = True
                break
        for s, r in zip(self.steps, self.real):
            if r.get("set") == "visible" and "slot" not in r and "as" not in r and r.get("call", 0) == 0:
                s["required"] = True
        self.records: list[dict] = []
        self.events: list[str] = []
        self.ticks: list[tuple] = []     # (loop, i, kind, the auditor's clock) of timed loops
        self.refused: str | None = None
        self.violation: str | None = None   # a message the worker's own loop never sends
        self.files: set[str] = set()
        self.renamed: dict[str, str] = {}
        self.handed = 0          # steps handed out
        self.committed = 0       # steps whose records came back
        self.revealed: set[str] = set()
        self._t_step = None
        self.left, self.right = pair()
        self._thread: threading.Thread | None = None

    def adopt(self, left: socket.socket, child_fd: int) -> None:
        """Serve a worker started ahead of its job (dynamic.pool) on the channel it was started
        with: `left` is the auditor's end, `child_fd` the number of the worker's."""
        for s in (self.left, self.right):
            s.close()
        self.left, self.right = left, None
        self._child_fd = child_fd

    # the names the candidate sees ----------------------------------------------------------
    def token(self, name: str) -> str:
        if name not in self.tokens:
            t = "s" + secrets.token_hex(4)
            self.tokens[name] = t
            self.names[t] = name
        return self.tokens[name]

    def _opaque(self, s: dict) -> dict:
        out = dict(s)
        out.pop("expect", None)
        out.pop("phase", None)
        for k in ("set", "from", "into", "slot", "as"):
            if k in out:
                out[k] = self.token(out[k])
        if "call" in out:
            # a call's number says which probe made it (100-110 fresh calls, 200 the poisoned
            # allocator, 400 the profile, 500 timing): a number drawn per audit instead
            new = self.rng.randrange(1000, 1 << 30)
            while new in self.calls:
                new = self.rng.randrange(1000, 1 << 30)
            self.calls[new] = out["call"]
            out["call"] = new
        return out

    def real_name(self, token):
        return self.names.get(token, token)

    _child_fd: int | None = None

    @property
    def child_fd(self) -> int:
        return self._child_fd if self._child_fd is not None else self.right.fileno()

    # serving ---------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._serve, name="hackscan-feeder", daemon=True)
        self._thread.start()

    def after_spawn(self) -> None:
        """The worker holds its end: ours closes, so that the worker's end closing is seen."""
        try:
            if self.right is not None:
                self.right.close()
        except OSError:
            pass

    def close(self, timeout: float = 10.0) -> None:
        try:
            self.left.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        if self._thread is not None:
            self._thread.join(timeout)
        for s in (self.left, self.right):
            try:
                if s is not None:
                    s.close()
            except OSError:
                pass

    def _serve(self) -> None:
        try:
            while True:
                try:
                    data, fds, _f, _a = socket.recv_fds(self.left, MAX_MESSAGE, 4)
                except OSError:
                    return
                if not data:
                    _close_all(fds)
                    return
                try:
                    msg = json.loads(data)
                    if not isinstance(msg, dict):
                        raise ValueError("not an object")
                    if msg.get("in_fd"):
                        sent, fds = fds, []
                        msg = _message_in_fd(sent)    # (closes what came with it)
                except ValueError:
                    _close_all(fds)
                    self._refuse("a message that is not a JSON object")
                    return
                try:
                    reply = self._handle(msg, fds)
                finally:
                    _close_all(fds)
                if reply is None:
                    continue
                fd_out = reply.pop("_fd", None)
                try:
                    if fd_out is not None:
                        socket.send_fds(self.left, [json.dumps(reply).encode()], [fd_out])
                    else:
                        self.left.send(json.dumps(reply).encode())
                except OSError:
                    return
                finally:
                    if fd_out is not None:
                        os.close(fd_out)
                if reply.get("k") == "refused":
                    return
        finally:
            try:
                self.left.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _refuse(self, why: str, broken: bool = True) -> dict:
        """Close the channel with the reason. `broken`: the worker broke the protocol, which the
        worker's own loop never does: something else in its process spoke on the channel
        (`violation`, tampering). Outputs too large are refused without that."""
        self.refused = self.refused or why[:300]
        if broken:
            self.violation = self.violation or why[:300]
        return {"k": "refused", "why": why[:300]}

    def _handle(self, msg: dict, fds: list[int]) -> dict | None:
        k = msg.get("k")
        if k == "ev":
            if len(self.events) < MAX_EVENTS:
                self.events.append(str(msg.get("ev"))[:300])
            return None
        if k == "tick":
            if len(self.ticks) < MAX_TICKS:
                self.ticks.append((str(msg.get("loop"))[:40], msg.get("i"), str(msg.get("kind"))[:10],
                                   time.perf_counter()))
            if msg.get("kind") == "check" and isinstance(msg.get("set"), int) and msg["set"] in self.check_seeds:
                return {"k": "go", "seed": self.check_seeds[msg["set"]]}
            return {"k": "go"}
        if k == "next":
            if self.handed > self.committed:
                return self._refuse("asked for the next step before committing the one it was given")
            if self.handed >= len(self.steps):
                return {"k": "end", "visible": self.tokens.get("visible")}
            step = self.steps[self.handed]
            for key in ("set", "from"):
                if key in step and step[key] in self.names and self.names[step[key]] in self.sets:
                    self.revealed.add(step[key])
            self.handed += 1
            self._t_step = time.perf_counter()
            return {"k": "step", "step": step}
        if k == "set":
            tok = str(msg.get("tok"))
            visible_after_plan = self.handed >= len(self.steps) and self.committed >= len(self.steps) \
                and tok == self.tokens.get("visible")
            if tok not in self.revealed and not visible_after_plan:
                return {"k": "noset"}
            return self._set_fd(self.names[tok])
        if k == "out":
            return self._output(str(msg.get("name", "")), fds)
        if k == "done":
            recs = msg.get("recs")
            if not isinstance(recs, list) or not all(isinstance(r, dict) for r in recs):
                return self._refuse("records that are not a list of objects")
            after_plan = self.committed >= len(self.steps)
            if not after_plan and self.committed >= self.handed:
                return self._refuse("committed a step it was not given")
            took = time.perf_counter() - self._t_step if self._t_step is not None else None
            for r in recs:
                r = dict(r)
                if isinstance(r.get("set"), str):
                    r["set"] = self.real_name(r["set"])
                if isinstance(r.get("call"), int) and not after_plan:
                    r["call"] = self.calls.get(r["call"], r["call"])
                if took is not None and not after_plan:
                    r["auditor_s"] = round(took, 6)
                if "file" in r and r["file"] not in self.files:
                    r.pop("file")
                    r["error"] = r.get("error") or "its outputs were never committed"
                self.records.append(r)
            if not after_plan:
                self.committed += 1
            self._t_step = time.perf_counter() if after_plan else None
            return {"k": "ok"}
        return self._refuse(f"an unknown message {str(k)[:40]!r}")

    def _set_fd(self, name: str) -> dict:
        """The set's file copied into a sealed memfd (immutable, nameless), to hand over."""
        src = self.sets[name]
        fd = os.memfd_create("in", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            with open(src, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                sent = 0
                while sent < size:
                    n = os.sendfile(fd, fh.fileno(), sent, size - sent)
                    if n == 0:
                        break
                    sent += n
            fcntl.fcntl(fd, 1033, 1 | SEALS_NEEDED)    # F_ADD_SEALS: seal, shrink, grow, write
            os.lseek(fd, 0, os.SEEK_SET)
        except OSError:
            os.close(fd)
            return {"k": "noset"}
        return {"k": "set", "_fd": fd}

    def _output(self, name: str, fds: list[int]) -> dict:
        """One outputs file: a plain name, a sealed memfd of at most `out_cap` bytes (checked
        before a byte is read), copied into the auditor's folder."""
        if not fds:
            return {"k": "no", "why": "no file came with the outputs"}
        if not OUT_NAME.fullmatch(name):
            return self._refuse(f"an outputs name that is not a plain name of outputs: {name[:80]!r}")
        fd = fds[0]
        try:
            st = os.fstat(fd)
            seals = fcntl.fcntl(fd, F_GET_SEALS)
        except OSError as e:
            return self._refuse(f"outputs that are not a sealed memfd ({e})")
        if not stat.S_ISREG(st.st_mode) or seals & SEALS_NEEDED != SEALS_NEEDED:
            return self._refuse("outputs that are not a sealed memfd (they could change after the call)")
        if st.st_size > self.out_cap:
            return self._refuse(f"outputs of {st.st_size:,} bytes, over the {self.out_cap:,} bytes the "
                                "reference's outputs allow", broken=False)
        real = name
        for tok, nm in self.names.items():
            real = real.replace(tok, nm)
        dest = self.outdir / real
        try:
            with open(dest, "wb") as out:
                sent = 0
                while sent < st.st_size:
                    n = os.sendfile(out.fileno(), fd, sent, st.st_size - sent)
                    if n == 0:
                        break
                    sent += n
        except OSError as e:
            return self._refuse(f"its outputs could not be kept: {e}", broken=False)
        self.files.add(name)
        self.renamed[name] = real
        return {"k": "ok"}

    def results(self) -> dict:
        """What the channel recorded: the step records (real names, outputs files as kept in
        `outdir`), the events, whether the plan was accounted for, and the refusal if any."""
        recs = []
        for r in self.records:
            r = dict(r)
            if "file" in r:
                r["file"] = self.renamed.get(r["file"], r["file"])
            recs.append(r)
        return {"steps": recs, "events": list(self.events), "handed": self.handed, "committed": self.committed,
                "planned": len(self.steps), "refused": self.refused, "violation": self.violation,
                "windows": self.windows()}

    def windows(self) -> dict:
        """Each timed loop's iterations on the auditor's clock: loop -> kind -> seconds between an
        iteration's tick and the next one's (the last iteration's ends at the loop's end tick)."""
        out: dict = {}
        for a, b in zip(self.ticks, self.ticks[1:]):
            if a[0] == b[0] and a[2] != "end":
                out.setdefault(a[0], {}).setdefault(a[2], []).append(b[3] - a[3])
        return out
