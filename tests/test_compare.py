"""The auditor's comparison: tolerances from the reference's own error, indices that differ only
by ties, and what counts as wrong in kind rather than in value."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from hackscan.dynamic.compare import compare, same_selection  # noqa: E402


def test_topk_indices_that_differ_only_among_tied_values_are_the_same_answer():
    x = torch.randn(4, 64)
    x[:, 5] = x[:, 9] = 10.0          # a tie at the top of every row
    vals, ref_idx = torch.topk(x, 3, dim=-1)
    cand_idx = ref_idx.clone()
    cand_idx[:, [0, 1]] = cand_idx[:, [1, 0]]   # the tied pair in the other order
    assert not torch.equal(cand_idx, ref_idx)
    assert compare([vals, cand_idx], [vals, ref_idx], inputs=[x]).ok
    # without the inputs the same difference is a wrong integer output
    assert not compare([vals, cand_idx], [vals, ref_idx]).ok
    # indices that pick other values are wrong whatever the inputs
    wrong = ref_idx.clone()
    wrong[:, 2] = (wrong[:, 2] + 1) % 64
    res = compare([vals, wrong], [vals, ref_idx], inputs=[x])
    assert not res.ok and "integer output differs" in res.reason


def test_argmax_over_an_inner_dimension_read_as_indices():
    x = torch.randn(3, 8, 5)
    x[:, 2, :] = x[:, 6, :] = 50.0
    ref = torch.full((3, 5), 2, dtype=torch.long)
    cand = torch.full((3, 5), 6, dtype=torch.long)
    assert same_selection(cand, ref, [x])
    assert not same_selection(torch.full((3, 5), 1, dtype=torch.long), ref, [x])
    # out-of-range indices are never read as a selection
    assert not same_selection(torch.full((3, 5), 99, dtype=torch.long), ref, [x])


def test_bf16_cancellation_is_judged_by_the_references_own_error():
    """An output that is the small difference of two large bf16 products: the reference in bf16
    is off by its own rounding of the products on most elements; a candidate that rounds in
    another order is off by as much on elements where the reference happened to be close. That
    is not a wrong answer."""
    g = torch.Generator().manual_seed(0)
    a = torch.randn(256, 512, generator=g)
    b = torch.randn(512, 64, generator=g)
    b2 = b + 0.01 * torch.randn(512, 64, generator=g)
    truth = a.double() @ b.double() - a.double() @ b2.double()

    def bf(t):
        return t.bfloat16().float()

    ref = (bf(bf(a) @ bf(b)) - bf(bf(a) @ bf(b2))).bfloat16()

    def halves(w):
        return bf(bf(a[:, :256]) @ bf(w[:256])) + bf(bf(a[:, 256:]) @ bf(w[256:]))

    cand = (bf(halves(b)) - bf(halves(b2))).bfloat16()
    assert compare([cand], [ref], [truth], dtype=torch.bfloat16).ok
    # the floor is the reference's own typical error, never more: the output negated (off by
    # twice its size) is wrong, and so is one element off by ten times the reference's error
    assert not compare([(-truth).bfloat16()], [ref], [truth], dtype=torch.bfloat16).ok
    spike = truth.clone()
    spike[7, 7] += 10 * float((ref.double() - truth).pow(2).mean().sqrt()) + 0.1
    assert not compare([spike.bfloat16()], [ref], [truth], dtype=torch.bfloat16).ok


def test_wrong_in_kind_is_structural_and_wrong_in_value_is_not():
    r = [torch.ones(4)]
    assert compare([torch.ones(5)], r).structural
    assert compare([torch.full((4,), float("nan"))], r).structural
    assert compare([torch.ones(4), torch.ones(1)], r).structural
    v = compare([torch.ones(4) * 1.5], r)
    assert not v.ok and not v.structural


def test_an_overflow_where_the_reference_stays_finite_is_told_apart_from_a_wrong_value():
    """softplus as log(1 + exp(x)) overflows to Inf past x = 88 where PyTorch's stays finite:
    every wrong element is Inf, the rest right. A finite wrong element beside it is no overflow."""
    # a fixed sweep: past 88 on both sides, so the overflow is certain, not a chance of the draw
    x = torch.linspace(-150.0, 150.0, 1001)
    ref = torch.nn.functional.softplus(x)
    naive = torch.log1p(torch.exp(x))
    assert bool(torch.isinf(naive).any())
    res = compare([naive], [ref])
    assert not res.ok and res.overflow_only
    both = naive.clone()
    both[torch.isfinite(both).nonzero()[0]] += 1.0
    res = compare([both], [ref])
    assert not res.ok and not res.overflow_only
    # NaN from Inf - Inf in the candidate's arithmetic: an overflow too, where the rest is right
    nan = ref.clone()
    nan[:3] = float("nan")
    assert compare([nan], [ref]).overflow_only
    nan[10] += 1.0
    assert not compare([nan], [ref]).overflow_only


def test_indices_that_pick_other_values_while_the_values_match_are_index_only():
    x = torch.randn(4, 64)
    vals, idx = torch.topk(x, 3, dim=-1)
    other = idx.clone()
    other[:, 2] = (other[:, 2] + 1) % 64
    res = compare([vals, other], [vals, idx], inputs=[x])
    assert not res.ok and res.index_only and "floating outputs match" in res.reason
    # the values wrong as well: a wrong answer, not an index question
    res = compare([vals + 1, other], [vals, idx], inputs=[x])
    assert not res.ok and not res.index_only
    # integer outputs alone (argmax): nothing to say the selection is near-equal
    res = compare([other], [idx], inputs=[x])
    assert not res.ok and not res.index_only


def test_the_benchmarks_check_is_never_stricter_than_the_outputs_own_precision():
    from hackscan.dynamic.compare import compare_loose

    fp8 = getattr(torch, "float8_e4m3fn", None)
    if fp8 is None:
        pytest.skip("this torch has no float8_e4m3fn")
    torch.manual_seed(0)
    exact = torch.randn(256, 64) * 3
    ref = exact.to(fp8)
    # the same values rounded one step the other way on a few elements: an exact fp8 kernel whose
    # accumulation order differs; KernelBench's fixed 1e-2 would call it wrong
    nudged = (exact * (1 + 0.07 * (torch.rand_like(exact) < 0.01))).to(fp8)
    assert not torch.equal(nudged.float(), ref.float())
    assert compare_loose([nudged], [ref]).ok
    # a wrong fp8 result still fails: half the values, or nothing written
    assert not compare_loose([(exact * 0.5).to(fp8)], [ref]).ok
    assert not compare_loose([torch.zeros_like(ref)], [ref]).ok
    # fp32 outputs keep the benchmark's own 1e-2
    r32 = torch.randn(1000)
    assert not compare_loose([r32 * 1.02], [r32]).ok
    assert compare_loose([r32 * 1.005], [r32]).ok


def test_the_benchmarks_check_reads_indices_of_near_equal_values_and_the_problems_precision():
    from hackscan.dynamic.compare import compare_loose

    torch.manual_seed(1)
    x = torch.randn(16, 512)
    vals, idx = torch.topk(x, 4, dim=-1)
    # a top-k that sorts truncated keys: where two values agree to 1e-5 it may pick either
    near = x.clone()
    near[:, 7] = vals[:, 0] - 1e-5          # a near-twin of each row's largest value
    cand_idx = idx.clone()
    cand_idx[:, 0] = 7
    assert compare_loose([vals, cand_idx], [vals, idx], inputs=[near]).ok
    assert not compare_loose([vals, cand_idx], [vals, idx]).ok          # no inputs: nothing to read them by
    # indices that select other values fail, whatever the values output says
    assert not compare_loose([vals, torch.zeros_like(idx)], [vals, idx], inputs=[x]).ok
    # a bf16 output of a problem whose inputs are fp8 is checked at fp8's tolerance
    fp8 = getattr(torch, "float8_e4m3fn", None)
    if fp8 is not None:
        ref = torch.full((64,), 2.0, dtype=torch.bfloat16)
        got = ref + 0.125
        assert not compare_loose([got], [ref]).ok
        assert compare_loose([got], [ref], dtype=fp8).ok


def test_indices_of_near_twins_within_the_outputs_tolerance_are_the_same_selection():
    """A top-k that sorts truncated keys picks a near-twin of the reference's value (found on a
    real bitonic top-k): its values output matches at the floats' tolerance, and its indices pick
    values that close to the reference's; not a wrong answer. A pick further off, or beside
    values that do not match, still is."""
    x = torch.randn(4, 64)
    vals, idx = torch.topk(x, 3, dim=-1)
    twin = idx.clone()
    twin[0, 1] = (idx[0, 1] + 7) % 64
    x[0, twin[0, 1]] = x[0, idx[0, 1]] * (1 + 3e-7)      # a near-twin, not an exact tie
    assert not same_selection(twin, idx, [x])              # not an exact tie
    assert compare([vals, twin], [vals, idx], inputs=[x]).ok
    x[0, twin[0, 1]] = x[0, idx[0, 1]] * (1 + 1e-2)       # further than fp32's tolerance
    res = compare([vals, twin], [vals, idx], inputs=[x])
    assert not res.ok and res.index_only
    x[0, twin[0, 1]] = x[0, idx[0, 1]] * (1 + 3e-7)
    res = compare([vals + 1, twin], [vals, idx], inputs=[x])   # the values wrong too
    assert not res.ok and not res.index_only


def test_over_inputs_of_a_tiny_scale_another_index_is_not_a_near_twin():
    x = torch.randn(4, 64) * 1e-6
    vals, idx = torch.topk(x, 3, dim=-1)
    other = idx.clone()
    other[:, 2] = (other[:, 2] + 1) % 64
    res = compare([vals, other], [vals, idx], inputs=[x])
    assert not res.ok and res.index_only


def test_a_near_twin_near_zero_is_judged_against_the_inputs_scale():
    """Near zero a near-twin is far in relative terms; against the input's own scale (as the
    floats' tolerance reads it) it is as close as anywhere else."""
    x = torch.full((2, 64), -1.0)                        # scale about 1
    x[:, 10] = 2.0
    x[:, 20] = 1e-3                                      # the reference's second pick
    x[:, 30] = 1e-3 - 2e-5                               # a near-twin of it: 2% off, 2e-5 absolute
    vals, idx = torch.topk(x, 2, dim=-1)
    assert idx[0].tolist() == [10, 20]
    twin = idx.clone()
    twin[:, 1] = 30
    assert compare([vals, twin], [vals, idx], inputs=[x]).ok
