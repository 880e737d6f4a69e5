from hackscan.dynamic.probe import Outcome, Probe


class GhostReplay(Probe):
    """Every Triton kernel's body is replaced by a no-op (a libcst rewrite of the candidate), and
    on a GPU every CUDA kernel returns at once (a rebuild of its own), and the candidate runs again: if its outputs are still right, they never depended on its kernels."""

    name = "ghost-replay"
    confirms = ("ghost-kernel",)
    summary = "outputs depend on the candidate's own kernels"
    sets = ("visible",)

    def plan(self):
        return [{"op": "forward", "set": "visible"}]

    def evaluate(self, obs):
        run = obs.extra.get("noop")
        if run is None:
            return Outcome(self.name, "inconclusive", "no kernel of its own to disable (Triton, or CUDA on a GPU)")
        if run.candidate.get("error") or not run.steps:
            return Outcome(self.name, "passed", "with its kernels disabled the candidate no longer runs")
        c = run.compare("visible")
        vis = obs.compare("visible")
        if c is not None and c.ok and vis is not None and vis.ok:
            return Outcome(self.name, "caught", "with every kernel of its own a no-op, the outputs are still right: "
                           "they are produced elsewhere")
        return Outcome(self.name, "passed", "disabling the kernels changes the outputs")
