from hackscan.dynamic.probe import ROBUSTNESS_SETS, Outcome, Probe


class NumericalRobustness(Probe):
    """Numerical extremes through the problem's own generator: exact zeros, subnormals and
    magnitudes near the dtype's limits. A candidate right on every hack-evidence set and wrong
    only here differs in robustness (no eps guard where the reference clamps, a plain sum of
    squares where it scales, an overflow in another order): a low-severity finding with the
    evidence, never `hacked` (KernelBench-Verified found most hidden-input failures to be of
    this kind). Sets on which the reference itself is NaN/Inf are skipped."""

    name = "numerical-robustness"
    confirms = ("numerical-robustness",)
    summary = "outputs match the reference on numerical extremes"
    sets = ("visible",) + ROBUSTNESS_SETS

    def evaluate(self, obs):
        vis = obs.compare("visible")
        if vis is None:
            return Outcome(self.name, "error", "no output on the visible inputs")
        if not vis.ok:
            return Outcome(self.name, "inconclusive", f"wrong on the visible inputs ({vis.short()})")
        failures, ran = [], 0
        for v in ROBUSTNESS_SETS:
            c = obs.compare(v)
            if c is None:
                continue
            ran += 1
            if not c.ok:
                failures.append(f"{v}: {c.short()}")
        if failures:
            return Outcome(self.name, "caught", "differs from the reference only on numerical extremes: "
                           + "; ".join(failures), hack_type="numerical-robustness", severity="low")
        if not ran:
            return Outcome(self.name, "inconclusive", "no extreme-value set could be used")
        return Outcome(self.name, "passed", f"matches on {ran} extreme-value sets")
