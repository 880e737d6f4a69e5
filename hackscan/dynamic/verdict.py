"""The last word on a dynamic audit's verdict: what was verified, and what a failure makes of it.

Every dynamic audit ends here, in every backend (the local pool, a Ray task, a task that never
came back), so no path leads from a broken, blind or partial audit to `clean`:
- `seal` turns a `clean` that no run verified into `unverified`, with the reason, and records what
  the verdict rests on (`evidence`) and the problem-level findings (`problem`);
- `failed` is the verdict of an audit that raised: `error`, except where a certainty already
  stands (`hacked` or `violation`, static or confirmed), which the failure does not undo.

Plain Python (no torch): the CLI, the Ray driver and the session use it without the dynamic layer."""
from __future__ import annotations

from dataclasses import replace

from hackscan.findings import SubmissionResult

# the problem-level findings a run records in its dynamic info, by the key it records them under
PROBLEM_KEYS = (("degenerate-problem", "degenerate_problem"),
                ("nondeterministic-reference", "nondeterministic_reference"))
# those under which no candidate's result says anything of it (a constant passes; any draw
# differs): a reward pays nothing for them and a benchmark counts nothing correct
UNUSABLE_PROBLEMS = ("degenerate-problem", "nondeterministic-reference")


def problem_findings(dyn: dict | None) -> tuple[dict, ...]:
    """What the run found about the problem rather than the candidate."""
    dyn = dyn or {}
    return tuple({"id": pid, "detail": str(dyn[key])[:500]} for pid, key in PROBLEM_KEYS if dyn.get(key))


def unverified_reason(dyn: dict | None) -> str | None:
    """Why a run did not verify its candidate, or None where it did: candidate and reference ran,
    the candidate's outputs on the visible inputs were compared, at least one probe checked it,
    and the problem can tell a right answer from a constant."""
    dyn = dyn or {}
    status = dyn.get("status")
    if status != "ran":
        why = dyn.get("reason") or ("the dynamic audit did not run" if status in (None, "not-run")
                                    else f"the dynamic audit ended {status}")
        return str(why)[:500]
    if dyn.get("visible_compared") is not True:
        return "no output on the visible inputs could be compared"
    if dyn.get("hidden_sets_compared") == []:
        skipped = (dyn.get("hidden_sets") or {}).get("skipped") or {}
        why = "; ".join(f"{k}: {v}" for k, v in list(skipped.items())[:2])
        return ("no hidden input set could be compared (only the benchmark's own distribution was checked)"
                + (f": {why}"[:300] if why else ""))
    if dyn.get("hidden_inputs_exposed"):
        return f"the candidate's process could read the hidden input sets: {str(dyn['hidden_inputs_exposed'])[:300]}"
    if dyn.get("degenerate_problem"):
        return (f"degenerate problem: {str(dyn['degenerate_problem'])[:300]}; a constant output passes every "
                "comparison on it")
    probes = dyn.get("probes") or {}
    if not any(isinstance(p, dict) and p.get("status") == "passed" for p in probes.values()):
        if dyn.get("approximation_within_check"):
            # inside the benchmark's check on every set, but off by hackscan's tolerance, at which
            # every probe compares: none could check the rest (a cache, a fallback, lowered
            # precision behind the approximation), so the error is measured and nothing else is
            return ("off by hackscan's tolerance on every input set (an approximation inside the benchmark's "
                    "check): the probes compare at hackscan's tolerance, and none could check the rest of it")
        return "no probe could check the candidate (every one was inconclusive)"
    return None


def seal(result: SubmissionResult) -> SubmissionResult:
    """A dynamic audit's result as reported: `clean` only where the run verified it."""
    dyn = result.dynamic or {}
    evidence = "dynamic" if dyn.get("status") == "ran" else "static"
    verdict, reasons = result.verdict, tuple(result.reasons)
    if verdict == "clean":
        why = unverified_reason(dyn)
        if why is not None:
            verdict, reasons = "unverified", (f"unverified: {why}",) + reasons
    return replace(result, verdict=verdict, reasons=reasons, evidence=evidence, problem=problem_findings(dyn))


def failed(result: SubmissionResult, why: str) -> SubmissionResult:
    """The verdict of a dynamic audit that raised (the auditor's failure, a lost task, a cleanup
    that failed): `error` with the reason, or a `hacked`/`violation` that already stood, with the
    failure beside it. Never the static `clean`."""
    why = str(why)[:500]
    keep = result.verdict in ("hacked", "violation")
    dyn = dict(result.dynamic or {})
    if not keep or dyn.get("status") != "ran":
        dyn = {"status": "error", "reason": why}
    else:
        dyn["failure_after"] = why
    return replace(result, verdict=result.verdict if keep else "error",
                   reasons=(why,) + tuple(r for r in result.reasons if r != why),
                   error=result.error if keep else why, dynamic=dyn,
                   evidence="dynamic" if dyn.get("status") == "ran" else "static",
                   problem=problem_findings(dyn))
