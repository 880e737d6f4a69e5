"""Tampering seen from inside the candidate's process, reported the moment it happens.

The worker's own code shares the process with the candidate and cannot be protected there (the
candidate can reach, wrap or replace any of it). What this module does:

- `hide()`: before the candidate is imported, the worker's modules leave `sys.modules` and the
  entry script's globals are emptied: a candidate that looks for the harness by name finds
  nothing, and must walk the heap or the call stack instead;
- `install()`: an audit hook (PEP 578; a hook cannot be removed from Python once added) that
  watches for that walk, where the candidate's own code makes it: the heap's object lists
  (`gc.get_objects`, `get_referrers`, `get_referents`), every thread's frames
  (`sys._current_frames`), a frame, traceback or code object of the worker's taken or read
  (`sys._getframe`, `f_code`, `tb_frame`, `__code__`), a function of the worker's given another
  body or defaults, the worker's files or job opened. Each
  event goes to the auditor over the channel at once (worker.channel), before the candidate can
  act on what it found; the auditor makes it a `harness-tampering` finding.

What it cannot see: a frame walk through `f_back` and `f_globals` (CPython audits neither), or
anything done through ctypes or native code. Its silence proves nothing; its events are evidence.
"""
from __future__ import annotations

import os
import sys
import threading

FRAME_EVENTS = ("sys._getframe", "object.__getattr__", "object.__setattr__")
HEAP_EVENTS = ("gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys._current_frames")
# the libraries a candidate calls that walk the heap themselves (torch's inductor looks up the
# referrers of a compiled kernel): an event whose caller is their code is theirs, not the candidate's
LIBRARIES = (os.sep + "torch" + os.sep, os.sep + "triton" + os.sep)

_STATE: dict = {"send": None, "jobdir": None, "harness": (), "job_files": (), "seen": set(), "on": False}
_BUSY = threading.local()


def hide(package: str = "_hsworker") -> None:
    """The worker's modules out of `sys.modules`, the entry script's names out of `__main__`.
    The functions keep their own module's globals; nothing imports the package again."""
    for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
        sys.modules.pop(name, None)
    main = sys.modules.get("__main__")
    if main is not None and os.path.basename(getattr(main, "__file__", "") or "") == "_worker.py":
        for k in [k for k in vars(main) if not k.startswith("__")]:
            delattr(main, k)


def install(send, jobdir: str) -> None:
    """The audit hook, watching from now on; `send(text)` reports an event."""
    jobdir = os.path.abspath(jobdir)
    _STATE.update(send=send, jobdir=jobdir + os.sep,
                  harness=(os.path.join(jobdir, "_hsworker") + os.sep, os.path.join(jobdir, "_worker.py")),
                  job_files=tuple(os.path.join(jobdir, n) for n in ("job.json", "result.json", "result.json.tmp",
                                                                    "_worker.py", "_ready.json", "_gate.json")))
    _STATE["on"] = True
    sys.addaudithook(_hook)


def _harness_file(name) -> bool:
    return isinstance(name, str) and (name.startswith(_STATE["harness"][0]) or name == _STATE["harness"][1])


def _candidate_file(name) -> bool:
    return isinstance(name, str) and name.startswith(_STATE["jobdir"]) and not _harness_file(name)


# the standard library's readers of source files (linecache reads a frame's source through
# tokenize.open; inspect and traceback through linecache)
SOURCE_READERS = tuple(os.path.join(os.path.dirname(os.__file__), n)
                       for n in ("linecache.py", "tokenize.py", "inspect.py", "traceback.py"))
_WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _reading(args) -> bool:
    """An open event's arguments (path, mode, flags) ask for reading only."""
    mode = args[1] if len(args) > 1 else None
    flags = args[2] if len(args) > 2 else 0
    if isinstance(mode, str):
        return not any(c in mode for c in "wax+")
    return isinstance(flags, int) and not flags & _WRITES


