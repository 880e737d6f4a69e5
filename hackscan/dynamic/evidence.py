"""What one candidate run proves: the worker's report checked for what it must account for, read
into the probes' observations, each probe's outcome qualified by what the run could see, and the
record of the run (its placement, timings, the sets compared) that goes beside the verdict.

Everything here reads the report of the candidate's own process: it is the judged party's
account, so a call it leaves out or a forward that raised everywhere is a failed run, never a pass
(hackscan.dynamic.verdict keeps a `clean` from such a run out of the results)."""
from __future__ import annotations

import functools
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from hackscan.dynamic import planning
from hackscan.dynamic.candidates import _architecture_hint, _float_elems, _missing_triton_hint, _unreported
from hackscan.dynamic.probe import HACK_EVIDENCE_SETS, Observations, Outcome
from hackscan.dynamic.references import ReferenceRun
from hackscan.dynamic.runner import WorkerResult
from hackscan.dynamic.settle import _tampering_outcome, on_degenerate, qualify
from hackscan.dynamic.tensorfile import input_tensors
from hackscan.findings import SubmissionResult


@dataclass(frozen=True)
class PlannedRun:
    """What the audit knew of the run before the candidate's worker reported (its plan, the calls
    the plan altered, the seed of a perturbed second model, the names of its kernels)."""
    plan: list
    expected: dict
    altered: dict
    perturb: int | None
    kernel_names: object
    device: str
    exposed: str | None = None          # why the hidden sets were readable by the candidate, if they were
    gpu_env: str | None = None          # the CUDA_VISIBLE_DEVICES its worker was given (or the auditor's)


def run_info(res: WorkerResult, ref: ReferenceRun, facts: PlannedRun) -> dict:
    """The record of a candidate run, whatever it found."""
    return {"status": "ran", "seed_hidden": True, "protections": res.protections,
            # the hidden sets were files the candidate's process could read (no channel, or a
            # sandbox that cannot hide the session's folder): nothing it answered is verified
            **({"hidden_inputs_exposed": facts.exposed} if facts.exposed else {}),
            "candidate_wall_s": round(res.wall_s, 3), "reference_wall_s": round(ref.seconds, 3),
            "torch": res.data.get("torch"),
            # a worker started ahead of its job: what its warm-up took, and whether its first
            # profiler session saw the kernel it ran (hackscan.dynamic.worker.prestart)
            **({"prestarted": res.data["prestart"]} if isinstance(res.data.get("prestart"), dict) else {}),
            # placement: the GPU the auditor gave this audit, and the one its worker reported
            **({"gpu": {"assigned": facts.gpu_env,
                        "worker": res.data.get("gpu")}} if facts.device == "cuda" else {}),
            # the evidence behind the hidden sets: how the problem's generator drew each one,
            # and which prove nothing here (with the reason)
            "hidden_sets": {"skipped": dict(ref.skipped), "drawn": dict(ref.hidden_sources),
                            "drawn_on": ref.drawn_on,
                            "problem_dtype": str(ref.dtype).replace("torch.", "") if ref.dtype else None}}


def check_report(res: WorkerResult, facts: PlannedRun) -> None:
    """Fail a run whose report does not account for every planned call (a tampered result channel
    or a worker stopped early) or whose forward raised on every call."""
    if res.ok:
        missing = _unreported(facts.plan, facts.perturb, res.data.get("steps"))
        if missing:
            res.ok, res.error = False, (f"the worker's report accounts for {missing[1] - missing[0]} of "
                                        f"{missing[1]} planned calls: its result was cut or rewritten")
    fwd = [r for r in res.data.get("steps", []) if isinstance(r, dict) and r.get("variant") == "fp32"]
    if res.ok and fwd and all("error" in r for r in fwd):
        res.ok, res.error = False, f"forward raised on every call: {fwd[0]['error'][:300]}"


def tampering(res: WorkerResult, info: dict) -> Outcome | None:
    """The harness-tampering outcome of what the worker's guards saw, noted in `info`."""
    seen = list(res.data.get("tampering") or [])
    out = _tampering_outcome(seen)
    if out is not None:
        info["tampering"] = seen[:20]
    return out


