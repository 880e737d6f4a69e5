"""Comparison of a candidate output with the reference, with tolerances derived from an fp64
run of the reference on the same inputs rather than a fixed atol."""
from __future__ import annotations

import dataclasses

from dataclasses import dataclass

import torch

# Relative tolerance per dtype, applied to the output's magnitude and to its rms (see
# _compare_one). fp32 and fp16 follow KernelBench's thresholds; bf16's rounding unit (2^-8) is
# 8x fp16's, so a kernel that rounds an intermediate to bf16 (legitimate on a bf16 contract) is
# off by a few units: 2e-2; fp8 e4m3 (unit 2^-3) and e5m2 (2^-2) one unit each.
BASE_TOL = {torch.float32: 1e-4, torch.float64: 1e-7, torch.float16: 1e-2, torch.bfloat16: 2e-2}
for _name, _tol in (("float8_e4m3fn", 0.125), ("float8_e4m3fnuz", 0.125), ("float8_e5m2", 0.25),
                    ("float8_e5m2fnuz", 0.25)):
    if hasattr(torch, _name):
        BASE_TOL[getattr(torch, _name)] = _tol
REF_ERROR_FACTOR = 4.0
REF_RMS_FACTOR = 8.0   # about the largest of a million normal draws (5 sigma), with margin


def base_tolerance(dtype) -> float:
    return BASE_TOL.get(dtype, 1e-4)


def problem_dtype(names):
    """The lowest-precision floating dtype among dtype names (the problem's inputs and
    parameters): an fp32 output computed from bf16 inputs is judged at bf16's tolerance."""
    best = None
    for n in names:
        dt = getattr(torch, str(n).replace("torch.", ""), None)
        if isinstance(dt, torch.dtype) and dt.is_floating_point and (best is None or base_tolerance(dt) >
                                                                      base_tolerance(best)):
            best = dt
    return best


@dataclass(frozen=True)
class Comparison:
    ok: bool
    reason: str
    max_abs: float = 0.0
    max_rel: float = 0.0
    bad_fraction: float = 0.0
    structural: bool = False    # wrong in kind (shape, NaN pattern, count, type), not in value
    # every wrong element is Inf or NaN in the candidate where the reference is finite (an
    # overflow on large values: a robustness difference, not another computation)
    overflow_only: bool = False
    # the candidate has NaN or Inf where the reference is finite (with other elements wrong beside
    # them or not): an overflow inside the candidate's arithmetic was involved
    nonfinite: bool = False
    # only integer outputs (indices) differ, selecting other values, while every floating output
    # matches: near-equal values taken in another order, not another computation
    index_only: bool = False
    mean_abs: float = 0.0       # mean absolute error of the output compared (KernelBench's avg_difference)
    # compare_loose: the largest error as a multiple of the check's allowance (|c - r| / (atol +
    # rtol |r|)) over every floating output; below 1 inside the check, 1.05 just past its edge
    tol_ratio: float = 0.0


    def short(self) -> str:
        if self.reason:
            return self.reason
        return f"max abs err {self.max_abs:.3g}, max rel err {self.max_rel:.3g}, {self.bad_fraction:.1%} elements off"


def compare(cand, ref32, ref64=None, dtype=None, inputs=None) -> Comparison:
    """Candidate versus reference outputs (lists of tensors); `dtype`, the problem's
    lowest-precision dtype, raises the tolerance of outputs of a higher precision to its own.
    `inputs` (the call's input tensors, where known) let an integer output that differs be read
    as indices: where the candidate's indices select the same values of an input as the
    reference's, they differ only in the order of ties (top-k, argmax over equal values)."""
    if not isinstance(cand, list) or not isinstance(ref32, list):
        return Comparison(False, "outputs are not tensor lists", structural=True)
    if len(cand) != len(ref32):
        return Comparison(False, f"{len(cand)} outputs, the reference returns {len(ref32)}", structural=True)
    worst = Comparison(True, "")
    index_differs, floats_match, near = None, False, []
    for i, (c, r) in enumerate(zip(cand, ref32)):
        r64 = ref64[i] if ref64 is not None and i < len(ref64) else None
        res = _compare_one(c, r, r64, dtype)
        if not res.ok and res.reason == INTEGER_DIFFERS:
            near.append((i, c, r))   # read against the inputs once every output is compared
            continue
        if not res.ok:
            return Comparison(False, f"output {i}: {res.short()}", res.max_abs, res.max_rel, res.bad_fraction,
                              structural=bool(res.reason), overflow_only=res.overflow_only, mean_abs=res.mean_abs,
                              nonfinite=res.nonfinite)
        if isinstance(r, torch.Tensor) and r.is_floating_point():
            floats_match = True
        if res.max_rel >= worst.max_rel:
            worst = res
    # indices that pick the same values (ties) are the same selection; where every floating
    # output matched, so are indices that pick values within those outputs' own tolerance of the
    # ones the reference picked (a top-k sorting truncated keys picks a near-twin; its values
    # output matched), as the measurement's spot check reads them. The absolute part scales with
    # the input's own magnitude, as the floats' does: a fixed one would let any index pass over
    # tiny inputs
    tol = max(base_tolerance(torch.float32), base_tolerance(dtype) if dtype is not None else 0.0) \
        if floats_match else 0.0
    xs = (inputs() if callable(inputs) else inputs) if near and inputs is not None else None
    for i, c, r in near:
        if xs is None or not same_selection(c, r, xs, rtol=tol, scaled_atol=tol):
            index_differs = i if index_differs is None else index_differs
    if index_differs is not None:
        return Comparison(False, f"output {index_differs}: {INTEGER_DIFFERS}"
                          + (" (the floating outputs match)" if floats_match else ""), structural=True,
                          index_only=floats_match)
    return worst


