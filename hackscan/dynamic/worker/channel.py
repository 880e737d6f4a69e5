"""The candidate's side of the auditor's channel (hackscan/dynamic/feeder.py): a Unix socket of
datagrams, set up by the auditor before this process started, that hands out the plan one step
at a time and takes each step's outputs and records as soon as the step is done.

Nothing here is protected from the candidate, which shares this process: it can call, wrap or
replace every function below. What the channel guarantees does not rest on that:
- a step's input sets exist in this process only once the auditor has handed out the step, and
  the auditor hands out the next step only after this one's outputs are committed (a sealed
  memfd the auditor copies out of reach), so no answer can be written knowing a later question;
- the sets come as sealed, nameless memfds and the steps name them by tokens drawn per audit;
- every timing the auditor counts is its own clock around a step, not a number sent from here;
- what the candidate's process says about itself (launch counts, profiles, integrity checks)
  is evidence that can only convict: the auditor never clears a candidate on it alone.
"""
from __future__ import annotations

import json
import os
import socket

# F_ADD_SEALS and the seals (linux/fcntl.h); Python's fcntl has them from 3.8 on Linux
F_ADD_SEALS, F_SEAL_SEAL, F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_WRITE = 1033, 1, 2, 4, 8
SEALS = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE
MAX_MESSAGE = 1 << 16
INLINE_MAX = 32 << 10      # larger messages travel in a sealed memfd (Channel._send)
OPEN = {"channel": None}    # this worker's channel, where its job has one (set by the driver)


class ChannelClosed(RuntimeError):
    """The auditor closed the channel (it refused a message, or the audit is over)."""


class Channel:
    def __init__(self, fd: int):
        self.sock = socket.socket(fileno=fd)
        self.sock.setblocking(True)
        self.visible = None   # the token of the benchmark's own inputs, told once the plan is done

    def _ask(self, msg: dict, fds=()) -> tuple[dict, list[int]]:
        self._send(msg, fds)
        return self._recv()

    def _send(self, msg: dict, fds=()) -> None:
        data = json.dumps(msg).encode()
        if len(data) > INLINE_MAX and not fds:
            # a datagram holds at most the socket's buffer (about 200 KB; a deep model's step
            # records are more): the message goes in a sealed memfd, the datagram says so
            fd = os.memfd_create("msg", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            try:
                with os.fdopen(os.dup(fd), "wb") as fh:    # (os.write may write part of it)
                    fh.write(data)
                import fcntl

                fcntl.fcntl(fd, F_ADD_SEALS, SEALS)
                socket.send_fds(self.sock, [json.dumps({"k": msg.get("k"), "in_fd": True}).encode()], [fd])
            except OSError as e:
                raise ChannelClosed(f"the auditor's channel is closed ({e})") from None
            finally:
                os.close(fd)
            return
        try:
            if fds:
                socket.send_fds(self.sock, [data], list(fds))
            else:
                self.sock.send(data)
        except OSError as e:
            raise ChannelClosed(f"the auditor's channel is closed ({e})") from None

    def _recv(self) -> tuple[dict, list[int]]:
        try:
            data, fds, _flags, _addr = socket.recv_fds(self.sock, MAX_MESSAGE, 8)
        except OSError as e:
            raise ChannelClosed(f"the auditor's channel is closed ({e})") from None
        if not data:
            raise ChannelClosed("the auditor closed the channel")
        return json.loads(data), fds

    def steps(self):
        """The plan's steps, each handed out once the one before it is committed (`done`)."""
        while True:
            msg, _ = self._ask({"k": "next"})
            if msg.get("k") != "step":
                self.visible = msg.get("visible")
                return
            yield msg["step"]

    def input_set(self, token: str):
        """A readable file of the set the step being run names (a sealed memfd), or None where
        the auditor has no such set for this step."""
        msg, fds = self._ask({"k": "set", "tok": token})
        if msg.get("k") != "set" or not fds:
            for fd in fds:
                os.close(fd)
            return None
        for fd in fds[1:]:
            os.close(fd)
        return os.fdopen(fds[0], "rb")

    def output(self, name: str, chunks, nbytes: int) -> None:
        """Commit one outputs file: its bytes written into a memfd, sealed, handed over."""
        fd = os.memfd_create("out", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            with os.fdopen(os.dup(fd), "wb") as fh:
                for c in chunks:
                    fh.write(c)
            import fcntl

            fcntl.fcntl(fd, F_ADD_SEALS, SEALS)
            msg, _ = self._ask({"k": "out", "name": name, "nbytes": nbytes}, [fd])
        finally:
            os.close(fd)
        if msg.get("k") != "ok":
            raise ChannelClosed(f"the auditor refused the outputs: {msg.get('why', '')}"[:300])

    def done(self, records: list) -> None:
        """The step's records, committed: the auditor hands out the next step only after this."""
        msg, _ = self._ask({"k": "done", "recs": records})
        if msg.get("k") != "ok":
            raise ChannelClosed(f"the auditor refused the step's records: {msg.get('why', '')}"[:300])

    def tick(self, loop: str, i: int, kind: str, set_index: int | None = None) -> int | None:
        """The start of a timed loop's iteration (or its end: kind "end"), stamped by the
        auditor's clock when it arrives; the loop goes on once the auditor has answered, so the
        auditor's windows between ticks hold all the work of each iteration. A check's answer
        carries the seed of its input set's perturbation, where the auditor gives one."""
        ask = {"k": "tick", "loop": loop, "i": i, "kind": kind}
        if set_index is not None:
            ask["set"] = int(set_index)
        msg, _ = self._ask(ask)
        if msg.get("k") != "go":
            raise ChannelClosed("the auditor refused a tick")
        seed = msg.get("seed")
        return int(seed) if isinstance(seed, int) else None

    def event(self, what: str) -> None:
        """Evidence seen in this process (an audit hook's event), sent at once."""
        try:
            self._send({"k": "ev", "ev": what[:300]})
        except ChannelClosed:
            pass