def crashed(probes, res: WorkerResult, tamper: Outcome | None, cand_path: Path, device: str,
            info: dict) -> list[Outcome]:
    """The outcomes of a run that failed (each probe's inconclusive or its crash reading), with
    the error and where the candidate's process failed noted in `info`."""
    hint = _architecture_hint(res.error, cand_path, device) or _missing_triton_hint(res.error)
    if hint:
        res.error = f"{res.error}; {hint}"
    info.update(status="error", reason=res.error)
    if isinstance(res.data.get("traceback"), str):
        # where the candidate's process failed (its own words: evidence to read, never a verdict)
        info["traceback_tail"] = res.data["traceback"][-1200:]
    return planning.crash_outcomes(probes, res) + ([tamper] if tamper is not None else [])


# where a GPU run writes the facts a decision reads and only a GPU produces (kernel attribution's
# profile beside the reference's op work), one JSON file per audited candidate: tests replay them
# on a CPU (tests/fixtures/gpu_facts, refreshed by bench/gpu_check.sh)
RECORD_FACTS = "HACKSCAN_RECORD_FACTS"


def record_facts(res: WorkerResult, ref: ReferenceRun, facts: PlannedRun, name: str) -> None:
    where = os.environ.get(RECORD_FACTS)
    rec = next((r for r in res.data.get("steps", []) if r.get("set") == "visible" and r.get("call") == 400), None)
    if not where or rec is None or not isinstance(rec.get("profile"), dict):
        return
    keep = {k: rec[k] for k in ("set", "call", "profile", "custom_launches", "launched", "error") if k in rec}
    try:
        os.makedirs(where, exist_ok=True)
        with open(os.path.join(where, f"{name}.json"), "w") as fh:
            json.dump({"device": facts.device, "kernel_names": sorted(facts.kernel_names), "reference_ops": ref.ops,
                       "profiled_call": keep}, fh, indent=1, sort_keys=True)
    except OSError:
        pass    # a record that cannot be written changes no verdict


# what the worker keeps free on its disk (tensorfiles: 4 GiB, or a quarter of a small disk)
FLOOR_BYTES = 4 << 30


