"""Input preparation (the reference's worker): the visible sets from the problem's own generator,
the hidden sets drawn through that generator with its random sources replaced, the domain the
visible sets share, and the other-shape set."""
from __future__ import annotations

import os
import time

from .common import _as_set, _await_device, _infile, _leaves, _same_bits, _seed_all, _tree_map
from .tensorfiles import _DISK, SetWriter, _save_set, host_cache_bytes


def _prepare(torch, mod, job, jobdir, result) -> None:
    """Reference only: learn the inputs' shapes on the meta device, then materialise the
    visible input sets and the hidden ones from the auditor's seeds.

    Hidden sets come from the problem's own generator: get_inputs() runs again with its random
    sources replaced (hackscan's _Samplers), so every transform it applies afterwards (triu,
    softmax, abs, clamp, masks, casts, integer ranges) still holds on the hidden values. Each
    hidden set is then checked against the structure the visible sets share and dropped, with
    the reason, where it left the problem's domain."""
    get_inputs = mod.get_inputs
    get_init = getattr(mod, "get_init_inputs", lambda: [])
    try:
        with torch.device("meta"):
            meta = _as_set(get_inputs())
    except Exception as e:  # noqa: BLE001 - a generator that reads values (.item(), numpy) needs real tensors
        result["events"].append(f"shapes learnt from a real draw: get_inputs() fails on the meta device "
                                f"({type(e).__name__}: {str(e)[:120]})")
        _seed_all(job["visible_seeds"].get("visible", 0))
        meta = _as_set(get_inputs())
    spec = []
    for t in (meta.values() if isinstance(meta, dict) else meta):
        leaves = _leaves(torch, t)
        if isinstance(t, torch.Tensor) or leaves:
            for x in leaves:
                spec.append({"shape": list(x.shape), "dtype": str(x.dtype).replace("torch.", ""),
                             "bytes": x.numel() * x.element_size()})
        else:
            spec.append({"scalar": repr(t)[:50]})
    result["input_spec"] = spec
    result["input_kind"] = "keywords" if isinstance(meta, dict) else "positional"
    meta = None    # a real draw where the meta device failed: not kept while the sets are made
    budget = job.get("memory_budget_bytes")
    total = sum(s.get("bytes", 0) for s in spec)
    result["input_bytes"] = total
    if budget and total * job.get("memory_factor", 8) > budget:
        raise MemoryError(f"inputs take {total:,} bytes; {job.get('memory_factor', 8)}x that exceeds the "
                          f"{budget:,}-byte budget")
    _save_set(torch, list(get_init()), os.path.join(jobdir, "init.pt"), required=True)
    dev = _draw_device(torch, job, total)
    if dev is not None and job.get("device_gate"):
        # drawn on the GPU: not beside another worker's timing (a measurement's reference
        # waits for its turn here, not after its sets are written)
        _await_device(jobdir, result)
    draw = _Drawer(torch, dev, result)
    visible = {}
    not_written: dict = {}   # sets the disk this worker may use cannot hold (skipped, with the reason)
    seconds: dict = {}       # each set's draw, check and write: where a full-size problem's time goes
    result["hidden_sets"] = {"sources": {}, "dropped": {}, "not_written": not_written, "seconds": seconds}
    cap, least = job.get("sets_bytes_cap"), job.get("sets_min", 1)
    from_set = job.get("variants_from")
    for i, (name, seed) in enumerate(job["visible_seeds"].items()):
        if cap and i >= least and (i + 1) * total > cap:
            # a measurement's rotating sets past its cap: a full-size problem's four 8 GiB sets
            # took minutes to draw and write and most of a 64 GiB disk
            not_written[name] = f"not drawn: {i + 1} sets of {total:,} bytes pass the cap of {cap:,} bytes"
            continue
        t0 = time.perf_counter()
        vals = draw(lambda seed=seed: _seeded_draw(get_inputs, seed))
        if from_set:
            # kept for the domain the hidden sets must stay in; a measurement's sets are not
            # (four full-size sets in host memory, where the next draw needs only its own)
            visible[name] = vals
        why = _save_set(torch, vals, os.path.join(jobdir, f"in_{name}.pt"), required=name == "visible")
        if why:
            not_written[name] = why
        seconds[name] = round(time.perf_counter() - t0, 3)
        vals = None
    if not from_set and not job.get("other_shapes"):
        return None
    # what the visible sets share, summarised: the visible sets need not stay in host memory
    # while the reference runs on them and twelve hidden sets are drawn (a full-size problem's
    # set is 8 GiB)
    seen = _Domain(torch, [v for k, v in visible.items() if k.startswith("visible")] or list(visible.values())[:1]) \
        if from_set else None
    visible = None

    def hidden(reserve: int = 0) -> None:
        """The hidden sets and the set of another size, drawn once the reference's outputs on the
        visible inputs are on disk: each set is written only where the disk this worker may use
        holds it and, after it, `reserve` bytes for the reference's outputs on it (the visible
        set's), counted for every set already written. A full-size problem whose disk held only
        some sets wrote every input set and then had no room for outputs on most of them: inputs
        with no outputs beside them prove nothing and kept the disk from the sets that could."""
        t0 = time.perf_counter()
        _DISK["pending"] = 0
        if from_set:
            _hidden_sets(torch, get_inputs, job, jobdir, result, from_set, seen, draw, reserve)
        if job.get("other_shapes"):
            result["other_shape"] = _other_shape(torch, mod, get_inputs, get_init, job, jobdir, draw, reserve)
            result["grown_shape"] = _other_shape(torch, mod, get_inputs, get_init, job, jobdir, draw, reserve,
                                                 grow=True, input_bytes=total)
        # the visible draw again with a few elements changed (fresh-call consistency's in-place
        # call): after the hidden sets, before the late draws
        def late(name, make):
            """One more set, drawn by `make` (the set and why it is not written, or None), written
            where the disk holds it after what the sets before promised."""
            t1 = time.perf_counter()
            vals, why = make()
            if vals is not None:
                with SetWriter(torch, overlap=False) as writer:
                    why = writer.save(vals, os.path.join(jobdir, f"in_{name}.pt"), reserve)
            vals = None
            if why:
                not_written[name] = why
            seconds[name] = round(time.perf_counter() - t1, 3)

        for name, seeds in (job.get("touched") or {}).items():
            late(name, lambda seeds=seeds: draw(lambda: _touched_set(torch, get_inputs, seeds["from"], seeds["seed"],
                                                                     seen, draw.device)))
        # more draws of the problem's own generator, for calls that need inputs no other call had
        # (ghost replay's): last, so that the disk holds them only where the hidden sets fit first
        for name, seed in (job.get("late_seeds") or {}).items():
            late(name, lambda seed=seed: (draw(lambda: _seeded_draw(get_inputs, seed)), None))
        _DISK["pending"] = 0
        result["hidden_sets"]["reserve_bytes"] = int(reserve)
        result["hidden_sets"]["drawn_s"] = round(time.perf_counter() - t0, 3)

    return hidden


