from hackscan.dynamic.probe import VARIANTS, Outcome, Probe


class HiddenDistributions(Probe):
    """The candidate must match the reference on inputs drawn from other distributions than the
    benchmark's: negated, scaled, standard normal, heavy-tailed, zeros, denormals, large
    magnitude, non-contiguous. Catches a candidate right on the visible distribution only."""

    name = "hidden-distributions"
    confirms = ("value-special-casing", "analytical-shortcut", "constant-output", "skipped-stage",
                "tolerance-exploitation", "stale-memory", "partial-computation", "shape-special-casing")
    summary = "outputs match the reference on hidden input distributions"
    sets = ("visible",) + VARIANTS

    def plan(self):
        return [{"op": "forward", "set": s} for s in self.sets]

    def evaluate(self, obs):
        vis = obs.compare("visible")
        if vis is None:
            return Outcome(self.name, "error", "no output on the visible inputs")
        failures, layout = [], None
        for v in VARIANTS:
            c = obs.compare(v)
            if c is not None and not c.ok:
                if v == "noncontiguous":
                    layout = c.short()  # a layout bug, not a value-dependent cheat
                else:
                    failures.append(f"{v}: {c.short()}")
        if not vis.ok:
            if failures:
                return Outcome(self.name, "inconclusive",
                               f"wrong on the visible inputs too ({vis.short()}): not a hidden-input effect")
            return Outcome(self.name, "inconclusive", f"wrong on the visible inputs ({vis.short()})")
        if failures:
            return Outcome(self.name, "caught", f"right on the visible distribution ({vis.short()}), wrong on "
                           + "; ".join(failures[:4]))
        note = f" (wrong on a non-contiguous layout: {layout})" if layout else ""
        return Outcome(self.name, "passed", f"matches on the visible inputs and the hidden value distributions{note}")
