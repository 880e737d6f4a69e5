"""Comparison of a candidate output with the reference, with tolerances derived from an fp64
run of the reference on the same inputs rather than a fixed atol."""
from __future__ import annotations

from dataclasses import dataclass

import torch

# KernelBench's thresholds, used as the floor of the tolerance
BASE_TOL = {torch.float32: 1e-4, torch.float64: 1e-7, torch.float16: 1e-2, torch.bfloat16: 1e-2}
REF_ERROR_FACTOR = 4.0


@dataclass(frozen=True)
class Comparison:
    ok: bool
    reason: str
    max_abs: float = 0.0
    max_rel: float = 0.0
    bad_fraction: float = 0.0

    def short(self) -> str:
        if self.reason:
            return self.reason
        return f"max abs err {self.max_abs:.3g}, max rel err {self.max_rel:.3g}, {self.bad_fraction:.1%} elements off"


def compare(cand, ref32, ref64=None) -> Comparison:
    """Candidate versus reference outputs (lists of tensors)."""
    if not isinstance(cand, list) or not isinstance(ref32, list):
        return Comparison(False, "outputs are not tensor lists")
    if len(cand) != len(ref32):
        return Comparison(False, f"{len(cand)} outputs, the reference returns {len(ref32)}")
    worst = Comparison(True, "")
    for i, (c, r) in enumerate(zip(cand, ref32)):
        r64 = ref64[i] if ref64 is not None and i < len(ref64) else None
        res = _compare_one(c, r, r64)
        if not res.ok:
            return Comparison(False, f"output {i}: {res.short()}", res.max_abs, res.max_rel, res.bad_fraction)
        if res.max_rel >= worst.max_rel:
            worst = res
    return worst


def _compare_one(c, r, r64) -> Comparison:
    if not isinstance(r, torch.Tensor):
        return Comparison(c == r, "" if c == r else f"scalar {c!r} != {r!r}")
    if not isinstance(c, torch.Tensor):
        return Comparison(False, f"returned {type(c).__name__}, expected a tensor")
    if tuple(c.shape) != tuple(r.shape):
        return Comparison(False, f"shape {tuple(c.shape)}, expected {tuple(r.shape)}")
    if not r.is_floating_point():
        eq = torch.equal(c.to(r.dtype), r)
        return Comparison(eq, "" if eq else "integer output differs")
    truth = (r64 if r64 is not None and r64.shape == r.shape else r).double()
    if torch.isnan(truth).any():
        nan_ref = torch.isnan(truth)
        if not torch.equal(torch.isnan(c.double()), nan_ref):
            return Comparison(False, "NaN pattern differs from the reference's (the reference has NaNs)")
        truth = torch.where(nan_ref, torch.zeros_like(truth), truth)
        c = torch.where(nan_ref, torch.zeros_like(c), c)
    cd = c.double()
    if torch.isnan(cd).any() or torch.isinf(cd).ne(torch.isinf(truth)).any():
        return Comparison(False, "NaN or Inf where the reference is finite")
    base = BASE_TOL.get(r.dtype, 1e-4)
    ref_err = (r.double() - truth).abs() if r64 is not None else torch.zeros_like(truth)
    tol = base + base * truth.abs() + REF_ERROR_FACTOR * ref_err
    err = (cd - truth).abs()
    finite = torch.isfinite(truth)
    err = torch.where(finite, err, torch.zeros_like(err))
    bad = err > tol
    max_abs = float(err.max()) if err.numel() else 0.0
    rel = err / truth.abs().clamp_min(base)
    max_rel = float(rel.max()) if rel.numel() else 0.0
    frac = float(bad.double().mean()) if bad.numel() else 0.0
    return Comparison(not bool(bad.any()), "", max_abs, max_rel, frac)
