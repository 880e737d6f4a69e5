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
| the run says nothing of the candidate (verdict `unverified`; the reference failed, has a syntax error or is not deterministic; the problem is degenerate; the auditor or the reward itself failed; a CUDA extension without a GPU; no output on the visible inputs could be kept to compare): `infra_error` True | `unverifiable` | 0.0 |
| nothing ran (`dynamic` "off"; or a dynamic run that ran no check and did not say why) | `unchecked` | 0.0 |

With `return_dict` (the default) every outcome returns the same keys, scalars and strings only,
so that verl's reward managers can stack them per batch: `score` and `reward` (the same number:
verl's managers read one or the other), `outcome`, `data_source`, `verdict`, `evidence` ("static"
or "dynamic": what the verdict rests on; "" where no audit ran), `hack_types` and `reasons`
(joined strings), `speedup` (NaN unless measured), `measure_flags`, `checked` (a dynamic check
ran), `infra_error` (mask these: they say nothing of the policy's kernel), `problem` (the
problem-level findings' ids, comma-joined, "" where none: `degenerate-problem` where the
reference's output never changes, `nondeterministic-reference`; such a sample is `unverifiable`,
never paid for correctness or speed, so drop it or mask it by `infra_error`). The reward never
raises: an exception in the auditor, or an option value not in `hackscan.config.CHOICES`
(`dynamic`, `device`, `policy`), gives `unverifiable` with the reason in `reasons`.

