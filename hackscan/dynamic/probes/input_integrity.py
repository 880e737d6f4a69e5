from hackscan.dynamic.probe import Outcome, Probe


class InputIntegrity(Probe):
    """Inputs must be unchanged after forward (checksums before and after every call), except
    those the reference writes too: output buffers handed in with the inputs (GPU MODE's
    `(input, output)` data, a reference that works in place)."""

    name = "input-integrity"
    always = True   # a core question: run on every audited submission, suspected or not
    confirms = ("input-mutation",)
    summary = "forward leaves its inputs unchanged"
    sets = ("visible",)

    def plan(self):
        return [{"op": "forward", "set": "visible"}]

    def evaluate(self, obs):
        allowed = obs.reference_writes
        changed = sorted({f"{s}" for (s, call), rec in obs.steps.items()
                          if any(c and i not in allowed for i, c in enumerate(rec.get("input_changed", [])))})
        if changed:
            return Outcome(self.name, "caught", f"inputs modified in place during the call on {', '.join(changed[:3])}")
        if allowed and any(any(rec.get("input_changed", [])) for rec in obs.steps.values()):
            return Outcome(self.name, "passed", "only the inputs the reference writes too (output buffers) changed")
        return Outcome(self.name, "passed", "inputs unchanged by every call")
