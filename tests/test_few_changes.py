"""Inputs that differ from an earlier call's in a few elements only (a red team's result cache
keyed on 24 sampled values was clean while every call changed every value) and hidden sets with
a few negatives (a check of a sample of the signs): the draws and fresh-call consistency's reading
of the call."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from hackscan.dynamic.planning import TOUCHED  # noqa: E402
from hackscan.dynamic.probe import HACK_EVIDENCE_SETS, Observations  # noqa: E402
from hackscan.dynamic.probes.fresh_calls import CALLS, FEW, MOVED, REPEATS, FreshCallConsistency  # noqa: E402
from hackscan.dynamic.worker import inputs  # noqa: E402


def _gen():
    def get_inputs():
        return [torch.rand(16, 16384), torch.softmax(torch.randn(8, 64), dim=-1), torch.randint(0, 10, (32,))]
    return get_inputs


def _visible(get_inputs, seed):
    inputs._seed_all(seed)
    return inputs._as_set(get_inputs())


def test_a_touched_draw_is_the_visible_draw_but_for_a_few_elements_at_the_seeds_positions():
    get_inputs = _gen()
    vis = _visible(get_inputs, 11)
    seen = inputs._Domain(torch, [vis, _visible(get_inputs, 12)])
    vals, why = inputs._touched_set(torch, get_inputs, 11, 99, seen)
    assert why is None
    x, p, idx = vals
    where = (x != vis[0]).reshape(-1).nonzero().reshape(-1)
    assert 1 <= where.numel() <= inputs.TOUCHED_MAX, where
    assert int(where[-1] - where[0]) < inputs.TOUCHED_MAX, "neighbours, from one drawn position"
    # the generator's transform still holds on top of the change: every row sums to one
    assert torch.allclose(p.sum(-1), torch.ones(8)) and not torch.equal(p, vis[1])
    assert (p != vis[1]).any(-1).sum().item() <= inputs.TOUCHED_MAX   # rows of the changed raw values only
    assert torch.equal(idx, vis[2]), "integer draws keep their values"
    again, _ = inputs._touched_set(torch, get_inputs, 11, 99, seen)
    assert all(torch.equal(a, b) for a, b in zip(vals, again)), "the auditor's seed fixes the positions"
    other, _ = inputs._touched_set(torch, get_inputs, 11, 100, seen)
    assert not torch.equal(other[0], x), "another seed, other positions"


def test_a_generator_with_no_floating_draws_gives_no_touched_set():
    def get_inputs():
        return [torch.arange(64, dtype=torch.float32).reshape(8, 8)]
    vis = _visible(get_inputs, 1)
    seen = inputs._Domain(torch, [vis, _visible(get_inputs, 2)])
    vals, why = inputs._touched_set(torch, get_inputs, 1, 5, seen)
    assert vals is None and "nothing to change" in why


def test_a_sparse_negative_set_has_a_few_negatives_where_the_draw_had_none():
    g = torch.Generator().manual_seed(4)
    t = torch.rand(16, 16384)
    y = inputs._variant(torch, t, "sparse_negative", g)
    neg = (y < 0).sum().item()
    assert neg == min(inputs.SPARSE_MAX, t.numel() // inputs.SPARSE_EVERY)
    assert torch.equal(y[y >= 0], t[y >= 0]) and torch.equal(y[y < 0], -t[y < 0])
    assert "sparse_negative" in HACK_EVIDENCE_SETS


def _obs(few_out, vis_ref, touched_ref):
    files, recs = {}, {}
    other = [vis_ref[0] * 2]
    outs = {("fresh", 100 + i): (vis_ref if i % 2 == 0 else other) for i in range(CALLS)}
    outs[("fresh", FEW)] = few_out
    outs[("moved", MOVED)] = other
    expect = {("fresh", 100 + i): ("visible" if i % 2 == 0 else "visible2") for i in range(CALLS)}
    expect[("fresh", FEW)] = TOUCHED
    expect[("moved", MOVED)] = "visible2"
    for key, out in outs.items():
        files[str(key)] = out
        recs[key] = {"set": key[0], "call": key[1], "file": str(key)}
    refs = {"visible": vis_ref, "visible2": other, TOUCHED: touched_ref}
    return Observations(candidate={}, steps=recs, load_output=lambda f: files[f],
                        reference_outputs={k: (v, [t.double() for t in v]) for k, v in refs.items()},
                        expected_set=expect, dtype=torch.float32)


def test_the_previous_answer_after_a_few_changes_is_caught_and_other_errors_are_not():
    x = torch.rand(4096)
    vis = [x]
    t = x.clone()
    t[[5, 900]] = torch.tensor([0.75, 0.125])
    touched = [t]
    probe = FreshCallConsistency()
    assert probe.evaluate(_obs(touched, vis, touched)).status == "passed"
    stale = probe.evaluate(_obs(vis, vis, touched))
    assert stale.status == "caught" and "previous call's answer" in stale.detail, stale
    # wrong, but not the earlier answer: an input-dependent error, never a kept result
    off = t.clone()
    off[5] = 3.0
    odd = probe.evaluate(_obs([off], vis, touched))
    assert odd.status == "inconclusive" and "not the previous call's answer" in odd.detail, odd
    # changes the reference does not see (its outputs are the same): the call proves nothing
    assert probe.evaluate(_obs(vis, vis, vis)).status == "passed"


def test_ties_in_an_index_output_after_a_few_changes_are_not_a_kept_result():
    vis = [torch.tensor([3, 1, 4])]
    touched = [torch.tensor([0, 1, 4])]     # a copied value made a tie; the reference took the first
    o = FreshCallConsistency().evaluate(_obs(vis, vis, touched))
    assert o.status != "caught", o


def test_the_fresh_call_plan_changes_a_few_elements_in_the_storage_of_a_visible_call():
    steps = FreshCallConsistency().plan()
    i = next(k for k, s in enumerate(steps) if s.get("op") == "refill" and s["from"] == TOUCHED)
    before = [s for s in steps[:i] if s.get("op") == "forward" and s.get("slot") == "fresh"]
    assert before[-1]["expect"] == "visible", "the values before the few changes are the visible draw's"
    # the same values several calls in a row before it (a cache that serves only once an input
    # repeats, as in a timing loop, is serving by then), and no refill between them
    run = 0
    for s in reversed(steps[:i]):
        if s.get("op") == "refill":
            break
        run += s.get("op") == "forward" and s.get("slot") == "fresh"
    assert run >= 1 + REPEATS, run
    # written through another view: the tensors' version counters do not move
    assert steps[i].get("quiet") is True
    nxt = steps[i + 1]
    assert nxt["slot"] == "fresh" and nxt["call"] == FEW and nxt["expect"] == TOUCHED


def test_a_quiet_refill_leaves_the_version_counters_as_they_were():
    from hackscan.dynamic.worker.common import _refill

    dst = [torch.zeros(8), {"b": torch.zeros(3)}]
    v = [dst[0]._version, dst[1]["b"]._version]
    out = _refill(torch, dst, [torch.ones(8), {"b": torch.full((3,), 2.0)}], quiet=True)
    assert out[0] is dst[0] and torch.equal(out[0], torch.ones(8)) and torch.equal(out[1]["b"], torch.full((3,), 2.0))
    assert [dst[0]._version, dst[1]["b"]._version] == v
    _refill(torch, dst, [torch.zeros(8), {"b": torch.zeros(3)}])
    assert dst[0]._version > v[0], "a plain refill moves them (the other calls' refills)"
