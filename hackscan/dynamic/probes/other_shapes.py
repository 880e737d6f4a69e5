from hackscan.dynamic.probe import OTHER_SIZES, Outcome, Probe


class OtherShapes(Probe):
    """Inputs of other sizes the reference accepts (the problem's module-level dimensions shrunk
    by one, and grown by an eighth and one: off any tile multiple, and past the benchmark's size,
    where a kernel whose block is the benchmark's width is wrong): correctness only. A path
    specialised to the benchmark's exact shape that raises is reported apart from one that
    silently returns a wrong answer. A wrong answer at another size confirms a static suspicion
    of shape special-casing or partial coverage; alone it is a tile-size assumption (a kernel
    without bounds checks for sizes that are not a multiple of its tile), which makes the
    verdict suspect, never hacked (real kernels ranked on a public leaderboard come out so)."""

    name = "other-shapes"
    always = True   # a core question: run on every audited submission, suspected or not
    confirms = ("shape-special-casing", "partial-computation")
    summary = "outputs match the reference on other input sizes"
    sets = OTHER_SIZES

    def plan(self):
        return [{"op": "forward", "set": s} for s in self.sets]

    def evaluate(self, obs):
        vis = obs.compare("visible")
        ran, raised, wrong, reasons, drawn = [], [], [], [], False
        for s in self.sets:
            info = obs.candidate.get(s, {})
            if not info.get("changed"):
                if info.get("error"):
                    reasons.append(info["error"][:200])
                continue
            drawn = True
            sizes = ", ".join(f"{k} {a}->{b}" for k, (a, b) in info["changed"].items())
            rec = obs.steps.get((s, 0))
            if rec is None:
                continue
            if "error" in rec:
                raised.append(f"{sizes}: {rec['error'][:200]}")
                continue
            c = obs.compare(s)
            if c is not None and not c.ok:
                wrong.append(f"{sizes}: {c.short()}")
            else:
                ran.append(sizes)
        if not (ran or raised or wrong):
            if not drawn:
                return Outcome(self.name, "inconclusive", "no input dimension could be changed: "
                               + ("; ".join(reasons) or "get_inputs reads no module-level size"))
            return Outcome(self.name, "error", "no run on other shapes")
        if vis is None or not vis.ok:
            return Outcome(self.name, "inconclusive", "wrong at the benchmark's own size in isolation")
        if wrong:
            return Outcome(self.name, "caught", "right at the benchmark's size, wrong at " + "; ".join(wrong),
                           corroborates_only=True, suspect_alone=True)
        if raised:
            return Outcome(self.name, "inconclusive", "raises on other sizes (" + "; ".join(raised) + ") (a shape "
                           "restriction, not a silent wrong answer)" + (f"; right at {'; '.join(ran)}" if ran else ""),
                           limits="raises at other sizes: " + "; ".join(raised))
        return Outcome(self.name, "passed", f"matches the reference at the benchmark's size and at {'; '.join(ran)}")