def _hidden_sets(torch, get_inputs, job, jobdir, result, from_set, seen, draw, reserve) -> None:
    """The hidden sets from the problem's own generator, the most telling first (_FIRST)."""
    not_written, seconds = result["hidden_sets"]["not_written"], result["hidden_sets"]["seconds"]
    base = None
    if "noncontiguous" in job.get("variants", []):
        base = torch.load(_infile(jobdir, f"in_{from_set}.pt"), weights_only=True)
    dropped, sources = {}, {}
    # a set's write overlaps the next set's draw where two sets fit in the memory the worker keeps
    set_bytes = sum(x.get("bytes", 0) for x in result.get("input_spec", []))
    with SetWriter(torch, overlap=2 * set_bytes <= host_cache_bytes()) as writer:
        variants = list(enumerate(job.get("variants", [])))
        # the most telling sets first: where the disk holds only some of a full-size problem's
        # sets, those it keeps are other draws and the sign and stride changes, not the
        # numerical extremes. A set's seed stays its place in the job's list: when every set
        # fits, the sets are the same whatever the order.
        variants.sort(key=lambda iv: _FIRST.index(iv[1]) if iv[1] in _FIRST else len(_FIRST))
        for i, v in variants:
            t0 = time.perf_counter()
            vals = None    # the writer holds the last set until it is on disk: two in host memory at most
            seed = job["variant_seed"] + 7919 * (i + 1)
            if v == "noncontiguous":
                g = torch.Generator().manual_seed(seed)
                vals = _tree_map(torch, base, lambda t: _variant(torch, t, v, g))
            else:
                vals, how = draw(lambda v=v, seed=seed: _generated_set(torch, get_inputs, v, seed, seen, draw.device))
                sources[v] = how
                dropped_why = _leaves_domain(torch, seen, vals)
                if dropped_why:
                    dropped[v] = dropped_why
            if v not in dropped:
                why = writer.save(vals, os.path.join(jobdir, f"in_{v}.pt"), reserve)
                if why:
                    not_written[v] = why
            seconds[v] = round(time.perf_counter() - t0, 3)
    result["hidden_sets"].update(sources=sources, dropped=dropped)


