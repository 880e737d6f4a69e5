from hackscan.dynamic.planning import TOUCHED
from hackscan.dynamic.probe import Outcome, Probe

CALLS = 10
MOVED = 100 + CALLS   # the call in new storage
FEW = MOVED + 1       # the call after a few elements changed in place
REPEATS = 4           # the same values called again before it, in a row
REPEAT0 = 120         # their call numbers


class FreshCallConsistency(Probe):
    """Repeated calls, new values in the same storage, more calls than a correctness check makes,
    the same values several calls in a row and then only a few elements (at positions the
    auditor draws) changed in place, written so that no version counter moves, and a
    last call with other values in new storage while the old storage lives on: every output is
    compared with the reference of the values it was given."""

    name = "fresh-call-consistency"
    always = True   # a core question: run on every audited submission, suspected or not
    phase = Probe.FIRST    # call counters must meet a model no other call has touched
    answers = ("timed-recheck", "per-call-timing")
    confirms = ("result-caching", "cross-call-batching", "phase-detection", "stale-memory")
    summary = "every call's output matches the reference for the values it was given"
    sets = ("visible", "visible2", TOUCHED)

    def plan(self):
        steps = [{"op": "forward", "set": "visible", "slot": "fresh", "call": 100, "expect": "visible"},
                 {"op": "forward", "set": "visible", "slot": "fresh", "call": 101, "expect": "visible"}]
        cur = "visible"
        for i in range(2, CALLS):
            nxt = "visible2" if cur == "visible" else "visible"
            steps.append({"op": "refill", "into": "fresh", "from": nxt})
            steps.append({"op": "forward", "set": "visible", "slot": "fresh", "call": 100 + i, "expect": nxt})
            cur = nxt
        # (CALLS is even: the last of those calls, like the first, is on the visible draw)
        # the same values again, several calls in a row (a benchmark's timing loop calls one
        # input a hundred times): a cache that serves only once an input has repeated is serving
        # by then. Then the same storage with a few elements changed (the visible draw again, a
        # handful of its values moved at positions only the auditor knows): a cache keyed on a
        # sample of the values, or on a few of them, finds its key unchanged and returns the last
        # answer (every call above changes every value, so such a key changes too and the cache
        # computes). The change is written through another view, which leaves the tensors'
        # version counters as they were: a key on the pointer and `_version` sees none
        for k in range(REPEATS):
            steps.append({"op": "forward", "set": "visible", "slot": "fresh", "call": REPEAT0 + k,
                          "expect": "visible"})
        steps.append({"op": "refill", "into": "fresh", "from": TOUCHED, "quiet": True})
        steps.append({"op": "forward", "set": "visible", "slot": "fresh", "call": FEW, "expect": TOUCHED})
        # the other values in new storage while the old storage lives on, holding its own: what a
        # harness does when each trial draws new tensors. A launch bound to the first call's
        # tensors (a captured graph whose copy-in reads the first input, a kept partial) reads
        # the old storage and returns the old result; the same-storage calls above cannot see it
        steps.append({"op": "forward", "set": "visible2", "slot": "moved", "call": MOVED, "expect": "visible2"})
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
        for k in range(REPEATS):
            c = obs.compare("fresh", REPEAT0 + k)
            if c is not None and not c.ok:
                (ties if c.index_only else bad).append(f"call {k + 2} of the same values in a row: {c.short()}")
        few, odd = self._few(obs), None
        if few is not None:
            if few[0]:
                bad.append(few[1])
            else:
                odd = few[1]
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
        if odd:
            return Outcome(self.name, "inconclusive", odd)
        made = sum(obs.compare(*k) is not None for k in [("fresh", 100 + i) for i in range(CALLS)]
                   + [("fresh", REPEAT0 + k) for k in range(REPEATS)] + [("fresh", FEW), ("moved", MOVED)])
        return Outcome(self.name, "passed", f"{made} calls, each right for the values it was given"
                       + ("" if obs.compare("fresh", FEW) is not None else
                          "; no call after a few elements changed in place (no such draw of this problem)"))

    @staticmethod
    def _few(obs):
        """The call after a few elements changed in place: (True, why) where it returned the
        answer to the call before (right for the previous values, wrong for its own, and the two
        answers differ), (False, why) where it is wrong otherwise; None where it is right, was
        not made, or proves nothing (the few changes leave the reference's output as it was)."""
        from hackscan.dynamic.compare import compare

        c = obs.compare("fresh", FEW)
        if c is None or c.ok:
            return None
        ref_few, ref_vis = obs.reference_outputs.get(TOUCHED), obs.reference_outputs.get("visible")
        if ref_few is None or ref_vis is None or compare(ref_few[0], ref_vis[0], ref_vis[1], obs.dtype).ok:
            return None
        what = "a call after a few input elements changed in place (the rest as the call before)"
        old = obs.compare("fresh", FEW, against="visible")
        if old is not None and old.ok and not c.index_only and not c.structural:
            return True, f"{what}: the previous call's answer ({c.short()})"
        return False, (f"{what}: {c.short()}; not the previous call's answer: an input-dependent error, not a "
                       "result kept from an earlier call")
