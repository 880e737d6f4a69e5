from hackscan.dynamic.probe import Outcome, Probe


class OutputType(Probe):
    """Outputs must be plain torch.Tensor objects, not subclasses or wrappers."""

    name = "output-type"
    always = True   # a core question: run on every audited submission, suspected or not
    confirms = ("lazy-tensor",)
    summary = "outputs are plain tensors"
    sets = ("visible",)

    def plan(self):
        return [{"op": "forward", "set": "visible"}]

    def evaluate(self, obs):
        odd = sorted({t for rec in obs.steps.values() for t in rec.get("types", [])
                      if t not in ("torch.Tensor", "builtins.float", "builtins.int")})
        if odd:
            return Outcome(self.name, "caught", f"forward returned {', '.join(odd)}")
        return Outcome(self.name, "passed", "every output is a plain torch.Tensor")