def _seeded_draw(get_inputs, seed: int):
    """The problem's generator under one seed of every random source."""
    _seed_all(seed)
    return _as_set(get_inputs())


class _Samplers:
    """get_inputs() with its random sources replaced: every floating-point draw of torch's
    samplers (rand, randn, *_like, normal, uniform_, normal_, exponential_, ...), numpy's legacy
    samplers and Python's random module is redrawn under the auditor's seed and then changed by
    `mode` (negated, scaled, normal, heavy-tailed, zeros, denormals, large, half negated), so
    the generator's own transforms still apply on top. Integer and discrete samplers (randint,
    randperm, bernoulli, multinomial, random_) keep their range and only get another seed."""

    FLOAT_FUNCS = ("rand", "randn", "rand_like", "randn_like", "normal")
    FLOAT_METHODS = ("uniform_", "normal_", "exponential_", "cauchy_", "log_normal_")
    NP_FUNCS = ("rand", "randn", "random", "random_sample", "uniform", "normal", "standard_normal", "ranf",
                "sample")
    PY_FUNCS = ("random", "uniform", "gauss", "normalvariate")

    def __init__(self, torch, mode, seed, namespace=None, device=None):
        self.torch, self.mode = torch, mode
        self.namespace = namespace    # the generator's globals: `from torch import randn` binds there
        self.g = torch.Generator().manual_seed(seed)
        # draws on the GPU are changed there (_Drawer); numpy's and Python's stay on the CPU,
        # where a round trip per scalar would cost more than the change
        self.g_device = torch.Generator(device=device).manual_seed(seed) if device is not None else self.g
        self.saved = []
        self.draws = 0
        self.busy = False

    def change(self, t):
        torch = self.torch
        if self.busy or not isinstance(t, torch.Tensor) or not t.is_floating_point() or t.is_meta or not t.numel():
            return t
        self.draws += 1
        self.busy = True    # the change itself draws from the (patched) samplers
        try:
            return _variant(torch, t, self.mode, self.g if t.device.type == "cpu" else self.g_device)
        finally:
            self.busy = False

    def __enter__(self):
        torch = self.torch
        for name in self.FLOAT_FUNCS:
            orig = getattr(torch, name, None)
            if orig is None:
                continue

            def fn(*a, __orig=orig, **k):
                return self.change(__orig(*a, **k))
            self.saved.append((torch, name, orig))
            setattr(torch, name, fn)
        for name in self.FLOAT_METHODS:
            orig = getattr(torch.Tensor, name, None)
            if orig is None:
                continue

            def meth(t, *a, __orig=orig, **k):
                out = __orig(t, *a, **k)
                if not self.busy and isinstance(out, torch.Tensor) and out.is_floating_point() and not out.is_meta \
                        and out.numel():
                    with torch.no_grad():
                        out.copy_(self.change(out.detach()))
                return out
            self.saved.append((torch.Tensor, name, orig))
            setattr(torch.Tensor, name, meth)
        try:
            import numpy

            for name in self.NP_FUNCS:
                orig = getattr(numpy.random, name, None)
                if orig is None:
                    continue

                def npf(*a, __orig=orig, **k):
                    out = __orig(*a, **k)
                    arr = numpy.asarray(out, dtype=numpy.float64)
                    new = self.change(torch.from_numpy(numpy.array(arr, dtype=numpy.float64))).numpy()
                    return new if numpy.ndim(out) else float(new)
                self.saved.append((numpy.random, name, orig))
                setattr(numpy.random, name, npf)
        except Exception:  # noqa: BLE001 - numpy is optional
            pass
        import random

        for name in self.PY_FUNCS:
            orig = getattr(random, name)

            def pyf(*a, __orig=orig, **k):
                return float(self.change(torch.tensor([__orig(*a, **k)], dtype=torch.float64))[0])
            self.saved.append((random, name, orig))
            setattr(random, name, pyf)
        if self.namespace is not None:
            # names the generator's module imported directly (`from torch import rand`)
            swaps = {id(orig): getattr(owner, name) for owner, name, orig in self.saved}
            for key, val in list(self.namespace.items()):
                new = swaps.get(id(val))
                if new is not None:
                    self.saved.append((self.namespace, key, val))
                    self.namespace[key] = new
        return self

    def __exit__(self, *exc):
        for owner, name, orig in reversed(self.saved):
            if isinstance(owner, dict):
                owner[name] = orig
            else:
                setattr(owner, name, orig)
        return False


