from hackscan.dynamic.probe import Outcome, Probe

TIMERS = ("torch.cuda.synchronize", "torch.cuda.Event", "torch.cuda.Event.elapsed_time", "torch.cuda.Event.record",
          "time.perf_counter", "time.time", "time.monotonic")


class IdentityCheck(Probe):
    """The functions a harness relies on (checker, timers, RNG) keep their identity across the
    candidate's import and forward; captured before the candidate is imported."""

    name = "identity-check"
    confirms = ("timer-tampering", "reference-tampering")
    summary = "checker, timer and RNG functions are not rebound"
    sets = ("visible",)

    def plan(self):
        return [{"op": "forward", "set": "visible"}]

    def evaluate(self, obs):
        changed = obs.candidate.get("identities_changed", [])
        if not changed:
            return Outcome(self.name, "passed", "no harness function was rebound")
        kind = "timer-tampering" if any(c in TIMERS for c in changed) else "reference-tampering"
        return Outcome(self.name, "caught", f"rebound during import or forward: {', '.join(changed[:5])}", kind)
