from hackscan.dynamic.probe import Outcome, Probe, profile_of


class GhostReplay(Probe):
    """Every Triton kernel's body is replaced by a no-op (a libcst rewrite of the candidate), and
    on a GPU every CUDA kernel returns at once (a rebuild of its own), and the candidate runs again: if its outputs are still right, they never depended on its kernels."""

    name = "ghost-replay"
    confirms = ("ghost-kernel",)
    summary = "outputs depend on the candidate's own kernels"
    sets = ("visible",)
    rewrite = "noop"
    cuda_rewrite_for_suspects = True

    def plan(self):
        return [{"op": "forward", "set": "visible"}]

    def evaluate(self, obs):
        run = obs.extra.get("noop")
        if run is None:
            return Outcome(self.name, "inconclusive", "no kernel of its own to disable (Triton, or CUDA on a GPU)")
        if run.candidate.get("error") or not run.steps:
            # an import-time self-test of its kernels fails here whether or not the kernels
            # make the outputs: a failure before forward proves nothing
            return Outcome(self.name, "inconclusive", "with its kernels disabled the candidate failed before forward "
                           f"ran ({str(run.candidate.get('error') or 'no call recorded')[:160]}): that proves nothing")
        if all("error" in r for r in run.steps.values()):
            return Outcome(self.name, "inconclusive", "with its kernels disabled forward raised (a check of its own "
                           "kernels' work, or a crash): that proves nothing either way")
        c = run.compare("visible")
        vis = obs.compare("visible")
        if c is not None and c.ok and vis is not None and vis.ok and run.candidate.get("cuda_kernels_left_running"):
            # only its Triton kernels were disabled: its CUDA kernels (rewritten only on a GPU, for
            # a suspect) still ran, and may be what made the outputs
            return Outcome(self.name, "inconclusive", "with its Triton kernels disabled the outputs are still right, "
                           "but its CUDA kernels were not disabled in that run: that proves nothing")
        if c is not None and c.ok and vis is not None and vis.ok:
            never = _never_launched(obs)
            if never:
                # a kernel that never runs is decoration beside a fallback, not decoy work: the
                # output is torch's, which kernel attribution judges
                return Outcome(self.name, "inconclusive", "the outputs do not depend on its kernels, but none of "
                               f"them ran on the device ({never}): a fallback, not a decoy launch")
            return Outcome(self.name, "caught", "with every kernel of its own a no-op, the outputs are still right: "
                           "they are produced elsewhere")
        return Outcome(self.name, "passed", "disabling the kernels changes the outputs")


def _never_launched(obs) -> str:
    """Where a profile of forward exists: a description when none of the candidate's own
    kernels ran on the device, else ''."""
    from hackscan.dynamic.probes.kernel_attribution import classify

    prof, _ = profile_of(obs)
    if prof is None or not obs.kernel_names:
        return ""
    classified = classify(prof.get("kernels", []), obs.kernel_names)
    if not classified or any(c == "custom" for _, c in classified):
        return ""
    return f"0 of the {len(classified)} kernels forward launched are its own"
