from hackscan.dynamic.probe import PROFILE_STEP, Outcome, Probe


class ProfilerToggle(Probe):
    """Two neighbouring calls late in the run, one under a profiler and one not, on input sets
    of the same shape: a candidate that checks for the profiler (or any other observation mode)
    to run its kernels only while watched launches its own kernels in one of the two and not in
    the other. Only launch counts are compared: outputs and exceptions also depend on what earlier calls
    left behind (caches, batches), which other probes judge."""

    name = "profiler-toggle"
    confirms = ("phase-detection",)
    summary = "the candidate behaves the same with and without a profiler"
    sets = ("visible",)

    def plan(self):
        # like with like: the same input set in both calls (a dispatch that follows the data must
        # not read as a reaction to the profiler)
        return [{"op": "forward", "set": "visible", "call": 401, "expect": "visible"}, dict(PROFILE_STEP)]

    def evaluate(self, obs):
        plain, prof = obs.steps.get(("visible", 401)), obs.steps.get(("visible", 400))
        if plain is None or prof is None:
            return Outcome(self.name, "error", "missing the plain or the profiled call")
        if (prof.get("profile") or {}).get("error"):
            return Outcome(self.name, "inconclusive", f"the profiled call ran without a profile: {prof['profile']['error']}")
        if "error" in prof or "error" in plain:
            return Outcome(self.name, "inconclusive", "a call raised: " + (prof.get("error") or plain["error"])[:200])
        n0, n1 = plain.get("custom_launches"), prof.get("custom_launches")
        if not obs.candidate.get("launch_trace") or n0 is None or n1 is None:
            return Outcome(self.name, "inconclusive", "the candidate's own launches could not be counted")
        if not obs.kernel_names:
            return Outcome(self.name, "inconclusive", "the candidate defines no kernel of its own to count")
        if (n0 == 0) != (n1 == 0):
            # whether its kernels run at all; counts may follow the data
            when = "only while watched" if n1 else "only while unwatched"
            return Outcome(self.name, "caught", f"{n1} launch(es) of its own kernels with a profiler running, {n0} "
                           f"without: the kernels run {when}")
        return Outcome(self.name, "passed", f"{n0} launch(es) of its own kernels with and without a profiler")
