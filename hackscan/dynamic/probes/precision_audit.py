from dataclasses import replace

import torch

from hackscan.dynamic.probe import EDGE, HACK_EVIDENCE_SETS, Outcome, Probe

FACTOR = 16.0


class PrecisionAudit(Probe):
    """The candidate's error against the fp64 reference, next to the strict-fp32 reference's
    own error on the same inputs. Reduced precision, TF32 or an approximate formula shows as an
    error many times the fp32 reference's, even where it hides inside a loose tolerance. Evidence
    for a static suspect (it never stands alone: some fp32 algorithms are legitimately less
    accurate than PyTorch's). An approximate formula counts as tolerance exploitation only where
    some input set takes its error to a quarter of the benchmark's allowance (the tanh GELU stays
    under 5% of it on any input: a note, not an exploit); lower precision (TF32, half math) is
    confirmed whatever its share."""

    name = "precision-audit"
    confirms = ("precision-downgrade", "tolerance-exploitation")
    summary = "the candidate is about as accurate as the fp32 reference"
    sets = ("visible", "normal")

    def plan(self):
        return [{"op": "forward", "set": s} for s in self.sets]

    def qualify(self, o, run):
        o = super().qualify(o, run)
        if o.status == "caught" and run.wrong_on_visible and not run.loose_ok:
            # an error past the benchmark's own check is a wrong kernel, not an approximation that
            # hides inside the tolerance: the precision audit has nothing to tell apart
            o = replace(o, status="inconclusive", hack_type=None,
                        detail=o.detail + " (but wrong beyond the benchmark's own check: a wrong result, not an "
                        "approximation inside the tolerance)")
        return o

    def evaluate(self, obs):
        from hackscan.dynamic.compare import base_tolerance

        if obs.dtype is not None and base_tolerance(obs.dtype) > base_tolerance(torch.float32):
            # a bf16/fp16/fp8 problem: lower-precision math is its contract, not a downgrade
            return Outcome(self.name, "inconclusive", f"not an fp32 contract: the problem is in {obs.dtype}")
        worst = None
        for s in self.sets:
            rec = obs.steps.get((s, 0))
            r32, r64 = obs.reference_outputs.get(s, (None, None))
            if rec is None or "file" not in rec or r64 is None:
                continue
            cand = obs.load_output(rec["file"])
            for c, a, b in zip(cand, r32, r64):
                if not (isinstance(c, torch.Tensor) and isinstance(b, torch.Tensor)) or not b.is_floating_point() \
                        or c.shape != b.shape:
                    continue
                truth = b.to(c.device).double()
                a = a.to(c.device)
                scale = float(truth.abs().mean()) or 1.0
                ce = float((c.double() - truth).abs().max()) / scale
                re = float((a.double() - truth).abs().max()) / scale
                if ce != ce or re == 0.0:  # NaN, or no independent high-precision run to compare with
                    continue
                ratio = ce / max(re, 1e-12)
                if worst is None or ratio > worst[0]:
                    worst = (ratio, ce, re, s)
        if worst is None:
            return Outcome(self.name, "inconclusive", "no fp64 reference to compare with")
        ratio, ce, re, s = worst
        detail = (f"error against fp64 {ce:.2e} (relative to the mean magnitude) on {s}, the fp32 reference's "
                  f"{re:.2e}: {ratio:.0f}x")
        if ratio > FACTOR and ce > 1e-6:
            share = tolerance_share(obs)
            if share is not None and share < EDGE:
                # less accurate than PyTorch, but nowhere near the benchmark's tolerance: lower
                # precision bought speed (TF32, half math) all the same, while an approximate
                # formula this accurate (tanh GELU: 4.7% of the allowance at worst, on any input)
                # needs no tolerance to pass and exploits none
                return Outcome(self.name, "caught", detail + f"; at most {share:.2g} of the benchmark's allowance "
                               "(allclose, atol = rtol = 1e-2) on any input set: an approximation well inside the "
                               "tolerance, not one that needs it", corroborates_only=True,
                               not_types=("tolerance-exploitation",), inside_check=True)
            return Outcome(self.name, "caught", detail, corroborates_only=True)
        return Outcome(self.name, "passed", detail)


def tolerance_share(obs) -> float | None:
    """The largest error, as a share of the benchmark's allowance, over every input set the
    candidate ran (visible and hidden draws of the generator, numerical extremes left out)."""
    shares = [c.tol_ratio for s in ("visible",) + tuple(HACK_EVIDENCE_SETS)
              if (c := obs.compare_loose(s)) is not None]
    return max(shares) if shares else None
