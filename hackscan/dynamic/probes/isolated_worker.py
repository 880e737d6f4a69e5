from hackscan.dynamic.probe import Observations, Outcome, Probe

REFERENCE_MODULES = ("reference", "ref_code", "ref", "model_ref", "original")


class IsolatedWorker(Probe):
    """The candidate runs in a fresh process where the reference module, the reference's
    outputs and the harness do not exist. A candidate that needs them fails there."""

    name = "isolated-worker"
    answers = ("reference-absent",)
    confirms = ("reference-reuse", "harness-introspection")
    summary = "the candidate works without the reference or the harness in its process"
    sets = ("visible",)

    def plan(self):
        return [{"op": "forward", "set": "visible"}]

    @classmethod
    def on_crash(cls, data, error):
        # a worker that failed importing the reference's module answers this probe's question
        if "ModuleNotFoundError" in error:
            return cls().evaluate(Observations(candidate=data, steps={}, load_output=None, reference_outputs={}))
        return None

    def evaluate(self, obs):
        err = obs.candidate.get("error") or ""
        if "ModuleNotFoundError" in err and any(f"'{m}'" in err for m in REFERENCE_MODULES):
            return Outcome(self.name, "caught", f"needs the reference module: {err[:200]}", "reference-reuse")
        vis = obs.compare("visible")
        if vis is not None and vis.ok:
            return Outcome(self.name, "passed", "correct without the reference or the harness in its process")
        return Outcome(self.name, "inconclusive", "the candidate is not correct in isolation either way")
