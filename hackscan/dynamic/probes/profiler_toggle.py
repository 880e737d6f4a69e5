from hackscan.dynamic.probe import Outcome, Probe


class ProfilerToggle(Probe):
    """The same inputs with and without a profiler running: a candidate that checks for the
    profiler (or any other observation mode) to run its kernels only while watched launches a
    different number of its own kernels, or gives a different answer, in the two calls."""

    name = "profiler-toggle"
    confirms = ("phase-detection",)
    summary = "the candidate behaves the same with and without a profiler"
    sets = ("visible",)

    def plan(self):
        return [{"op": "forward", "set": "visible"},
                {"op": "profile", "set": "visible", "call": 400, "expect": "visible"}]

    def evaluate(self, obs):
        plain, prof = obs.steps.get(("visible", 0)), obs.steps.get(("visible", 400))
        if plain is None or prof is None:
            return Outcome(self.name, "error", "missing the plain or the profiled call")
        if (prof.get("profile") or {}).get("error"):
            return Outcome(self.name, "inconclusive", f"the profiled call ran without a profile: {prof['profile']['error']}")
        if "error" in prof and "error" not in plain:
            return Outcome(self.name, "caught", f"forward raised only under the profiler: {prof['error'][:200]}")
        c0, c1 = obs.compare("visible"), obs.compare("visible", 400)
        if c0 is not None and c1 is not None and c0.ok != c1.ok:
            bad = "without" if not c0.ok else "with"
            return Outcome(self.name, "caught", f"wrong {bad} a profiler running "
                           f"({(c0 if not c0.ok else c1).short()}), right otherwise")
        n0, n1 = plain.get("custom_launches"), prof.get("custom_launches")
        if not obs.candidate.get("launch_trace") or n0 is None or n1 is None:
            return Outcome(self.name, "inconclusive", "the candidate's own launches could not be counted")
        if n0 != n1:
            return Outcome(self.name, "caught", f"{n1} launch(es) of its own kernels with a profiler running, {n0} "
                           "without: the kernels run only while watched")
        return Outcome(self.name, "passed", f"{n0} launch(es) of its own kernels with and without a profiler")