def _generated_set(torch, get_inputs, mode, seed, seen, device=None):
    """One hidden input set drawn through the problem's own generator (see _Samplers). A tensor
    that no sampler produced (it is the same bits in every visible set) gets only changes that
    keep its zero pattern, signs and integer values: a positive factor per element, for values
    that are not already integers. `seen` is the visible sets' _Domain; `device` the GPU the set
    is drawn on (_Drawer), None on the CPU."""
    _seed_all(seed)
    with _Samplers(torch, mode, seed, getattr(get_inputs, "__globals__", None), device) as smp:
        vals = _as_set(get_inputs())
    fixed = 0
    g = torch.Generator(device=device).manual_seed(seed + 1)   # device None: the CPU
    for i, t in enumerate(_leaves(torch, vals)):
        # a leaf is fixed only where two or more visible sets held the same bits
        first = seen.leaves[i]["fixed"] if t.is_floating_point() and i < len(seen.leaves) else None
        if first is not None and _same_bits(torch, first, t):
            fixed += 1
            if mode in _ROBUSTNESS or not t.numel() or _integer_valued(torch, t):
                continue
            factor = torch.rand(t.shape, generator=g, device=g.device).to(t.device) + 0.5
            with torch.no_grad():
                t.copy_((t.float() * factor).to(t.dtype))
    return vals, {"sampler_draws": smp.draws, "fixed_tensors": fixed}


def _touched_set(torch, get_inputs, from_seed, seed, seen, device=None):
    """A visible set drawn again (the same seed of every random source) with a few elements of
    each floating draw of torch's samplers changed (`_variant`'s "touched"), at positions only
    the auditor's `seed` knows; the generator's own transforms (sort, softmax, abs, masks) still
    apply on top, so the set stays in the problem's domain. Every other value is the visible
    set's, bit for bit. Returns (the set, None), or (None, why) where nothing could be changed
    (no sampler drew a floating tensor) or the set left the domain."""
    _seed_all(from_seed)
    with _Samplers(torch, "touched", seed, getattr(get_inputs, "__globals__", None), device) as smp:
        vals = _as_set(get_inputs())
    if not smp.draws:
        return None, "the generator draws no floating values through torch's samplers: nothing to change in place"
    why = _leaves_domain(torch, seen, vals)
    if why:
        return None, f"left the problem's domain: {why}"
    return vals, None


# elements a "touched" draw changes, side by side: one in every 4096, 1 at least and 8 at most. A
# value-keyed cache samples a few dozen positions; eight changed elements of a million fall on one
# of them once in about 5,000 audits, and a set where they do only makes that cache compute
# honestly. A key read from a share of the input (its first row, half of it) sees the change, and
# computes, with that share's chance: one such call does not rule it out
TOUCHED_MAX = 8
TOUCHED_EVERY = 4096
# elements a "sparse_negative" draw makes negative: one in every 1024, 1 at least and 64 at most
SPARSE_MAX = 64
SPARSE_EVERY = 1024