The code audited is the last fenced block as above; a response cut off before its closing fence
(a length limit) is audited as the code inside the unclosed block. A reference (`ground_truth`)
that cannot be parsed is an infrastructure failure (`unverifiable`), never the policy's error.
`compute_score` accepts keyword arguments (verl passes its config's `reward_kwargs` so) as
`extra_info` keys; `compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos)`
is the batch reward manager's shape and audits the batch in one session.

With `extra_info["measure"]` true (a GPU), a clean candidate whose speedup counts gets
`speedup_weight * clip(log2(fair speedup), -1, 3)` on top (default weight 0.25): the fair speedup
is against TF32 PyTorch with fresh inputs, so caching, side streams and precision tricks earn
nothing. With `extra_info["dynamic"] == "off"` only the static pass runs: hacked and violating
responses get their penalties, everything else `unchecked` (a filter in front of your own
correctness check).

Other `extra_info` keys: `device` ("cuda" when available), `dynamic` ("all"), `policy`
("kernelbench"), `timeout_s` (180), `return_dict` (True: a dict with `score` and the details,
which verl's reward managers accept; False: the float alone), `session` (a `hackscan.Session`
to audit in; by default one per process and set of options, kept across calls, so a new
candidate of a problem already scored does not run its reference again).
"""
from __future__ import annotations

import math
import re

from hackscan.dynamic.verdict import UNUSABLE_PROBLEMS
from hackscan.integrations import shared_session, unverifiable
from hackscan.scanning import as_source_text

DEFAULT_SCORES = {"no_code": -1.0, "hacked": -1.0, "violation": -0.5, "error": 0.0, "incorrect": 0.0,
                  "suspect": 0.5, "clean": 1.0, "unverifiable": 0.0, "unchecked": 0.0}
FENCE = re.compile(r"```[ \t]*(python|py)?[^\n]*\n(.*?)```", re.S | re.I)
# a block opened and never closed: the response was cut off inside it
OPEN_FENCE = re.compile(r"```[ \t]*(python|py)?[^\n]*\n(.*)\Z", re.S | re.I)


def extract_code(solution_str: str) -> str | None:
    """The last fenced Python block that defines ModelNew (else the last Python block), or the
    whole response when it is bare code defining ModelNew. A response cut off before its last
    block's closing fence (a length limit) keeps that block: the code inside it, to the end."""
    text = solution_str if isinstance(solution_str, str) else ""
    found = list(FENCE.finditer(text))
    blocks = [(m.group(1), m.group(2)) for m in found]
    rest = text[found[-1].end():] if found else text
    open_block = OPEN_FENCE.search(rest)
    if open_block:
        blocks.append((open_block.group(1), open_block.group(2)))
    with_model = [b for _, b in blocks if "class ModelNew" in b]
    if with_model:
        return with_model[-1]
    py = [b for lang, b in blocks if lang]
    if py:
        return py[-1]
    if "class ModelNew" in text:
        return text
    return None


# every outcome returns these keys, scalars and strings only: verl's reward managers append each
# key's value per response and turn each list into an array, so a key missing from one outcome,
# or a list value, breaks the batch
RESULT_KEYS = ("score", "reward", "outcome", "data_source", "verdict", "evidence", "hack_types", "reasons",
               "speedup", "measure_flags", "checked", "infra_error", "problem")


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    """The reward for one response. `kwargs` (verl passes its config's `reward_kwargs` this way)
    are read as `extra_info` keys, `extra_info` winning where both name one. Never raises: a
    failure of the auditor (or of the options given) is an `unverifiable` outcome with
    `infra_error` True and the reason in `reasons`."""
    return compute_score_batch([data_source], [solution_str], [ground_truth], [extra_info], **kwargs)[0]


def compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos=None, **kwargs):
    """verl's batch reward manager shape: lists in, one result per response out, in order. The
    responses share one session and are audited `extra_info["jobs"]` (default: the session's
    bound) at a time; responses whose options differ go to the session of their options. Never
    raises for a response: whatever fails becomes that response's `unverifiable` result."""
    n = len(solution_strs)
    extra_infos = list(extra_infos) if extra_infos is not None else [None] * n
    out: list = [None] * n
    infos: list = [dict(kwargs)] * n
    groups: dict = {}
    for i in range(n):
        try:
            info = dict(kwargs)
            info.update(extra_infos[i] or {})
            infos[i] = info
            code = extract_code(solution_strs[i])
            if code is None:
                out[i] = _done(info, data_sources[i], "no_code", info.get("return_dict", True))
                continue
            dynamic = info.get("dynamic", "all")
            measure = bool(info.get("measure")) and dynamic != "off"
            opts = _session_options(info, dynamic, measure)
            why = _reference_problem(ground_truths[i])
            if why:
                # the dataset's reference cannot be read: nothing here says anything of the policy
                out[i] = _infra(info, data_sources[i], why)
                continue
            groups.setdefault(tuple(sorted(opts.items())), []).append((i, as_source_text(code), info, dynamic))
        except Exception as e:  # noqa: BLE001 - the reward never raises
            out[i] = _infra(infos[i], _at(data_sources, i), _failure(e, "the reward's options"))
    for key, members in groups.items():
        try:
            opts = dict(key)
            session = members[0][2].get("session") or shared_session(**opts)
            jobs = members[0][2].get("jobs")
            results = session.audit_many([(code, as_source_text(ground_truths[i])) for i, code, _, _ in members], jobs)
            for (i, _, info, dynamic), res in zip(members, results):
                try:
                    out[i] = _score(info, data_sources[i], res, dynamic, info.get("return_dict", True))
                except Exception as e:  # noqa: BLE001 - the reward never raises
                    out[i] = _infra(info, data_sources[i], _failure(e, "scoring the audit"))
        except Exception as e:  # noqa: BLE001 - the audit failed: these responses are unverifiable
            for i, _, info, _ in members:
                if out[i] is None:
                    out[i] = _infra(info, data_sources[i], _failure(e, "the audit"))
    for i in range(n):
        if out[i] is None:   # nothing above filled it (defensive: every response gets its result)
            out[i] = _infra(infos[i], _at(data_sources, i), "no result was produced for this response")
    return out


def _at(seq, i):
    try:
        return seq[i]
    except Exception:  # noqa: BLE001 - the reward never raises
        return ""


def _reference_problem(ground_truth) -> str | None:
    """Why the reference (`ground_truth`) cannot be audited against, or None."""
    if not isinstance(ground_truth, str) or not ground_truth.strip():
        return f"reference: ground_truth is not source text ({type(ground_truth).__name__})"
    import ast

    try:
        ast.parse(ground_truth)
    except SyntaxError as e:
        return f"reference: syntax error at line {e.lineno}: {e.msg}"
    except (ValueError, RecursionError, MemoryError) as e:
        return f"reference: cannot be parsed: {type(e).__name__}: {e}"
    return None


def _failure(e: BaseException, stage: str) -> str:
    return f"hackscan failed in {stage}: {type(e).__name__}: {e}"[:2000]


def _infra(info, data_source, reason: str):
    """An outcome that says nothing of the policy's kernel: `unverifiable`, `infra_error` True."""
    info = info if isinstance(info, dict) else {}
    as_dict = info.get("return_dict", True) is not False
    try:
        return _done(info, data_source, "unverifiable", as_dict, infra_error=True, reasons=reason)
    except Exception:  # noqa: BLE001 - the caller's own scores cannot be read: the default ones
        return _done({}, data_source, "unverifiable", as_dict, infra_error=True, reasons=reason)


