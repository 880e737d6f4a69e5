from hackscan.dynamic.probe import Outcome, Probe


class ParameterReinit(Probe):
    """Both models get the same non-trivial parameter values (biases away from zero, scales away
    from one, from the auditor's seed), loaded by name: the outputs must still match."""

    name = "parameter-reinit"
    confirms = ("init-exploitation", "skipped-stage")
    summary = "outputs match with re-initialised parameters"
    sets = ("visible",)

    def plan(self):
        return [{"op": "forward", "set": "visible"}]

    def evaluate(self, obs):
        offered = obs.candidate.get("params_offered")
        if not offered:
            return Outcome(self.name, "inconclusive", "the reference has no parameters to re-initialise")
        loaded = obs.candidate.get("params_loaded", 0)
        if loaded == 0:
            return Outcome(self.name, "inconclusive", "the candidate's parameters do not share the reference's names")
        c = obs.compare("reinit", 300)
        vis = obs.compare("visible")
        if c is None:
            return Outcome(self.name, "error", "no output with re-initialised parameters")
        if not c.ok and vis is not None and vis.ok:
            return Outcome(self.name, "caught", f"right with the initial parameters, wrong with re-initialised ones "
                           f"({loaded}/{offered} loaded): {c.short()}")
        if c.ok:
            return Outcome(self.name, "passed", f"matches with re-initialised parameters ({loaded}/{offered} loaded)")
        return Outcome(self.name, "inconclusive", "wrong with the initial parameters too")