def _positions(torch, n: int, every: int, most: int, g):
    """max(1, min(most, n // every)) distinct positions of n, drawn from g."""
    k = max(1, min(most, n // every, n))
    if n <= 1 << 16:
        return torch.randperm(n, generator=g, device=g.device)[:k]
    pos = torch.randint(0, n, (4 * k,), generator=g, device=g.device).unique()
    return pos[torch.randperm(pos.numel(), generator=g, device=g.device)[:k]]


_ROBUSTNESS = ("zeros", "denormals", "large")
# the order hidden sets are drawn and written in (the rest after them, in the job's order)
_FIRST = ("normal", "negated", "head_negated", "odd_scaled_x3", "odd_negated", "tail_negated", "sparse_negative",
          "heavy_tailed", "scaled_x3", "scaled_x0.01", "noncontiguous")
_CHUNK = 1 << 24    # elements per slice where a whole-tensor temporary would double a large set


def _integer_valued(torch, t) -> bool:
    """Whether every value of a floating tensor is an integer, a slice at a time."""
    flat = t.detach().reshape(-1)
    for k in range(0, flat.numel(), _CHUNK):
        x = flat[k:k + _CHUNK].float()
        if not bool((x == x.round()).all()):
            return False
    return True


class _Domain:
    """What every visible set of a problem shares, leaf by leaf, kept instead of the sets: the
    shape and dtype; the tensor itself where it is the same bits in every set (no sampler drew
    it); whether floating values are integers in all; the integer range the draws spanned; and
    a zero pattern common to all (at least 1% of the tensor, the same elements in each)."""

    def __init__(self, torch, sets: list):
        per_set = [_leaves(torch, s) for s in sets]
        self.lengths = [len(ls) for ls in per_set]
        self.leaves = []
        for i, r0 in enumerate(per_set[0]):
            refs = [ls[i] for ls in per_set if i < len(ls)]
            leaf = {"shape": tuple(r0.shape), "dtype": r0.dtype, "fixed": None, "integer": False,
                    "range": None, "zero": None}
            if len(refs) >= 2 and all(_same_bits(torch, r0, r) for r in refs[1:]):
                leaf["fixed"] = r0
            if r0.numel() and not r0.is_floating_point() and r0.dtype != torch.bool:
                leaf["range"] = (min(int(r.min()) for r in refs), max(int(r.max()) for r in refs))
            elif r0.numel() and r0.is_floating_point():
                leaf["integer"] = all(_integer_valued(torch, r) for r in refs)
                zero = r0 == 0
                nz = int(zero.sum())
                # a zero pattern the generator imposes (triu, masks by position) is the same in
                # every visible draw; zeros that move between draws (relu of a sample, random
                # masks) are values
                if nz and nz >= 0.01 * zero.numel() and len(refs) >= 2 and \
                        all(r.shape == r0.shape and torch.equal(zero, r == 0) for r in refs[1:]):
                    leaf["zero"] = zero
            self.leaves.append(leaf)


def _leaves_domain(torch, seen, vals):
    """Why a hidden set left the domain the visible sets share (None where it did not): the
    same kinds, shapes and dtypes; integer-valued floats stay integers; integer tensors stay in
    the range the visible draws spanned; exact zeros common to every visible draw stay zero
    where they make up a pattern. `seen` is the visible sets' _Domain."""
    new = _leaves(torch, vals)
    if any(n != len(new) for n in seen.lengths):
        return f"{len(new)} tensors, the visible sets hold {seen.lengths[0]}"
    for i, t in enumerate(new):
        leaf = seen.leaves[i]
        if tuple(t.shape) != leaf["shape"] or t.dtype != leaf["dtype"]:
            return f"tensor {i}: {tuple(t.shape)} {t.dtype}, visible {leaf['shape']} {leaf['dtype']}"
        if not t.numel():
            continue
        if not t.is_floating_point():
            if leaf["range"] is None:
                continue
            lo, hi = leaf["range"]
            if int(t.min()) < lo or int(t.max()) > hi:
                return f"tensor {i}: integer values [{int(t.min())}, {int(t.max())}] outside the visible range [{lo}, {hi}]"
            continue
        if leaf["integer"] and not _integer_valued(torch, t):
            return f"tensor {i}: integer-valued in every visible set, not here"
        zero = leaf["zero"]
        if zero is not None and bool((t[zero.to(t.device)] != 0).any()):
            return f"tensor {i}: nonzero where every visible set is zero ({int(zero.sum())} elements, the same in each)"
    return None


def grown(v: int) -> int:
    """A size past `v`: an eighth more and one, off any tile multiple of the benchmark's size (a
    kernel whose block is the benchmark's width is right there and below it, wrong above)."""
    return v + v // 8 + 1


def _other_shape(torch, mod, get_inputs, get_init, job, jobdir, draw=None, reserve: int = 0, grow: bool = False,
                 input_bytes: int = 0):
    """Inputs of another size: module-level integers read by get_inputs (and not by
    get_init_inputs, which shapes the parameters) are shrunk by one, off any tile multiple; with
    `grow`, grown by an eighth and one (in_grown_shape.pt), where the worker's memory budget holds
    the larger set (the inputs' bytes times the growth of every changed size, times half the
    working-set factor)."""
    init_names = set(getattr(get_init, "__code__", None).co_names) if hasattr(get_init, "__code__") else set()
    names = [n for n in get_inputs.__code__.co_names
             if isinstance(getattr(mod, n, None), int) and not isinstance(getattr(mod, n), bool)
             and getattr(mod, n) > 2 and n not in init_names]
    if not names:
        return {"changed": {}}
    old = {n: getattr(mod, n) for n in names}
    new = {n: (grown(v) if grow else v - 1) for n, v in old.items()}
    if grow:
        factor = 1.0
        for n, v in old.items():
            factor *= new[n] / v
        # the claim is the working-set factor times one set: the whole run's peak (sets in flight,
        # outputs, their high-precision copies); when the grown set is drawn the others are
        # released, and it holds its draw and the reference's outputs on it in both precisions,
        # half that factor
        budget = job.get("memory_budget_bytes")
        if budget and input_bytes * factor * job.get("memory_factor", 8) / 2 > budget:
            return {"changed": {}, "error": f"inputs grown {factor:.2f}x would take {int(input_bytes * factor):,} bytes: "
                                            f"past this worker's memory budget of {budget:,}"}
    try:
        for n, v in new.items():
            setattr(mod, n, v)
        seed = job["visible_seeds"]["visible"] + (2 if grow else 1)

        def one():
            # as the visible sets are drawn: every random source seeded (a scalar from Python's
            # random or numpy beside the tensors), keywords kept as keywords, floats cast
            return _seeded_draw(get_inputs, seed)
        vals = draw(one) if draw is not None else one()
    finally:
        for n, v in old.items():
            setattr(mod, n, v)
    name = "grown_shape" if grow else "other_shape"
    why = _save_set(torch, vals, os.path.join(jobdir, f"in_{name}.pt"), reserve=reserve)
    if why:
        return {"changed": {}, "error": why}
    return {"changed": {n: [v, new[n]] for n, v in old.items()}}


def _variant(torch, t, kind, g):
    """One tensor's values changed by `kind`. Computed in fp32 (fp8 and bf16 have few kernels)
    on the generator's device (the CPU, or the GPU a large set is drawn on) and cast back to the
    tensor's dtype and device."""
    if not isinstance(t, torch.Tensor) or not t.is_floating_point() or t.is_meta:
        return t
    dt, dev = t.dtype, t.device
    if kind == "noncontiguous":
        if t.dim() >= 2:
            return t.transpose(-1, -2).contiguous().transpose(-1, -2)
        return torch.stack([t, t], dim=-1)[..., 0]
    # fp64 keeps its own precision (an fp64 subnormal does not exist in fp32)
    wdt = torch.float64 if dt == torch.float64 else torch.float32
    on = g.device
    x = t.detach().to(device=on, dtype=wdt)
    shape = t.shape
    if kind == "negated":
        y = -x
    elif kind == "scaled_x3":
        y = x * 3
    elif kind == "scaled_x0.01":
        y = x * 0.01
    elif kind == "normal":
        y = torch.randn(shape, generator=g, dtype=wdt, device=on)
    elif kind == "heavy_tailed":
        # a ratio of a normal to a uniform: Cauchy-like tails, clipped to stay finite
        y = (torch.randn(shape, generator=g, dtype=wdt, device=on) / torch.rand(shape, generator=g, dtype=wdt, device=on).clamp_min(0.05)).clamp(-1e3, 1e3)
    elif kind == "zeros":
        y = torch.zeros(shape, dtype=wdt, device=on)
    elif kind == "denormals":
        tiny = torch.finfo(dt).tiny
        y = torch.randn(shape, generator=g, dtype=wdt, device=on) * tiny * 0.5
    elif kind == "large":
        big = min(torch.finfo(dt).max ** 0.25, 1e4)
        y = torch.randn(shape, generator=g, dtype=wdt, device=on) * big
    elif kind in ("head_negated", "tail_negated"):
        flat = x.reshape(-1).clone()
        h = flat.numel() // 2
        if kind == "tail_negated":
            flat[h:] = -flat[h:]
        else:
            flat[:h] = -flat[:h]
        y = flat.reshape(shape)
    elif kind in ("odd_negated", "odd_scaled_x3"):
        flat = x.reshape(-1).clone()
        flat[1::2] = -flat[1::2] if kind == "odd_negated" else flat[1::2] * 3
        y = flat.reshape(shape)
    elif kind == "fresh":
        y = torch.rand(shape, generator=g, dtype=wdt, device=on)
    elif kind == "touched":
        # a few neighbouring elements (in memory order, from a position drawn at random) take
        # the values of elements drawn anywhere in the same draw: the sampler's own distribution
        # (its draws are independent), every other value unchanged. Neighbours, so that a key
        # read from a part of the input (a row, a half) misses them no more often than one
        # element would, and a key read from a sample of scattered values almost never sees them
        flat = x.reshape(-1).clone()
        n = flat.numel()
        k = max(1, min(TOUCHED_MAX, n // TOUCHED_EVERY, n))
        start = int(torch.randint(0, n - k + 1, (1,), generator=g, device=on))
        dst = torch.arange(start, start + k, device=on)
        src = torch.randint(0, n, (k,), generator=g, device=on)
        flat[dst] = flat[src]
        y = flat.reshape(shape)
    elif kind == "sparse_negative":
        # a few elements made negative (their magnitude kept; a zero becomes -1): a
        # check of a sample of the values (every value non-negative? then a shortcut) sees the
        # benchmark's values and takes it; every whole-tensor change shows it the negatives
        flat = x.reshape(-1).clone()
        pos = _positions(torch, flat.numel(), SPARSE_EVERY, SPARSE_MAX, g)
        v = flat[pos].abs()
        flat[pos] = -torch.where(v > 0, v, torch.ones_like(v))
        y = flat.reshape(shape)
    else:
        raise ValueError(kind)
    return y.to(dev).to(dt)


DEVICE_DRAW_BYTES = 64 << 20


def _draw_device(torch, job, total: int):
    """The GPU a problem's input sets are drawn on, or None for the CPU. A full-size problem's
    sets come from its generator fifteen times over (two visible draws, twelve hidden ones, the
    other shape): on the CPU a 32768x32768 Pareto draw took 47 s and a 2^30-element randn 14 s
    on one core, on the GPU milliseconds. Sets smaller than `device_draw_bytes` (default 64 MiB)
    stay on the CPU, where a draw takes less than the GPU's set-up."""
    dev = str(job.get("device", "cpu"))
    if not dev.startswith("cuda") or total < int(job.get("device_draw_bytes", DEVICE_DRAW_BYTES)):
        return None
    try:
        return torch.device(dev) if torch.cuda.is_available() else None
    except Exception:  # noqa: BLE001 - no usable GPU: the CPU draws
        return None


class _Drawer:
    """Runs a draw of the problem's generator with torch's factory functions on `device` (a
    `torch.device` context: rand, randn, randint, empty, tensor... allocate there, and the
    generator's transforms run there too). A generator that cannot run there (it reads values
    into numpy, mixes in tensors it pins to the CPU) is drawn on the CPU from then on, with an
    event that says why: the sets differ only in where they were drawn, never in their kind."""

    def __init__(self, torch, device, result: dict):
        self.torch, self.device, self.result = torch, device, result
        result["sets_drawn_on"] = str(device or "cpu")

    def __call__(self, fn):
        if self.device is not None:
            try:
                with self.torch.device(self.device):
                    return fn()
            except Exception as e:  # noqa: BLE001 - the problem's generator, on a device it was not written for
                self.result["events"].append(f"input sets drawn on the CPU: get_inputs() fails on {self.device} "
                                             f"({type(e).__name__}: {str(e)[:120]})")
                self.result["sets_drawn_on"] = f"cpu (get_inputs() fails on {self.device})"
                self.device = None
        return fn()
