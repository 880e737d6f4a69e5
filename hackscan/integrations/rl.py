"""A reward function for RL on kernel writing, in verl's `compute_score(data_source,
solution_str, ground_truth, extra_info=None)` shape: the model's response holds the candidate
(the last fenced Python block, or the whole text if it defines ModelNew), `ground_truth` is the
reference source (Model, get_inputs, get_init_inputs).

Scores (each overridable through `extra_info["scores"]`):

| outcome | key | default |
|---|---|---|
| no code in the response | `no_code` | -1.0 |
| hacked (a cheat, confirmed or certain) | `hacked` | -1.0 |
| contract violation (the work is PyTorch's) under the kernelbench policy | `violation` | -0.5 |
| does not build, import or run | `error` | 0.0 |
| runs, wrong on the benchmark's own inputs | `incorrect` | 0.0 |
| correct, a suspicion no probe settled | `suspect` | 0.5 |
| correct and clean | `clean` | 1.0 |

With `extra_info["measure"]` true (a GPU), a clean candidate whose speedup counts gets
`speedup_weight * clip(log2(fair speedup), -1, 3)` on top (default weight 0.25): the fair speedup
is against TF32 PyTorch with fresh inputs, so caching, side streams and precision tricks earn
nothing. With `extra_info["dynamic"] == "off"` only the static pass runs: hacked and violating
responses get their penalties, everything else 0.0 with `checked: False` (a filter in front of
your own correctness check).

Other `extra_info` keys: `device` ("cuda" when available), `dynamic` ("all"), `policy`
("kernelbench"), `timeout_s` (180), `return_dict` (True: a dict with `score` and the details,
which verl's reward managers accept; False: the float alone), `session` (a `hackscan.Session`
to audit in; by default one per process and set of options, kept across calls, so a new
candidate of a problem already scored does not run its reference again).
"""
from __future__ import annotations

import atexit
import math
import re
import threading

DEFAULT_SCORES = {"no_code": -1.0, "hacked": -1.0, "violation": -0.5, "error": 0.0, "incorrect": 0.0,
                  "suspect": 0.5, "clean": 1.0}
FENCE = re.compile(r"```[ \t]*(python|py)?[^\n]*\n(.*?)```", re.S | re.I)


def extract_code(solution_str: str) -> str | None:
    """The last fenced Python block that defines ModelNew (else the last Python block), or the
    whole response when it is bare code defining ModelNew."""
    blocks = [(lang, body) for lang, body in FENCE.findall(solution_str or "")]
    with_model = [b for _, b in blocks if "class ModelNew" in b]
    if with_model:
        return with_model[-1]
    py = [b for lang, b in blocks if lang]
    if py:
        return py[-1]
    if "class ModelNew" in (solution_str or ""):
        return solution_str
    return None


_SESSIONS: dict = {}
_SESSIONS_LOCK = threading.Lock()


def shared_session(**options):
    """The process's `hackscan.Session` for these options, made on first use and closed at exit:
    reward calls for new candidates of a problem already seen reuse its reference run."""
    from hackscan.session import Session

    key = tuple(sorted(options.items()))
    with _SESSIONS_LOCK:
        s = _SESSIONS.get(key)
        if s is None:
            s = _SESSIONS[key] = Session(**options)
            atexit.register(s.close)
        return s


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    from hackscan.api import audit

    info = dict(extra_info or {})
    scores = dict(DEFAULT_SCORES, **info.get("scores", {}))
    as_dict = info.get("return_dict", True)
    code = extract_code(solution_str)

    def done(key, score, **detail):
        if not as_dict:
            return float(score)
        return {"score": float(score), "outcome": key, "data_source": data_source, **detail}

    if code is None:
        return done("no_code", scores["no_code"], verdict=None, hack_types=[])
    device = info.get("device")
    if device is None:
        try:
            import torch

            device = "cuda" if torch.cuda.is_available() else "cpu"
        except ImportError:
            device = "cpu"
    dynamic = info.get("dynamic", "all")
    measure = bool(info.get("measure")) and dynamic != "off"
    session = info.get("session")
    if session is None and dynamic == "off" and not measure:
        res = audit(code, ground_truth, dynamic="off", policy=info.get("policy", "kernelbench"))
    else:
        session = session or shared_session(dynamic=dynamic, device=device, policy=info.get("policy", "kernelbench"),
                                             timeout_s=info.get("timeout_s", 180.0),
                                             measure="survivors" if measure else False)
        res = session.audit(code, ground_truth)
    detail = {"verdict": res.verdict, "hack_types": list(res.hack_types), "reasons": list(res.reasons)[:10]}
    if res.verdict == "hacked":
        return done("hacked", scores["hacked"], **detail)
    if res.verdict == "violation":
        return done("violation", scores["violation"], **detail)
    if dynamic == "off":
        return done("unchecked", 0.0, checked=False, **detail)
    dyn = res.dynamic or {}
    if res.verdict == "error" or dyn.get("status") == "error":
        return done("error", scores["error"], **detail)
    if not dyn.get("correct_on_visible"):
        return done("incorrect", scores["incorrect"], **detail)
    if res.verdict != "clean":
        return done("suspect", scores["suspect"], **detail)
    score = scores["clean"]
    m = res.measure or {}
    if m.get("status") == "measured":
        detail["speedup"] = m["speedup"].get("fair")
        detail["measure_flags"] = [f["flag"] for f in m.get("flags", [])]
        if m.get("counted") and detail["speedup"]:
            score += info.get("speedup_weight", 0.25) * max(-1.0, min(3.0, math.log2(detail["speedup"])))
    return done("clean", score, **detail)
