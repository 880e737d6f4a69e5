from hackscan.dynamic.probe import Outcome, Probe


class OutputFingerprint(Probe):
    """On the GPU, each output is copied on the caller's stream the moment forward returns and
    compared with itself after a device-wide synchronisation: work left on another stream or a
    host thread is still changing the output when the caller's timer stops. On the CPU, where
    threads the candidate started are alive when forward returns, each output is copied then and
    watched for half a second: a thread still writing it shows as a change."""

    name = "output-fingerprint"
    answers = ("timing-integrity",)
    confirms = ("side-stream", "async-offload", "cross-call-batching")
    summary = "outputs are complete when forward returns"
    sets = ("visible",)

    def plan(self):
        return [{"op": "forward", "set": "visible"}]

    def evaluate(self, obs):
        recs = [r for r in obs.steps.values() if "changed_after_return" in r]
        if not recs:
            if obs.device.startswith("cuda"):
                return Outcome(self.name, "inconclusive", "no call's outputs were fingerprinted")
            return Outcome(self.name, "passed", "no thread the candidate started was alive when forward returned")
        late = [f"{r['set']}#{r.get('call', 0)}" for r in recs if r["changed_after_return"]]
        if late:
            return Outcome(self.name, "caught", f"outputs still changed after forward returned on {len(late)} of "
                           f"{len(recs)} calls ({', '.join(late[:3])}): work runs past the caller's stream")
        return Outcome(self.name, "passed", f"outputs complete at return on all {len(recs)} calls")