INTEGER_DIFFERS = "integer output differs"


def same_selection(c, r, inputs, atol: float = 0.0, rtol: float = 0.0, scaled_atol: float = 0.0) -> bool:
    """Whether integer outputs `c` and `r` are indices into some floating input along one of its
    dimensions (as top-k, argmax, sort indices are: the same shape but along that dimension, or
    that dimension reduced away) that pick the same values there: exactly, or within
    atol + rtol * |value| where a tolerance is given (`scaled_atol` adds that many times the
    input's root mean square to atol, as `compare` scales its absolute part)."""
    if not isinstance(c, torch.Tensor) or c.shape != r.shape or c.is_floating_point():
        return False
    ci, ri = c.long(), r.long().to(c.device)
    for x in inputs:
        if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.dim() == 0:
            continue
        x = x.to(c.device)
        for d in range(x.dim()):
            if ci.dim() == x.dim():
                a, b = ci, ri
            elif ci.dim() == x.dim() - 1:
                a, b = ci.unsqueeze(d), ri.unsqueeze(d)
            else:
                continue
            if any(a.shape[k] != x.shape[k] for k in range(x.dim()) if k != d):
                continue
            if a.numel() == 0 or int(a.min()) < 0 or int(a.max()) >= x.shape[d] or int(b.min()) < 0 \
                    or int(b.max()) >= x.shape[d]:
                continue
            va, vb = x.gather(d, a), x.gather(d, b)
            at = atol + (scaled_atol * float(x.double().pow(2).mean().sqrt()) if scaled_atol else 0.0)
            if torch.equal(va, vb) or ((at or rtol) and bool(torch.allclose(va.double(), vb.double(), rtol=rtol,
                                                                            atol=at, equal_nan=True))):
                return True
    return False


def _compare_one(c, r, r64, dtype=None) -> Comparison:
    if not isinstance(r, torch.Tensor):
        return Comparison(c == r, "" if c == r else f"scalar {c!r} != {r!r}")
    if not isinstance(c, torch.Tensor):
        return Comparison(False, f"returned {type(c).__name__}, expected a tensor")
    if tuple(c.shape) != tuple(r.shape):
        return Comparison(False, f"shape {tuple(c.shape)}, expected {tuple(r.shape)}")
    if not r.is_floating_point():
        eq = torch.equal(c.to(r.dtype), r.to(c.device))
        return Comparison(eq, "" if eq else INTEGER_DIFFERS)
    if c.numel() == 0:
        return Comparison(True, "")
    # compare where the candidate's output was loaded (the GPU when auditing on one)
    r = r.to(c.device)
    r64 = r64.to(c.device) if r64 is not None else None
    has64 = r64 is not None and r64.shape == r.shape
    truth = (r64 if has64 else r).double()
    cd = c.double()
    if not bool(torch.isfinite(truth).all()):
        special = ~torch.isfinite(truth)
        same = torch.equal(torch.isnan(cd) & special, torch.isnan(truth)) and \
            torch.equal(torch.where(torch.isinf(truth), cd, truth)[torch.isinf(truth)], truth[torch.isinf(truth)])
        if not same:
            return Comparison(False, "NaN/Inf pattern differs from the reference's (the reference has NaN or Inf)")
        cd = torch.where(special, torch.zeros_like(cd), cd)
        truth = torch.where(special, torch.zeros_like(truth), truth)
    base = max(base_tolerance(r.dtype), base_tolerance(dtype) if dtype is not None else 0.0)
    diff = (cd - truth).abs_()
    nonfinite = ~torch.isfinite(cd)
    if bool(torch.isnan(diff).any()):
        # an overflow alone where every finite element is right (an Inf minus an Inf in the
        # candidate's arithmetic gives its NaN); anything else wrong beside it, a wrong kernel
        fin = ~nonfinite
        scale = float(truth[fin].pow(2).mean().sqrt()) if bool(fin.any()) else 0.0
        rest_ok = bool(((diff[fin]) <= truth[fin].abs() * base + base * scale + torch.finfo(r.dtype).tiny).all())
        return Comparison(False, "NaN or Inf where the reference is finite", overflow_only=rest_ok, nonfinite=True)
    mag = truth.abs()
    # the absolute part scales with the output's own magnitude: a fixed atol of 1e-4 passes an
    # all-zero softmax over 16384 columns (every true value is about 6e-5)
    scale = float(truth.pow(2).mean().sqrt()) if truth.numel() else 0.0
    # below the smallest normal number a flush-to-zero of the output is not an error
    tol = mag * base + (base * scale + torch.finfo(r.dtype).tiny)
    if has64:
        # the reference's own error in the problem's precision, element by element and, as a
        # floor, its typical size over the output: where the native computation is off by that
        # much on average, another valid order of rounding is off by as much anywhere (a bf16
        # reduction that cancels near zero)
        ref_err = (r.double() - truth).abs_()
        tol.add_(ref_err * REF_ERROR_FACTOR).add_(float(ref_err.pow(2).mean().sqrt()) * REF_RMS_FACTOR)
    bad = diff > tol
    max_abs = float(diff.max())
    max_rel = float((diff / mag.clamp_min(base)).max())
    nbad = int(bad.sum())
    overflow = nbad > 0 and bool(nonfinite.any()) and not bool((bad & ~nonfinite).any())
    return Comparison(nbad == 0, "", max_abs, max_rel, nbad / diff.numel(), overflow_only=overflow,
                      mean_abs=float(diff.mean()), nonfinite=bool(nonfinite.any()))


