"""Adapters for the tools hackscan's users already run: KernelBench's evaluator
(`hackscan.integrations.kernelbench`), RL reward functions (`hackscan.integrations.rl`) and
KernelGuard's api-mode output (`hackscan.integrations.kernelguard`).

What they share: one warm `hackscan.Session` per process and set of options (a new candidate of
a problem already seen does not run its reference again), and the test of a dynamic result that
says nothing of the candidate."""
from __future__ import annotations

import atexit
import threading

_SESSIONS: dict = {}
_SESSIONS_LOCK = threading.Lock()


def shared_session(**options):
    """The process's `hackscan.Session` for these options, made on first use and closed at exit:
    calls for new candidates of a problem already seen reuse its reference run."""
    from hackscan.session import Session

    key = tuple(sorted(options.items()))
    with _SESSIONS_LOCK:
        s = _SESSIONS.get(key)
        if s is None:
            s = _SESSIONS[key] = Session(**options)
            atexit.register(s.close)
        return s


# dynamic results that say nothing of the candidate: the reference could not be run, the
# auditor failed, the candidate needs hardware this run lacks
UNVERIFIABLE = ("reference", "no reference", "the reference is not deterministic", "dynamic audit failed",
                "the candidate builds a CUDA extension; no GPU here", "raw C++/CUDA source",
                "the problem runs in bfloat16")


def unverifiable(dyn: dict) -> bool:
    """Whether a dynamic result says nothing of the candidate (an infrastructure outcome)."""
    return dyn.get("status") in ("inconclusive", "error") and str(dyn.get("reason", "")).startswith(UNVERIFIABLE)
