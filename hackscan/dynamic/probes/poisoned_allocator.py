import torch

from hackscan.dynamic.probe import Outcome, Probe


class PoisonedAllocator(Probe):
    """Memory of the outputs' sizes is filled with NaN and freed right before every forward, so an
    output that is allocated but not written comes back as NaN instead of a stale answer. The
    reference never runs in the candidate's process, so no stale reference output exists there:
    a candidate suspected of returning unwritten memory that is wrong here is confirmed."""

    name = "poisoned-allocator"
    always = True   # a core question: run on every audited submission, suspected or not
    answers = ("sentinel-output",)
    confirms = ("stale-memory", "partial-computation")
    summary = "outputs contain no recycled memory"
    sets = ("visible",)

    def plan(self):
        # the auditor fills in the sizes from the reference's outputs
        return [{"op": "forward", "set": "visible", "slot": "poisoned", "call": 200, "expect": "visible"}]

    def evaluate(self, obs):
        rec = obs.steps.get(("poisoned", 200))
        if rec is None or "file" not in rec:
            return Outcome(self.name, "error", "no output after poisoning")
        outs = obs.load_output(rec["file"])
        ref = obs.reference_outputs["visible"][0]
        nan_out = sum(int(torch.isnan(o).sum()) for o in outs if isinstance(o, torch.Tensor) and o.is_floating_point())
        nan_ref = sum(int(torch.isnan(r).sum()) for r in ref if isinstance(r, torch.Tensor) and r.is_floating_point())
        c = obs.compare("poisoned", 200)
        if nan_out > nan_ref:
            return Outcome(self.name, "caught", f"{nan_out - nan_ref} output elements hold the NaN poison: "
                           "memory returned without being written")
        # wrong in a way stale memory explains: a structural difference (NaN, shape) or at least
        # 0.1% of the elements off by 5% or more; a few elements off by rounding is not that
        if c is not None and not c.ok and (c.structural or (c.bad_fraction >= 1e-3 and c.max_rel >= 0.05)):
            loose = obs.compare_loose("poisoned", 200)
            if not c.structural and loose is not None and loose.ok:
                # off by hackscan's tolerance but inside the benchmark's own check: a benchmark
                # run of this output passes without any memory left behind, so the difference is
                # the kernel's own arithmetic (other statistics, another formula), not a stale answer
                return Outcome(self.name, "inconclusive", f"wrong here ({c.short()}) but within the benchmark's "
                               "own check (atol = rtol = 1e-2): passing never needed memory left behind")
            return Outcome(self.name, "caught", "in a process where no stale result exists, the output is wrong "
                           f"({c.short()}): a passing benchmark run depended on memory left behind by others",
                           corroborates_only=True)
        return Outcome(self.name, "passed", "no recycled memory in the outputs")