def _session_options(info: dict, dynamic: str, measure: bool) -> dict:
    from hackscan.config import check_choice

    check_choice("dynamic", dynamic)
    device = info.get("device")
    if device is None:
        try:
            import torch

            device = "cuda" if torch.cuda.is_available() else "cpu"
        except ImportError:
            device = "cpu"
    check_choice("device", device)
    policy = info.get("policy", "kernelbench")
    check_choice("policy", policy)
    return {"dynamic": dynamic, "device": device, "policy": policy,
            "timeout_s": float(info.get("timeout_s", 180.0)), "measure": "survivors" if measure else False}


def _done(info: dict, data_source, key: str, as_dict: bool, **detail):
    scores = dict(DEFAULT_SCORES, **info.get("scores", {}))
    score = float(detail.pop("score", scores[key]))
    if not as_dict:
        return score
    out = {"score": score, "reward": score, "outcome": key, "data_source": str(data_source), "verdict": "",
           "evidence": "", "hack_types": "", "reasons": "", "speedup": float("nan"), "measure_flags": "",
           "checked": False, "infra_error": False, "problem": ""}
    out.update(detail)
    return out


def _score(info: dict, data_source, res, dynamic: str, as_dict: bool):
    scores = dict(DEFAULT_SCORES, **info.get("scores", {}))
    problem = [p for p in getattr(res, "problem", ()) or () if isinstance(p, dict)]
    ids = [str(p.get("id", "")) for p in problem]
    detail = {"verdict": res.verdict, "evidence": str(getattr(res, "evidence", "") or ""),
              "hack_types": ",".join(res.hack_types), "reasons": " | ".join(list(res.reasons)[:10])[:2000],
              # the problem's own findings, by id: a trainer drops the samples of a named problem
              "problem": ",".join(ids)}
    about_problem = " | ".join(f"{p.get('id')}: {p.get('detail', '')}" for p in problem)
    if res.verdict == "hacked":
        return _done(info, data_source, "hacked", as_dict, checked=True, **detail)
    if res.verdict == "violation":
        return _done(info, data_source, "violation", as_dict, checked=True, **detail)
    dyn = res.dynamic or {}
    if dynamic == "off":
        # nothing ran: a filter in front of the user's own correctness check
        return _done(info, data_source, "unchecked", as_dict, **detail)
    if res.verdict == "unverified" or unverifiable(dyn) or set(ids) & set(UNUSABLE_PROBLEMS):
        # the run says nothing of the candidate (or the problem cannot tell a kernel from a
        # constant): never scored as a wrong kernel nor paid for speed; mask it by `infra_error`
        # or score it through extra_info["scores"]["unverifiable"]
        why = " | ".join(x for x in (about_problem, str(dyn.get("reason", "") or ""), detail["reasons"]) if x)
        return _done(info, data_source, "unverifiable", as_dict, infra_error=True,
                     **dict(detail, reasons=why[:2000]))
    if dyn.get("status") == "not-run":
        # nothing ran: a filter in front of the user's own correctness check
        return _done(info, data_source, "unchecked", as_dict, **detail)
    if res.verdict == "error" and any(str(r).startswith("reference") for r in res.reasons):
        # the reference could not be read: an infrastructure outcome, not the policy's error
        return _done(info, data_source, "unverifiable", as_dict, infra_error=True, **detail)
    if res.verdict == "error" or dyn.get("status") == "error":
        return _done(info, data_source, "error", as_dict, checked=True, **detail)
    if dyn.get("visible_compared") is False and res.verdict != "hacked":
        # no output on the visible inputs could be compared (the disk held none): nothing is
        # known of its correctness, which is no wrong kernel
        return _done(info, data_source, "unverifiable", as_dict, infra_error=True, **detail)
    if not dyn.get("correct_on_visible"):
        return _done(info, data_source, "incorrect", as_dict, checked=True, **detail)
    if res.verdict != "clean":
        return _done(info, data_source, "suspect", as_dict, checked=True, **detail)
    score = scores["clean"]
    m = res.measure or {}
    if m.get("status") == "measured":
        sp = m["speedup"].get("fair")
        detail["speedup"] = float(sp) if sp else float("nan")
        detail["measure_flags"] = ",".join(f["flag"] for f in m.get("flags", []))
        if m.get("counted") and sp:
            score += info.get("speedup_weight", 0.25) * max(-1.0, min(3.0, math.log2(sp)))
    return _done(info, data_source, "clean", as_dict, score=score, checked=True, **detail)
