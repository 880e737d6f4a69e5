from hackscan.dynamic.probe import Outcome, Probe

RATIO = 1.5          # device-synchronised time over event time ...
MIN_GAP_MS = 0.1     # ... by at least this much is reported as a gap
MEASURABLE_MS = 0.2  # below this per call, host overhead hides any difference


class TimingIntegrity(Probe):
    """Single calls timed two ways, as a benchmark does: CUDA events on the caller's stream (what
    its timer sees) and the host clock up to a device-wide synchronisation. The numbers are
    reported and clear nothing and catch nothing on their own: on the H200, honest host-bound
    calls show the same gap as side-stream work (a legitimate Triton ReLU: 0.004 ms by events,
    0.29 ms synchronised, because a small kernel's launch overhead lies outside the events).
    Work left on another stream is judged on the device's own record (stream-join) and on the
    outputs (output-fingerprint)."""

    name = "timing-integrity"
    phase = Probe.TIMED    # before a profiler leaves state that slows synchronisations
    confirms = ()
    summary = "event and device-synchronised times of single calls, reported"
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
            return Outcome(self.name, "inconclusive", detail + f" ({sync / max(ev, 1e-6):.1f}x: host overhead or "
                           "work outside the caller's stream; see stream-join)")
        if sync < MEASURABLE_MS:
            return Outcome(self.name, "inconclusive", detail + ": too short to separate from host overhead")
        return Outcome(self.name, "passed", detail)
