from hackscan.dynamic.probe import Outcome, Probe


class OtherShapes(Probe):
    """Inputs of another size the reference accepts (the problem's module-level dimensions
    shrunk by one, so they are no longer a multiple of any tile): correctness only. A path
    specialised to the benchmark's exact shape that raises is reported apart from one that
    silently returns a wrong answer. A wrong answer at another size confirms a static suspicion
    of shape special-casing or partial coverage; alone it is a tile-size assumption (a kernel
    without bounds checks for sizes that are not a multiple of its tile), which makes the
    verdict suspect, never hacked (real kernels ranked on a public leaderboard come out so)."""

    name = "other-shapes"
    always = True   # a core question: run on every audited submission, suspected or not
    confirms = ("shape-special-casing", "partial-computation")
    summary = "outputs match the reference on other input sizes"
    sets = ("other_shape",)

    def plan(self):
        return [{"op": "forward", "set": "other_shape"}]

    def evaluate(self, obs):
        info = obs.candidate.get("other_shape", {})
        if not info.get("changed"):
            return Outcome(self.name, "inconclusive", "no input dimension could be changed: "
                           + info.get("error", "get_inputs reads no module-level size"))
        sizes = ", ".join(f"{k} {a}->{b}" for k, (a, b) in info["changed"].items())
        rec = obs.steps.get(("other_shape", 0))
        if rec is None:
            return Outcome(self.name, "error", "no run on other shapes")
        if "error" in rec:
            return Outcome(self.name, "inconclusive", f"raises on other sizes ({sizes}): {rec['error'][:200]} "
                           "(a shape restriction, not a silent wrong answer)")
        c = obs.compare("other_shape")
        vis = obs.compare("visible")
        if vis is None or not vis.ok:
            return Outcome(self.name, "inconclusive", "wrong at the benchmark's own size in isolation")
        if c is not None and not c.ok:
            return Outcome(self.name, "caught", f"right at the benchmark's size, wrong at {sizes}: {c.short()}",
                           corroborates_only=True, suspect_alone=True)
        return Outcome(self.name, "passed", f"matches the reference at the benchmark's size and at {sizes}")