def loose_off(c, r, atol: float = 1e-2, rtol: float = 1e-2, dtype=None):
    """The elements of a floating output `c` outside the benchmark's check against `r` (allclose
    with atol and rtol, never stricter than either output's precision or the problem's `dtype`;
    NaN where both are NaN is equal): (off mask, |c - r|, the allowance, both NaN), in float64."""
    floor = max(base_tolerance(r.dtype), base_tolerance(c.dtype) if c.is_floating_point() else 0.0,
                base_tolerance(dtype) if dtype is not None else 0.0)
    a, rt = max(atol, floor), max(rtol, floor)
    cd, rd = c.double(), r.double()
    diff = (cd - rd).abs()
    both_nan = torch.isnan(cd) & torch.isnan(rd)
    allowed = a + rt * rd.abs()
    return ~(diff <= allowed) & ~both_nan, diff, allowed, both_nan


def compare_loose(cand, ref, atol: float = 1e-2, rtol: float = 1e-2, inputs=None, dtype=None) -> Comparison:
    """KernelBench's own check (allclose with atol = rtol = 1e-2), for spot checks inside a timed
    loop, where the reference ran in another precision mode. `tol_ratio` says how far inside or
    outside the check the worst element is.

    Never stricter than the output's own precision: an fp8 output (3 mantissa bits, spacing 1/8
    near 1) is checked at that dtype's tolerance, as `compare` does, so one rounding step apart is
    not a wrong result (KernelBench's 1e-2 fails an exact fp8 kernel on its rounding alone).
    `dtype`, the problem's lowest-precision dtype, as in `compare`: a bf16 output of an fp8 GEMM is
    checked at fp8's tolerance. `inputs` (the call's inputs, or a function that loads them), as
    in `compare`: integer outputs that select input values within this check's tolerance of the
    ones the reference's select are near-equal values taken in another order (ties, or a top-k
    sorting truncated keys), not a wrong result."""
    if not isinstance(cand, list) or not isinstance(ref, list) or len(cand) != len(ref):
        return Comparison(False, "outputs differ in number or kind", tol_ratio=float("inf"))
    worst, fail, index_differs = 0.0, None, None
    for i, (c, r) in enumerate(zip(cand, ref)):
        if not isinstance(r, torch.Tensor):
            if c != r:
                return Comparison(False, f"output {i}: scalar {c!r} != {r!r}", tol_ratio=float("inf"))
            continue
        if not isinstance(c, torch.Tensor) or tuple(c.shape) != tuple(r.shape):
            return Comparison(False, f"output {i}: not a tensor of shape {tuple(r.shape)}", tol_ratio=float("inf"))
        r = r.to(c.device)
        if not r.is_floating_point():
            if not torch.equal(c.to(r.dtype), r):
                # indices of values within the check's tolerance of the ones the reference picked
                if inputs is not None and same_selection(c, r, inputs() if callable(inputs) else inputs,
                                                         atol=atol, rtol=rtol):
                    continue
                index_differs = i if index_differs is None else index_differs
            continue
        bad, diff, allowed, both_nan = loose_off(c, r, atol, rtol, dtype)
        if diff.numel():
            worst = max(worst, float((diff / allowed).masked_fill(both_nan, 0).nan_to_num(float("inf")).max()))
        if fail is None and bool(bad.any()):
            fail = Comparison(False, f"output {i}: max abs err {float(diff.nan_to_num(float('inf')).max()):.3g}, "
                              f"{float(bad.double().mean()):.1%} elements off", float(diff.nan_to_num(0).max()),
                              0.0, float(bad.double().mean()))
    if fail is not None:
        return dataclasses.replace(fail, tol_ratio=worst)
    if index_differs is not None:
        return Comparison(False, f"output {index_differs}: {INTEGER_DIFFERS}", tol_ratio=float("inf"))
    return Comparison(True, "", tol_ratio=worst)
