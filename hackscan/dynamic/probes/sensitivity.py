from dataclasses import replace

import torch

from hackscan.dynamic.probe import Outcome, Probe


class Sensitivity(Probe):
    """The output must change when the inputs change in a way the reference notices: the visible
    inputs against several other sets (normal, negated, x3). Caught only when the output is the
    same on every one of them, so the verdict does not hang on where one random sample falls
    (a shortcut taken for some values is hidden-distributions' to find). A set where forward
    raises took another path: the probe then says nothing."""

    name = "sensitivity"
    always = True   # a core question: run on every audited submission, suspected or not
    confirms = ("constant-output", "ghost-kernel", "analytical-shortcut")
    summary = "outputs change when inputs change"
    sets = ("visible", "normal", "negated", "scaled_x3")

    def plan(self):
        return [{"op": "forward", "set": s} for s in self.sets]

    def qualify(self, o, run):
        o = super().qualify(o, run)
        if o.status == "caught" and run.wrong_on_visible and not run.loose_ok and not run.static_cheat:
            # an output that ignores its inputs and fails even the benchmark's own check may be a
            # kernel broken in this harness (real kernels that expect the harness to load their
            # state came out so): it corroborates a static cheat suspicion, never stands alone
            o = replace(o, corroborates_only=True, detail=o.detail + " (and wrong on the visible inputs)")
        return o

    def evaluate(self, obs):
        a = obs.steps.get(("visible", 0))
        if not a or "file" not in a:
            return Outcome(self.name, "error", "missing outputs")
        ca, ra = obs.load_output(a["file"]), obs.reference_outputs["visible"][0]
        compared, same, raised = 0, 0, []
        for s in self.sets[1:]:
            b = obs.steps.get((s, 0))
            if b and "error" in b:
                raised.append(s)
                continue
            if not b or "file" not in b or s not in obs.reference_outputs:
                continue
            cb, rb = obs.load_output(b["file"]), obs.reference_outputs[s][0]
            if not any(isinstance(x, torch.Tensor) and not torch.equal(x, y) for x, y in zip(ra, rb)):
                continue  # the reference does not notice this change either
            compared += 1
            same += all(isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and x.shape == y.shape
                        and torch.equal(x, y) for x, y in zip(ca, cb))
        if not compared:
            return Outcome(self.name, "inconclusive", "no input set changes the reference's output")
        if same == compared and raised:
            # another path ran on those sets (and failed): the output does follow the inputs there
            return Outcome(self.name, "inconclusive", f"the output is identical on {compared + 1} input sets, but "
                           f"forward raised on {', '.join(raised)}")
        if same == compared:
            return Outcome(self.name, "caught", f"the output is identical on {compared + 1} different input sets; "
                           "the reference's is not")
        return Outcome(self.name, "passed", "the output follows the inputs")