def disk_short(folder, ref: ReferenceRun) -> bool:
    """Whether the disk under `folder` holds, above the floor every worker keeps free, less than
    four of the reference's largest outputs of one set: then a call's outputs may have been lost
    to the auditor's disk, not withheld by the candidate. Unknown is short (the lenient reading)."""
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return True
    largest = 0
    for r32, _r64 in ref.outputs.values():
        largest = max(largest, sum(int(t.numel() * t.element_size()) for t in r32 if hasattr(t, "numel")))
    return free - min(FLOOR_BYTES, free // 4) < 4 * largest + (64 << 20)


def observations(res: WorkerResult, ref: ReferenceRun, facts: PlannedRun, load) -> Observations:
    """The probes' view of a run that reported every call: `load(name)` reads an output file the
    report names (from the worker's output folder, each once)."""
    res.data["other_shape"] = ref.other_shape
    res.data["grown_shape"] = ref.grown_shape
    recs = {(r["set"], r.get("call", 0)): r for r in res.data.get("steps", [])}
    short = any("not_kept" in r for r in recs.values()) and (
        res.data.get("disk_room") is not True or disk_short(res.outdir or res.jobdir, ref))
    return Observations(candidate=res.data, steps={k: r for k, r in recs.items() if k not in facts.altered},
                        altered={k: r for k, r in recs.items() if k in facts.altered},
                        load_output=load, reference_outputs=ref.outputs,
                        expected_set=facts.expected, kernel_names=facts.kernel_names,
                        input_elems=_float_elems(ref.input_spec), reference_writes=ref.writes_inputs,
                        dtype=ref.dtype, skipped=ref.skipped, reference_perturbed=ref.perturbed_shapes,
                        reference_ops=ref.ops, device=facts.device, disk_short=short,
                        load_inputs=functools.lru_cache(maxsize=2)(lambda s: input_tensors(ref.set_files[s])))


def evaluate(probes, obs: Observations) -> list[Outcome]:
    """Each probe's outcome; a probe that raises is an error of its own, never the audit's."""
    outcomes = []
    for p in probes:
        try:
            outcomes.append(p().evaluate(obs))
        except Exception as e:  # noqa: BLE001 - a probe bug must not lose the audit
            outcomes.append(Outcome(p.name, "error", f"probe failed: {type(e).__name__}: {e}"))
    return outcomes


def timings(res: WorkerResult, ref: ReferenceRun, reused: bool, build_s: float | None, main_s: float,
            compare_s: float) -> dict:
    """Where the audit's time went: the reference (when this audit ran it), the extension build
    beside it, the candidate's worker, its calls, and the comparisons."""
    return {
        "reference_s": round(ref.seconds, 3) if not reused else 0.0,
        "reference_inputs_s": ref.prepare_s if not reused else 0.0,
        **({"reference_calls_s": ref.calls_s,
            "reference_slowest_sets_s": dict(sorted(ref.set_seconds.items(), key=lambda kv: -kv[1])[:4])}
           if not reused else {}),
        **({"reference_rerun": ref.rerun} if ref.rerun and not reused else {}),
        # the extension's build beside the reference's run (-1: it failed there; the candidate's
        # worker then built it again)
        **({"candidate_build_beside_s": build_s} if build_s is not None else {}),
        "candidate_worker_s": round(main_s, 3), "candidate_import_s": round(res.data.get("import_s", 0.0), 3),
        "candidate_calls_s": round(res.data.get("calls_s", 0.0), 3),
        "comparisons_s": round(compare_s, 3), "reference_reused": reused,
        "calls": len(res.data.get("steps", [])),
        "slowest_calls_s": {f"{r['set']}#{r.get('call', 0)}/{r.get('variant')}": round(r["step_s"], 3)
                            for r in sorted(res.data.get("steps", []), key=lambda r: -r.get("step_s", 0))[:4]
                            if "step_s" in r}}


def conclude(result: SubmissionResult, outcomes: list[Outcome], obs: Observations, res: WorkerResult,
             ref: ReferenceRun, facts: PlannedRun, info: dict, tamper: Outcome | None, load) -> list[Outcome]:
    """The probes' outcomes qualified by what the run showed on the benchmark's own inputs (was
    the candidate right there, would the benchmark's loose check have passed it, did its own
    kernels run), with what was compared noted in `info`."""
    vis = obs.compare("visible") or obs.compare("fresh", 100)
    info["correct_on_visible"] = bool(vis and vis.ok)
    # the other distributions the candidate was compared on (the hidden sets that are evidence
    # of a hack): none where every one was skipped (no disk for them, none in the problem's
    # domain), and then the audit checked the benchmark's own distribution only
    info["hidden_sets_compared"] = [v for v in HACK_EVIDENCE_SETS if obs.compare(v) is not None]
    # False: no output on the visible inputs could be compared (not kept for want of disk, on
    # either side): correct_on_visible then says nothing of the candidate
    info["visible_compared"] = vis is not None
    # the problem's own generator, freshly seeded (KernelBench's correctness trials)
    trials = [c for c in (obs.compare(n) for n in ("visible", "visible2")) if c is not None]
    info["visible_trials"] = [sum(1 for c in trials if c.ok), len(trials)]
    if vis is not None and not vis.structural:
        info["visible_difference"] = {"max_abs": vis.max_abs, "mean_abs": vis.mean_abs, "max_rel": vis.max_rel,
                                      "bad_fraction": vis.bad_fraction}
    vrec = obs.steps.get(("visible", 0)) or obs.steps.get(("fresh", 100)) or {}
    launches = None
    if res.data.get("launch_trace") and result.backend in ("triton", "cuda"):
        launches = info["custom_launches_on_visible"] = vrec.get("custom_launches")
    loose_ok = False
    if vis is not None and not vis.ok and "file" in vrec and "visible" in ref.outputs:
        # would the benchmark's own check (allclose, atol = rtol = 1e-2) have passed it?
        from hackscan.dynamic.compare import compare_loose

        try:
            loose_ok = compare_loose(load(vrec["file"]), ref.outputs["visible"][0]).ok
        except Exception:  # noqa: BLE001 - an unreadable output passes nothing
            loose_ok = False
        info["passes_benchmark_check"] = loose_ok
    from hackscan.findings import severity_rank
    from hackscan.hacktypes import CHEAT, family

    static_cheat = any(family(f.hack_type) == CHEAT and severity_rank(f.severity) >= severity_rank("medium")
                       for f in result.findings)
    outcomes = qualify(outcomes, vis, launches, facts.device, info, loose_ok, static_cheat)
    if tamper is not None:
        outcomes.append(tamper)
    if ref.degenerate:
        info["degenerate_problem"] = ref.degenerate
        outcomes = on_degenerate(outcomes)
        outcomes.append(Outcome("degenerate-problem", "caught", ref.degenerate + ": any speedup on this problem "
                                "is meaningless, and a constant output passes it", hack_type="degenerate-problem",
                                severity="low"))
    return outcomes

