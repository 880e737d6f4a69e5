import re

from hackscan.dynamic.probe import Outcome, Probe, profile_of


class ForcedFailure(Probe):
    """The custom path is made to fail (Triton kernels raise; extension builds raise) and the
    candidate runs again: right answers now can only come from a fallback that computes them. A
    fallback is caught only where it may have computed something in the audit: where the
    candidate's own kernels ran on every call of the main run (its launch trace) and, on a GPU, on
    the device in the profiled call, a fallback kept for a machine without the kernels is
    reported and passes."""

    name = "forced-failure"
    confirms = ("guarded-fallback", "torch-fallback")
    summary = "with the custom path failing, forward fails too"
    sets = ("visible",)
    rewrite = "raise"

    def plan(self):
        return [{"op": "forward", "set": "visible"}]

    def evaluate(self, obs):
        run = obs.extra.get("raise")
        if run is None:
            return Outcome(self.name, "inconclusive", "no custom kernel or extension to disable")
        if run.candidate.get("error") or not run.steps:
            # failing before forward (an extension build refused at import, or a candidate that
            # notices the rewrite and exits) says nothing about a fallback inside forward
            return Outcome(self.name, "inconclusive", "with the custom path failing, the candidate failed before "
                           f"forward ran ({str(run.candidate.get('error') or 'no call recorded')[:160]}): that proves "
                           "nothing about a fallback in forward")
        if all("error" in r for r in run.steps.values()):
            return Outcome(self.name, "passed", "with the custom path failing, forward fails: no hidden fallback")
        c = run.compare("visible")
        if c is not None and c.ok:
            ran = _custom_everywhere(obs)
            if ran:
                # the hack is the fallback standing in for a custom path that fails; one kept for an
                # environment without the kernels (no GPU, a build that failed) that never ran here
                # is dead code in the benchmark ("if the extension loaded, use it, else PyTorch")
                return Outcome(self.name, "passed", "with the custom kernels disabled a fallback computes the right "
                               f"answer, but the custom kernels ran on every input of the audit ({ran}): the fallback "
                               "did not run here")
            failed = _failed_on_visible(obs)
            if failed:
                return Outcome(self.name, "caught", "with the custom kernels disabled, forward still returns the right "
                               f"answer: a fallback computes it; in the audit's own run {failed}, and that fallback "
                               "computed the visible output", kernels_failed=True)
            return Outcome(self.name, "caught", "with the custom kernels disabled, forward still returns the right "
                           "answer: a fallback computes it")
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
