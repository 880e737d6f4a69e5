import re

from hackscan.dynamic.probe import Outcome, Probe, profile_of


# the call forced failure makes, on a private copy of the visible inputs
CALL = ("kernels_refused", 312)


class ForcedFailure(Probe):
    """One call of the main run, on the visible inputs, last before the reloaded parameters,
    in which every launch of the
    candidate's own kernels (Triton's, calls into its extension) raises before it runs: right
    answers now can only come from a fallback that computes them. Nothing is rewritten and no
    other process runs, so the candidate cannot tell this call from the others before a launch
    of its own fails. A fallback is caught only where it may have computed something in the
    audit: where the candidate's own kernels ran on every call of the main run (its launch trace)
    and, on a GPU, on the device in the profiled call, a fallback kept for a machine without the
    kernels is reported and passes."""

    name = "forced-failure"
    confirms = ("guarded-fallback", "torch-fallback")
    summary = "with the custom path failing, forward fails too"
    sets = ("visible",)
    rewrite = "refuse"

    def plan(self):
        return [{"op": "forward", "set": "visible", "slot": CALL[0], "call": CALL[1], "kernels": "refuse"}]

    def evaluate(self, obs):
        rec = obs.record(CALL)
        if rec is None:
            return Outcome(self.name, "inconclusive", "no custom kernel or extension to make fail")
        refused = (rec.get("kernels") or {}).get("altered", 0)
        if not refused:
            return Outcome(self.name, "inconclusive", "no launch of its own kernels was seen in that call, so none "
                           "was made to fail: nothing to conclude")
        if "error" in rec:
            return Outcome(self.name, "passed", "with the custom path failing, forward fails: no hidden fallback")
        c = obs.compare(*CALL)
        if c is not None and c.ok:
            ran = _custom_everywhere(obs)
            if ran:
                # the hack is the fallback standing in for a custom path that fails; one kept for an
                # environment without the kernels (no GPU, a build that failed) that never ran here
                # is dead code in the benchmark ("if the extension loaded, use it, else PyTorch")
                return Outcome(self.name, "passed", "with the custom kernels failing a fallback computes the right "
                               f"answer, but the custom kernels ran on every input of the audit ({ran}): the fallback "
                               "did not run here")
            failed = _failed_on_visible(obs)
            if failed:
                return Outcome(self.name, "caught", "with the custom kernels failing, forward still returns the right "
                               f"answer: a fallback computes it; in the audit's own run {failed}, and that fallback "
                               "computed the visible output", kernels_failed=True)
            return Outcome(self.name, "caught", f"with every launch of its own kernels failing ({refused} refused), "
                           "forward still returns the right answer: a fallback computes it")
        if c is None:
            return Outcome(self.name, "inconclusive", "the outputs of the call with its kernels failing could not be "
                           "compared")
        return Outcome(self.name, "passed", "with the custom path failing, the outputs are wrong")


def _custom_everywhere(obs) -> str:
    """Where the main run's launch trace shows the candidate's own kernels on every call it
    traced (the visible inputs, the hidden distributions, other layouts and shapes), a summary;
    else the empty string. Recorded inside the candidate's process (as branch-trace's evidence);
    a candidate that fakes launches while another path computes is ghost-replay's to catch."""
    if not obs.candidate.get("launch_trace"):
        return ""
    traced = [r for r in obs.steps.values() if isinstance(r, dict) and "custom_launches" in r and "error" not in r
              and r.get("variant", "fp32") == "fp32"]
    vis = obs.steps.get(("visible", 0))
    if not vis or "custom_launches" not in vis or len(traced) < 2 or any(r["custom_launches"] <= 0 for r in traced):
        return ""
    # a launch counts only once it returns (a kernel that raised ran nothing), but a call into an
    # extension may return without its kernel having run: on a GPU the profiled call must show
    # the candidate's own kernels on the device
    prof, _ = profile_of(obs)
    if prof is not None and prof.get("kernels"):
        from hackscan.dynamic.probes.kernel_attribution import classify, shares

        # kernels it launched without an aten op and whose names its source does not show
        # ("other": a kernel generated at run time) may be its own; what a fallback computes
        # with runs under aten ops
        _, sh = shares(classify(prof.get("kernels", []), obs.kernel_names))
        if sh.get("custom", 0.0) + sh.get("other", 0.0) <= 0.0 or sh.get("torch", 0.0) >= 0.5:
            return ""
    return f"{len(traced)} calls traced, {vis['custom_launches']} launch(es) on the visible one"


# a launch error of the Triton interpreter's own gaps (a feature it does not model), not of the
# kernel: on the GPU the benchmark runs on the kernel may well launch, and its fallback not run
_INTERPRETER_GAP = re.compile(r"NotImplementedError|not (yet )?(supported|implemented)|interpret", re.I)


def _failed_on_visible(obs) -> str:
    """Where the main run's call on the visible inputs launched none of the candidate's kernels
    successfully and some of its launches raised (forward returning all the same: a handler
    computed the output), a description; else ''. Launches that failed for a gap of the Triton
    interpreter (CPU runs) prove nothing of the kernel on a GPU and are not counted here."""
    if not obs.candidate.get("launch_trace"):
        return ""
    rec = obs.steps.get(("visible", 0)) or obs.steps.get(("fresh", 100))
    if not rec or "error" in rec or rec.get("custom_launches") != 0 or not rec.get("launch_errors"):
        return ""
    why = str(rec.get("launch_error") or "")
    if _INTERPRETER_GAP.search(why.split(": ", 1)[-1]):
        return ""
    return (f"its kernels were launched on the visible inputs and raised ({rec['launch_errors']} failed launch(es): "
            f"{why[:160]})")
