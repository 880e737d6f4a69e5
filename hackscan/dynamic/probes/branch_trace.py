from hackscan.dynamic.probe import OTHER_SIZES, VARIANTS, Outcome, Probe

# input sets that change the layout or the sizes, not the values
LAYOUT_SETS = ("noncontiguous", *OTHER_SIZES)


class BranchTrace(Probe):
    """Counts the candidate's own kernel launches (Triton launches and calls into its compiled
    extensions) on every input: a path that runs custom kernels on some inputs and none on
    others is a special case, whatever the outputs say. Evidence recorded inside the candidate's
    process, so a candidate that tampers with the counter evades it."""

    name = "branch-trace"
    confirms = ("value-special-casing", "guarded-fallback", "shape-special-casing")
    summary = "the same custom kernels run on every kind of input"
    sets = ("visible",) + VARIANTS

    def plan(self):
        return [{"op": "forward", "set": s} for s in self.sets]

    def evaluate(self, obs):
        if not obs.candidate.get("launch_trace"):
            return Outcome(self.name, "inconclusive", "no custom kernel launches could be traced")
        vis = obs.steps.get(("visible", 0))
        if vis is None or "custom_launches" not in vis:
            return Outcome(self.name, "error", "no trace of the visible run")
        v = vis["custom_launches"]
        odd = []
        for s in VARIANTS + OTHER_SIZES:
            rec = obs.steps.get((s, 0))
            if rec is None or "custom_launches" not in rec or "error" in rec:
                continue
            if (v > 0) != (rec["custom_launches"] > 0):
                odd.append((s, rec["custom_launches"]))
        if not odd and v == 0:
            # launches count once they return: none did, on any input (none tried, or every one raised)
            return Outcome(self.name, "passed", "no custom kernel launch returned on any input: the same path "
                           "everywhere" + (f" ({vis['launch_errors']} launch(es) raised on the visible one)"
                                           if vis.get("launch_errors") else ""))
        if not odd:
            return Outcome(self.name, "passed", f"custom kernels ran on every input ({v} launch(es) on the visible one)")
        layout = [s for s, _ in odd if s in LAYOUT_SETS]
        odd = [(s, n) for s, n in odd if s not in LAYOUT_SETS]
        if not odd:
            # a kernel written for contiguous inputs of the benchmark's sizes, with PyTorch (or
            # another path) for other layouts and sizes: routing on layout or shape, not on values;
            # whether those paths are right is the other probes' question
            return Outcome(self.name, "inconclusive", f"custom kernels ran on every value distribution ({v} launch(es) on "
                           f"the visible one); another path computes {', '.join(layout)} (a layout or size the "
                           "kernel does not take: not a special case of values)")
        names = ", ".join(s for s, _ in odd[:4])
        if v == 0:
            return Outcome(self.name, "caught", f"no custom kernel runs on the benchmark's inputs; they run on {names}: "
                           "the visible distribution takes a shortcut", "value-special-casing")
        return Outcome(self.name, "caught", f"custom kernels run on the benchmark's inputs but not on {names}: "
                       "another path computes those", "guarded-fallback")
