import torch

from hackscan.dynamic.probe import Outcome, Probe


class Sensitivity(Probe):
    """The output must change when the inputs change in a way the reference notices."""

    name = "sensitivity"
    confirms = ("constant-output", "ghost-kernel", "analytical-shortcut")
    summary = "outputs change when inputs change"
    sets = ("visible", "normal")

    def plan(self):
        return [{"op": "forward", "set": s} for s in self.sets]

    def evaluate(self, obs):
        a, b = obs.steps.get(("visible", 0)), obs.steps.get(("normal", 0))
        if not a or not b or "file" not in a or "file" not in b:
            return Outcome(self.name, "error", "missing outputs")
        ca, cb = obs.load_output(a["file"]), obs.load_output(b["file"])
        ra, rb = obs.reference_outputs["visible"][0], obs.reference_outputs["normal"][0]
        ref_changes = any(not torch.equal(x, y) for x, y in zip(ra, rb) if isinstance(x, torch.Tensor))
        cand_changes = any(not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and x.shape == y.shape
                                and torch.equal(x, y)) for x, y in zip(ca, cb))
        if ref_changes and not cand_changes:
            return Outcome(self.name, "caught", "the output is identical for different inputs; the reference's is not")
        return Outcome(self.name, "passed", "the output follows the inputs")
