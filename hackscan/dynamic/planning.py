"""Which probes an audit runs and the calls they make: the probes a mode asks of a submission
and those this device can run, the plan of calls they need (in their phases, shared where
idempotent), and what a crashed candidate's worker leaves each probe."""
from __future__ import annotations

from hackscan.dynamic.probe import LATE_SETS, Outcome, Probe, load_probes, probe_catalogue
from hackscan.dynamic.runner import WorkerResult
from hackscan.findings import SubmissionResult

# the calls that go to the profiling worker (PROFILE_STEP and the profiler toggle's plain call),
# the first call there that is not reported, and the largest problem (inputs and outputs) that
# two processes hold at once for it
PROFILE_SIDE_CALLS = {("visible", 400), ("visible", 401)}
PROFILE_WARM_CALL = 402
PROFILE_BESIDE_BYTES = 1 << 30
# the reference's last draws of the problem's generator: inputs no candidate call but ghost
# replay's gets (hackscan.dynamic.probes.ghost_replay)
LATE_DRAWS = ("visible3", "visible4")
# the visible draw again with a few elements changed at secret positions (the reference's
# worker: inputs._touched_set), for fresh-call consistency's last call in the same storage
TOUCHED = "visible_touched"


def asked(result: SubmissionResult, mode: str) -> list[type[Probe]]:
    """The probes this mode asks of the submission, whatever this device can run: every one
    under `all`; else the core ones (`always`) and those its static suspects name."""
    probes = load_probes()
    if mode == "all":
        return list(probes)
    catalogue = probe_catalogue()
    names = {p.name for p in probes if p.always} | {
        n for f in result.findings for pn in f.probes for n in catalogue.get(pn, ())}
    return sorted((p for p in probes if p.name in names), key=lambda p: p.name)


def runs_here(p: type[Probe], device: str) -> bool:
    return not (p.needs_gpu and device != "cuda")


def not_here(result: SubmissionResult, mode: str, device: str) -> list[str]:
    """The probes this audit asks for and cannot run on this device (kernel attribution,
    timing integrity, output fingerprints on a CPU): what a verdict here has not checked."""
    out = [p.name for p in asked(result, mode) if not runs_here(p, device)]
    # probes that run anywhere with a part only a GPU shows (kernel attribution's device kernels)
    out += [f"{p.name} ({p.gpu_part})" for p in asked(result, mode)
            if runs_here(p, device) and getattr(p, "gpu_part", "") and device != "cuda"]
    return sorted(out)


def select_probes(result: SubmissionResult, mode: str, device: str) -> list[type[Probe]]:
    return [p for p in asked(result, mode) if runs_here(p, device)]


def plan(probes) -> tuple[list[dict], dict]:
    steps: list[dict] = []
    seen = set()
    # each probe says where its calls go (Probe.phase): call counters first, timed calls
    # next, profiled calls last
    ordered = sorted(probes, key=lambda p: p.plan_phase())
    for p in ordered:
        for s in p().plan():
            # the phase goes with the step: the channel draws the order within a phase only
            s = dict(s, phase=p.plan_phase())
            # plain forwards (and profiled or timed ones) on a set are idempotent and shared;
            # slot sequences are kept whole
            if s.get("op") in ("forward", "profile", "timing") and "slot" not in s:
                key = (s["set"], s.get("call", 0))
                if key in seen:
                    continue
                seen.add(key)
            steps.append(s)
    # inputs of another layout, then of another size, last (LATE_SETS)
    steps = sorted(steps, key=lambda s: LATE_SETS.get(s.get("set") if "slot" not in s else None, 0))
    expected = {(s.get("slot") or s["set"], s.get("call", 0)): s["expect"] for s in steps
                if s.get("op") in ("forward", "profile", "timing") and "expect" in s}
    return steps, expected


def crash_outcomes(probes, res: WorkerResult) -> list[Outcome]:
    err = res.error or "worker failed"
    out = []
    for p in probes:
        out.append(p.on_crash(res.data, err) or Outcome(p.name, "error", f"the candidate crashed: {err[:300]}"))
    return out
