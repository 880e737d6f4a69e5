from hackscan.dynamic.probe import Outcome, Probe

RATIO = 1.5          # device-synchronised time over event time ...
MIN_GAP_MS = 0.1     # ... by at least this much: work the caller's timer never waited for
MEASURABLE_MS = 0.2  # below this per call, host overhead hides any difference: no verdict either way


class TimingIntegrity(Probe):
    """Single calls timed two ways, as a benchmark does: CUDA events on the caller's stream (what
    its timer sees) and the host clock up to a device-wide synchronisation (all the work). Work
    enqueued on a private stream or left to a thread finishes after the end event, so the
    synchronised time is much longer than the event time; medians of several calls."""

    name = "timing-integrity"
    confirms = ("side-stream", "async-offload")
    summary = "event timing on the caller's stream covers all the work"
    sets = ("visible",)
    needs_gpu = True

    def plan(self):
        return [{"op": "timing", "set": "visible", "call": 500, "expect": "visible", "repeat": 10}]

    def evaluate(self, obs):
        rec = obs.steps.get(("visible", 500))
        if rec is None or "timing" not in rec or "event_ms" not in rec["timing"]:
            why = rec["error"][:200] if rec and "error" in rec else "needs a GPU"
            return Outcome(self.name, "inconclusive", f"no timing ({why})")
        t = rec["timing"]
        ev, sync, n = t["event_ms"], t["sync_ms"], t["repeat"]
        detail = (f"median of {n} calls: {ev:.3f} ms by CUDA events on the caller's stream, {sync:.3f} ms up to a "
                  "device-wide synchronisation")
        if sync > RATIO * ev and sync - ev > MIN_GAP_MS:
            # host-side effects (a profiler's buffers flushed at a synchronisation, say) widen the
            # gap too: this corroborates a static side-stream suspect, it never stands alone
            return Outcome(self.name, "caught", detail + f" ({sync / max(ev, 1e-6):.1f}x): work runs outside the "
                           "caller's stream", "side-stream", corroborates_only=True)
        if sync < MEASURABLE_MS:
            return Outcome(self.name, "inconclusive", detail + ": too short to separate from host overhead")
        return Outcome(self.name, "passed", detail)