def _reads_source(caller_file: str) -> bool:
    """The open is made by a reader of source files: the standard library's, or a library's
    (torch, Triton) own code, not the candidate's."""
    if caller_file in SOURCE_READERS:
        return True
    return any(lib in caller_file for lib in LIBRARIES) and not _candidate_file(caller_file)


def _caller():
    """The Python frame that made the audited call, read while the hook is busy (reading frames
    here raises no event of ours): 0 is this function, 1 _check, 2 _hook, 3 the caller."""
    return sys._getframe(3)


def _stack_has_candidate(f) -> bool:
    while f is not None:
        if _candidate_file(f.f_code.co_filename):
            return True
        f = f.f_back
    return False


def _report(what: str) -> None:
    if what in _STATE["seen"] or len(_STATE["seen"]) > 50:
        return
    _STATE["seen"].add(what)
    send = _STATE["send"]
    if send is not None:
        send(what)


def _hook(event: str, args) -> None:
    if not _STATE["on"] or getattr(_BUSY, "on", False):
        return
    if event not in HEAP_EVENTS and event not in FRAME_EVENTS and event != "open":
        return
    _BUSY.on = True
    try:
        _check(event, args)
    except Exception:  # noqa: BLE001 - the hook must never break the call it watches
        pass
    finally:
        _BUSY.on = False


def _check(event: str, args) -> None:
    caller = _caller()
    caller_file = caller.f_code.co_filename if caller is not None else ""
    if _harness_file(caller_file):
        return     # the worker's own calls
    if event in HEAP_EVENTS:
        if any(lib in caller_file for lib in LIBRARIES) and not _candidate_file(caller_file):
            return
        if _stack_has_candidate(caller):
            _report(f"{event}: the candidate's code walked the process's heap or threads "
                    f"(from {os.path.basename(caller_file)}:{caller.f_lineno})")
        return
    if event == "open":
        path = args[0] if args else None
        if isinstance(path, int) or path is None:
            return
        try:
            path = os.path.abspath(os.fsdecode(path))
        except (TypeError, ValueError):
            return
        # the job and its results are the worker's secrets; its source is hackscan's, public
        secret = path in _STATE["job_files"] and not path.endswith(".py")
        if (secret or _harness_file(path)) and _stack_has_candidate(caller):
            if not secret and _reading(args) and _reads_source(caller_file):
                # the source of a frame on the stack read for a traceback, a warning or a
                # compiler's record of where it was called from (torch.compile reads the
                # worker's frames so on a CPU): a false harness-tampering on an honest kernel
                return
            _report(f"open: the candidate's code opened the worker's own file {os.path.basename(path)!r}")
        return
    if not _candidate_file(caller_file):
        return     # a library's own look at frames (a stack recorded for a warning or a graph)
    obj = args[0] if args else None
    if event == "sys._getframe":
        code = getattr(obj, "f_code", None)
    elif event == "object.__getattr__" and len(args) > 1:
        attr = args[1]
        if attr == "f_code":
            code = getattr(obj, "f_code", None)
        elif attr == "tb_frame":
            code = getattr(getattr(obj, "tb_frame", None), "f_code", None)
        elif attr in ("gi_frame", "cr_frame", "ag_frame", "gi_code", "cr_code", "ag_code"):
            code = getattr(obj, attr[:3] + "code", None)
        elif attr == "__code__":
            code = getattr(obj, "__code__", None)
        else:
            return
    elif event == "object.__setattr__":
        # a function of the worker's given another body, defaults or keyword defaults
        code = getattr(obj, "__code__", None) if callable(obj) else None
    else:
        return
    if code is not None and _harness_file(getattr(code, "co_filename", None)):
        what = event + ("." + str(args[1]) if event in ("object.__getattr__", "object.__setattr__") else "")
        act = "changed a function" if event == "object.__setattr__" else "took a frame or code object"
        _report(f"{what}: the candidate's code {act} of the worker "
                f"({os.path.basename(code.co_filename)}, from {os.path.basename(caller_file)}:{caller.f_lineno})")
