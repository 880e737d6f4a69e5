from hackscan.dynamic.probe import PROFILE_STEP, Outcome, Probe, profile_of

BENIGN = {("cudnn.benchmark", "True")}


class GlobalStateDiff(Probe):
    """Backend flags, default dtype, determinism, thread count and the environment are the same
    before the candidate is imported and after forward; and no torch matmul or convolution of
    the profiled call ran under a precision flag (TF32, reduced-precision reduction) that the
    forward relaxed itself and restored before it returned (the flip is read during the call:
    the flag setters are watched, and the profile orders each flip against the ops)."""

    name = "global-state-diff"
    answers = ("thread-count",)
    confirms = ("global-state-tampering", "precision-downgrade", "async-offload")
    summary = "process-wide state is unchanged by the candidate"
    sets = ("visible",)

    def plan(self):
        return [{"op": "forward", "set": "visible"}, dict(PROFILE_STEP)]

    def evaluate(self, obs):
        st = obs.candidate.get("state")
        if not st:
            return Outcome(self.name, "error", "no state snapshot")
        before = st["before"]
        changed = [k for k in before if st["after_forward"].get(k) != before[k] or st["after_import"].get(k) != before[k]]
        # cuDNN's autotuner switched on only makes convolutions faster, the reference's as much as
        # the candidate's where they share a process: it neither slows the baseline nor loosens
        # the check
        benign = [k for k in changed if (k, st["after_forward"].get(k)) in BENIGN]
        diffs = [f"{k}: {before[k]} -> {st['after_forward'].get(k)}" for k in changed if k not in benign]
        if diffs:
            tf32 = any("tf32" in d or "matmul_precision" in d for d in diffs)
            return Outcome(self.name, "caught", "changed: " + "; ".join(diffs[:4]),
                           "precision-downgrade" if tf32 and len(diffs) == 1 else "global-state-tampering")
        prof, _why = profile_of(obs)
        inside = (prof or {}).get("precision_in_call") or {}
        if inside.get("ops"):
            ops = inside["ops"]
            flags = sorted({f for o in ops for f in o["relaxed"]})
            calls = sum(o["calls"] for o in ops)
            names = sorted({o["op"] for o in ops})
            return Outcome(self.name, "caught", f"inside the call, forward set {', '.join(flags[:3])} and restored it "
                           f"before returning; {calls} torch op call(s) ran under it ({', '.join(names[:4])}), their "
                           "precision lowered on a GPU", "precision-downgrade")
        threads = obs.candidate.get("threads", {})
        more = threads.get("after", 0) - threads.get("before", 0)
        printed = [r for r in obs.steps.values() if "changed_after_return" in r]
        idle = bool(printed) and not any(r["changed_after_return"] for r in printed)
        if obs.candidate.get("left_running"):
            if idle:
                # contained (the worker was killed), and no output changed after a call returned:
                # a process that will not exit, not work hidden from the timer
                return Outcome(self.name, "passed", "the worker would not exit after the calls (threads or "
                               f"processes left running, killed with it), but no output changed after any of "
                               f"{len(printed)} calls returned: not work hidden from the timer")
            return Outcome(self.name, "caught", "the worker would not exit after the calls: threads or processes "
                           "were left running", "async-offload")
        if more > 0 and idle:
            # the threads changed no output after any call returned: an idle pool (one that
            # forward waited for, a library's), not work left running
            return Outcome(self.name, "passed", f"backend flags, dtype defaults and environment unchanged; {more} "
                           f"thread(s) started during the calls are alive but changed no output after any of "
                           f"{len(printed)} calls returned (an idle pool, not evidence)")
        if more > 0:
            # library pools (torch.compile's, say) start threads too: this only corroborates a
            # static suspicion of offloading, it never stands alone
            return Outcome(self.name, "caught", f"{more} thread(s) started during the calls are still alive after "
                           "forward returned", "async-offload", corroborates_only=True)
        note = f" ({more} more Python thread(s) alive, e.g. a library pool; not evidence alone)" if more > 0 else ""
        if benign:
            note += f"; {', '.join(benign)} switched on (speeds the reference too: not tampering)"
        if inside.get("writes"):
            note += (f"; forward changed precision flags {inside['writes']} time(s) during the profiled call, with no "
                     "torch matmul or convolution running under a relaxed one (nothing they govern ran)")
        return Outcome(self.name, "passed", "backend flags, dtype defaults and environment unchanged" + note)
