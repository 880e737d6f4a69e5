from hackscan.dynamic.probe import Outcome, Probe, profile_of

# the calls ghost replay makes, each on a private copy of a fresh draw of the inputs
ALL = ("kernels_poisoned_all", 310)
SOME = ("kernels_poisoned_some", 311)
# "passed" needs the share of wrong output elements under a partial poisoning at most this: an
# elementwise kernel's output is wrong at about instrumentation.SOME of its elements, a kernel whose
# writes meet in a reduction at more; a run where most of the output is wrong says nothing of
# where the rest came from
MOST = 0.5


class GhostReplay(Probe):
    """Two calls of the main run, on fresh draws of the problem's inputs, last before the
    reloaded parameters: in one every element the
    candidate's own launches (Triton kernels, calls into its extension) change is overwritten,
    right after the launch, with a value far from any answer; in the other a drawn sixteenth of
    them. Nothing is rewritten and no other process runs: the candidate cannot tell these calls
    from the others before it reads what its kernels wrote. Right outputs with every write
    poisoned: the outputs never depended on its kernels (caught). Outputs wrong at some elements
    and right at the rest with a share poisoned: its kernels' writes are what the output is made
    of (passed)."""

    name = "ghost-replay"
    # a core question: an output that a torch op overwrites after the launch, or that never
    # reads what the kernels wrote, needs no construct a static rule can see
    always = True
    confirms = ("ghost-kernel",)
    summary = "the candidate's kernels' writes reach the outputs"
    sets = ("visible", "visible3", "visible4")
    rewrite = "poison"

    def plan(self):
        # on two draws of the problem's generator that no other call has (visible3, visible4):
        # an output buffer that still holds what the kernel writes again would hide its writes
        return [{"op": "forward", "set": "visible3", "slot": SOME[0], "call": SOME[1], "kernels": "poison_some"},
                {"op": "forward", "set": "visible4", "slot": ALL[0], "call": ALL[1], "kernels": "poison_all"}]

    def evaluate(self, obs):
        full, some = obs.record(ALL), obs.record(SOME)
        if full is None:
            return Outcome(self.name, "inconclusive", "the call with its kernels' writes poisoned was not made "
                           "(no kernel or extension of its own, or nothing left to compare)")
        k = full.get("kernels") or {}
        noticed = _noticed(obs, (full, some))
        if noticed:
            # the plain calls launched none of these: the candidate took another path once its
            # kernels' writes were poisoned (a canary launch read back, a check of its own
            # buffer), so what it did there says nothing of what it does in a plain call
            return Outcome(self.name, "caught", "with its kernels' writes poisoned it launched kernels that no plain "
                           f"call launched ({', '.join(noticed[:4])}): it behaves otherwise where it notices the "
                           "poison, so neither call shows what its plain calls compute",
                           hack_type="phase-detection", corroborates_only=True, suspect_alone=True)
        if "error" in full:
            return Outcome(self.name, "inconclusive", "with its kernels' writes poisoned forward raised (a check of "
                           f"its own kernels' work, or a crash): that proves nothing either way ({full['error'][:160]})")
        if not k.get("poisoned"):
            return Outcome(self.name, "inconclusive", f"{k.get('altered', 0)} launch(es) of its own kernels were seen "
                           "in that call and they changed no element the auditor could poison: nothing to conclude")
        if k.get("unseen"):
            return Outcome(self.name, "inconclusive", f"that call also replayed {k['unseen']} CUDA graph(s), whose "
                           "writes cannot be poisoned: the outputs may come from their kernels")
        c = obs.compare(*ALL)
        vis = obs.compare("visible")
        if c is not None and c.ok and vis is not None and vis.ok:
            never = _never_launched(obs)
            if never:
                # a kernel that never runs is decoration beside a fallback, not decoy work: the
                # output is torch's, which kernel attribution judges
                return Outcome(self.name, "inconclusive", "the outputs do not depend on its kernels, but none of "
                               f"them ran on the device ({never}): a fallback, not a decoy launch")
            return Outcome(self.name, "caught", f"with every element its kernels wrote poisoned ({k['poisoned']} in "
                           f"{k['altered']} launch(es)), the outputs are still right: they are produced elsewhere")
        if c is None:
            return Outcome(self.name, "inconclusive", "the outputs of the poisoned call could not be compared")
        share = obs.wrong_share(*SOME) if some is not None and "error" not in some else None
        ks = (some or {}).get("kernels") or {}
        if share is not None and ks.get("poisoned") and not ks.get("unseen") and 0.0 < share <= MOST:
            return Outcome(self.name, "passed", f"its kernels' writes reach the outputs: with {ks['poisoned']} of "
                           f"the elements they wrote poisoned, {share:.1%} of the output is wrong and the rest right")
        why = ("forward raised" if some is not None and "error" in some else
               "no output to compare" if share is None else
               "no output element wrong" if share == 0.0 else f"{share:.1%} of the output wrong")
        return Outcome(self.name, "inconclusive", "with every write of its kernels poisoned the outputs are wrong, "
                       f"but with a share of them poisoned {why}: the outputs change with its kernels' writes, "
                       "without showing that they are made of them")


def _noticed(obs, altered) -> list[str]:
    """Kernels the poisoned calls launched and no plain call did (by name, from the launch
    trace), where the plain calls' trace exists; else []."""
    plain = [r for r in obs.steps.values() if isinstance(r, dict) and isinstance(r.get("launched"), dict)
             and "error" not in r]
    if not plain:
        return []
    seen = {n for r in plain for n in r["launched"]}
    new = {n for r in altered if isinstance(r, dict) and isinstance(r.get("launched"), dict) for n in r["launched"]}
    return sorted(new - seen)


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
