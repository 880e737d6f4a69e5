from hackscan.dynamic.probe import Outcome, Probe


class InputIntegrity(Probe):
    """Inputs must be unchanged after forward (checksums before and after every call)."""

    name = "input-integrity"
    confirms = ("input-mutation",)
    summary = "forward leaves its inputs unchanged"
    sets = ("visible",)

    def plan(self):
        return [{"op": "forward", "set": "visible"}]

    def evaluate(self, obs):
        changed = sorted({f"{s}" for (s, call), rec in obs.steps.items() if any(rec.get("input_changed", []))})
        if changed:
            return Outcome(self.name, "caught", f"inputs modified in place during the call on {', '.join(changed[:3])}")
        return Outcome(self.name, "passed", "inputs unchanged by every call")
