from hackscan.dynamic.probe import Outcome, Probe


class ForcedFailure(Probe):
    """The custom path is made to fail (Triton kernels raise; extension builds raise) and the
    candidate runs again: right answers now can only come from a fallback that computes them."""

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
            return Outcome(self.name, "caught", "with the custom kernels disabled, forward still returns the right "
                           "answer: a fallback computes it")
        return Outcome(self.name, "passed", "with the custom path failing, the outputs are wrong")
