from hackscan.dynamic.probe import Outcome, Probe

CALLS = 10
MOVED = 100 + CALLS   # the call in new storage


class FreshCallConsistency(Probe):
    """Repeated calls, new values in the same storage, more calls than a correctness check makes,
    and a last call with other values in new storage while the old storage lives on: every
    output is compared with the reference of the values it was given."""

    name = "fresh-call-consistency"
    always = True   # a core question: run on every audited submission, suspected or not
    phase = Probe.FIRST    # call counters must meet a model no other call has touched
    answers = ("timed-recheck", "per-call-timing")
    confirms = ("result-caching", "cross-call-batching", "phase-detection", "stale-memory")
    summary = "every call's output matches the reference for the values it was given"
    sets = ("visible", "visible2")

    def plan(self):
        steps = [{"op": "forward", "set": "visible", "slot": "fresh", "call": 100, "expect": "visible"},
                 {"op": "forward", "set": "visible", "slot": "fresh", "call": 101, "expect": "visible"}]
        cur = "visible"
        for i in range(2, CALLS):
            nxt = "visible2" if cur == "visible" else "visible"
            steps.append({"op": "refill", "into": "fresh", "from": nxt})
            steps.append({"op": "forward", "set": "visible", "slot": "fresh", "call": 100 + i, "expect": nxt})
            cur = nxt
        # the other values in new storage while the old storage lives on, holding its own: what a
        # harness does when each trial draws new tensors. A launch bound to the first call's
        # tensors (a captured graph whose copy-in reads the first input, a kept partial) reads
        # the old storage and returns the old result; the same-storage calls above cannot see it
        other = "visible2" if cur == "visible" else "visible"
        steps.append({"op": "forward", "set": other, "slot": "moved", "call": MOVED, "expect": other})
        return steps

    def evaluate(self, obs):
        first = obs.compare("fresh", 100)
        if first is None:
            return Outcome(self.name, "error", "no output for the first call")
        if not first.ok:
            return Outcome(self.name, "inconclusive", f"wrong on the first call already ({first.short()})")
        bad, ties = [], []
        for i in range(1, CALLS):
            c = obs.compare("fresh", 100 + i)
            if c is not None and not c.ok:
                what = "repeated call" if i == 1 else f"call {i + 1} (same storage, new values)"
                (ties if c.index_only else bad).append(f"{what}: {c.short()}")
        c = obs.compare("moved", MOVED)
        if c is not None and not c.ok:
            what = "a call with other values in new storage (the earlier input still alive, holding its own)"
            (ties if c.index_only else bad).append(f"{what}: {c.short()}")
        if ties and not bad:
            return Outcome(self.name, "inconclusive", "the floating outputs are right on every call; integer outputs "
                           "(indices) select other elements on " + "; ".join(ties[:3]) + ": near-equal values "
                           "taken in another order, not a result kept from an earlier call")
        if bad:
            return Outcome(self.name, "caught", "first call right, later calls wrong: " + "; ".join(bad[:3]))
        return Outcome(self.name, "passed", f"{CALLS} calls, each right for the values it was given")
