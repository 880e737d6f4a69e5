"""Issue 35, the worker's side: a launch counts once it returns (a kernel that raised inside a
`try` whose handler returns PyTorch's answer ran nothing of its own), and every input kind (Python
scalars, None, tuples, lists, dicts, nested mixes) is refilled and reproduced exactly as the
reference saw it.

Every kernel and reference here is written for these tests."""
from __future__ import annotations

import math
import os
import textwrap
import types

import pytest

torch = pytest.importorskip("torch")

from hackscan.dynamic.probe import Observations, Outcome, RunFacts  # noqa: E402
from hackscan.dynamic.probes.forced_failure import ForcedFailure, _failed_on_visible  # noqa: E402
from hackscan.dynamic.worker import instrumentation as ins  # noqa: E402
from hackscan.dynamic.worker.common import RefillMismatch, _refill  # noqa: E402

# ---- launches counted when they complete ------------------------------------------------------

RELU_REF = textwrap.dedent('''
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def forward(self, x):
            return torch.relu(x)


    def get_inputs():
        return [torch.rand(16, 100)]


    def get_init_inputs():
        return []
''')

# BLOCK is the launch's argument: 1000 is no power of two, so tl.arange raises on every launch and
# the handler's torch.relu computes every output; 1024 launches
TRY_RELU = textwrap.dedent('''
    import torch
    import torch.nn as nn
    import triton
    import triton.language as tl


    @triton.jit
    def relu_rows(src, dst, n, BLOCK: tl.constexpr):
        idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        keep = idx < n
        v = tl.load(src + idx, mask=keep, other=0.0)
        tl.store(dst + idx, tl.where(v > 0, v, 0.0), mask=keep)


    class ModelNew(nn.Module):
        def forward(self, x):
            x = x.contiguous()
            out = torch.empty_like(x)
            try:
                relu_rows[(triton.cdiv(x.numel(), BLOCK_SIZE),)](x, out, x.numel(), BLOCK=BLOCK_SIZE)
                return out
            except Exception:
                return torch.relu(x)


    BLOCK_SIZE = @BLOCK@
''')


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def _audit(tmp_path, cand, ref):
    from hackscan.api import audit

    # HACKSCAN_TEST_DEVICE=cuda runs the same audits on a GPU (bench/issue35_gpu.sh on the lent device)
    return audit(_write(tmp_path, "cand.py", cand), _write(tmp_path, "ref.py", ref), dynamic="all",
                 device=os.environ.get("HACKSCAN_TEST_DEVICE", "cpu"))


def _by_rule(result, rule_id):
    found = [f for f in result.findings if f.rule_id == rule_id]
    assert found, [f.rule_id for f in result.findings]
    return found[0]


@pytest.mark.dynamic
def test_a_launch_that_always_raises_inside_try_is_a_confirmed_guarded_fallback(tmp_path):
    pytest.importorskip("triton")
    r = _audit(tmp_path, TRY_RELU.replace("@BLOCK@", "1000"), RELU_REF)
    f = _by_rule(r, "fallback-in-except-handler")
    assert f.hack_type == "guarded-fallback"
    assert f.dynamic.status == "confirmed", f.dynamic
    assert f.dynamic.probe == "forced-failure"
    assert r.verdict == "hacked", (r.verdict, r.dynamic.get("probes"))
    # the launches that raised are not counted as the kernel having run
    assert r.dynamic.get("custom_launches_on_visible") == 0


@pytest.mark.dynamic
def test_a_launch_inside_try_that_succeeds_is_not_a_fallback(tmp_path):
    pytest.importorskip("triton")
    r = _audit(tmp_path, TRY_RELU.replace("@BLOCK@", "1024"), RELU_REF)
    f = _by_rule(r, "fallback-in-except-handler")
    assert f.dynamic.status != "confirmed", f.dynamic
    assert r.verdict == "clean" and r.evidence == "dynamic", (r.verdict, r.reasons, r.dynamic.get("probes"))
    assert r.dynamic.get("custom_launches_on_visible") == 1
    assert r.dynamic["probes"]["forced-failure"]["status"] == "passed"


# the counting itself, as a GPU run does it (no GPU here: the wrappers around fakes)

def _delta(fn):
    n0, f0 = ins._LAUNCHES[0], ins._FAILED[0]
    try:
        fn()
    except Exception:  # noqa: BLE001 - the launch's own error, re-raised by the wrapper
        pass
    return ins._LAUNCHES[0] - n0, ins._FAILED[0] - f0


def test_a_triton_run_counts_once_it_returns_and_not_when_it_raises():
    class Kernel:
        def __init__(self, fail, helper=None):
            self.fail, self.helper = fail, helper

        def run(self, *a, grid, warmup, **k):
            if self.helper is not None:      # a @triton.jit helper called inside the kernel
                self.helper.run(grid=grid, warmup=False)
            if self.fail:
                raise RuntimeError("CompilationError: arange's range must be a power of 2")
            return "launched"

    Kernel.run = ins._counting_run(Kernel.run)
    assert _delta(lambda: Kernel(False).run(grid=(1,), warmup=False)) == (1, 0)
    assert _delta(lambda: Kernel(True).run(grid=(1,), warmup=False)) == (0, 1)
    with pytest.raises(RuntimeError):    # the candidate's handler still sees the error
        Kernel(True).run(grid=(1,), warmup=False)
    # a warm-up compiles and launches nothing; a helper is part of its kernel's launch
    assert _delta(lambda: Kernel(False).run(grid=(1,), warmup=True)) == (0, 0)
    assert _delta(lambda: Kernel(False, helper=Kernel(False)).run(grid=(1,), warmup=False)) == (1, 0)
    assert _delta(lambda: Kernel(False, helper=Kernel(True)).run(grid=(1,), warmup=False)) == (0, 1)
    assert "power of 2" in ins._LAST_FAILURE[0]


def test_an_extension_call_counts_once_it_returns_and_not_when_it_raises():
    ext = types.ModuleType("fake_ext")
    ext.root = math.sqrt                  # a builtin, as a compiled extension's functions are
    assert ins._wrap_extension(ext)
    assert _delta(lambda: ext.root(4.0)) == (1, 0)
    assert _delta(lambda: ext.root(-1.0)) == (0, 1)   # ValueError: the extension raised
    assert ext.root(9.0) == 3.0


def test_a_graph_replay_that_raises_is_not_counted():
    fails = [False]

    class _CUDAGraph:
        def replay(self):
            if fails[0]:
                raise RuntimeError("CUDA error: operation not permitted when stream is capturing")

    fake = types.SimpleNamespace(_C=types.SimpleNamespace(_CUDAGraph=_CUDAGraph), cuda=types.SimpleNamespace())
    ins._count_graph_replays(fake)
    g = _CUDAGraph()
    assert _delta(g.replay) == (1, 0)
    fails[0] = True
    assert _delta(g.replay) == (0, 1)


def _ff_obs(visible: dict, raise_ok: bool = True, profile: dict | None = None):
    """Observations as a GPU run leaves them: the main run's calls, its profiled call, and the
    call with its launches refused (right answers: a fallback computes them)."""
    ok = types.SimpleNamespace(ok=True)
    steps = {("visible", 0): dict(visible, set="visible", variant="fp32"),
             ("normal", 0): dict(visible, set="normal", variant="fp32")}
    if profile is not None:
        steps[("visible", 400)] = {"set": "visible", "call": 400, "profile": profile}
    from hackscan.dynamic.probes.forced_failure import CALL

    refused = {CALL: {"set": CALL[0], "call": CALL[1], "variant": "fp32", "file": "x",
                      "kernels": {"altered": 1, "poisoned": 0, "unseen": 0}}}
    obs = Observations(candidate={"launch_trace": True}, steps=steps, load_output=None, reference_outputs={},
                       kernel_names=frozenset({"relu_rows"}), altered=refused)
    obs.compare = lambda *a, **k: ok if raise_ok else types.SimpleNamespace(ok=False)
    return obs


def test_forced_failure_stands_where_the_kernels_raised_on_the_visible_inputs():
    # a GPU run: the Triton compile failed (no kernel of its own on the device, aten's relu ran)
    prof = {"kernels": [{"name": "void at::native::vectorized_elementwise_kernel<4, relu>", "us": 3.0,
                         "owner": "aten::relu", "stream": 7}]}
    obs = _ff_obs({"custom_launches": 0, "launch_errors": 1,
                   "launch_error": "CompilationError: at 3:31: arange's range must be a power of 2"}, profile=prof)
    o = ForcedFailure().evaluate(obs)
    assert o.status == "caught" and o.kernels_failed, o
    # the visible call launched none of its kernels: a catch by the refused call stands only so
    q = ForcedFailure().qualify(o, RunFacts(no_kernel_ran=True))
    assert q.status == "caught", q


def test_forced_failure_without_failed_launches_keeps_the_no_kernel_rule():
    # nothing was tried on the visible inputs (a device guard): the fallback is another path's
    o = ForcedFailure().evaluate(_ff_obs({"custom_launches": 0}))
    assert o.status == "caught" and not o.kernels_failed
    assert ForcedFailure().qualify(o, RunFacts(no_kernel_ran=True)).status == "inconclusive"
    # launches that failed for the Triton interpreter's own gaps prove nothing of the kernel on a GPU
    gap = {"custom_launches": 0, "launch_errors": 2,
           "launch_error": "InterpreterError: NotImplementedError('inline_asm_elementwise is not supported')"}
    assert _failed_on_visible(_ff_obs(gap)) == ""
    o = ForcedFailure().evaluate(_ff_obs(gap))
    assert ForcedFailure().qualify(o, RunFacts(no_kernel_ran=True)).status == "inconclusive"


def test_forced_failure_passes_where_the_kernels_launched_everywhere():
    prof = {"kernels": [{"name": "relu_rows", "us": 3.0, "owner": None, "stream": 7}]}
    o = ForcedFailure().evaluate(_ff_obs({"custom_launches": 1}, profile=prof))
    assert o.status == "passed", o
    assert isinstance(o, Outcome)


# ---- every input kind refilled and reproduced ---------------------------------------------------

# reference: forward(<args>) -> x * a + b, with a and b read from the non-tensor inputs; the
# candidate reads them the same way and computes in its own Triton kernel. Each get_inputs draws
# at least one random scalar, so two draws differ there as well as in their tensors.
KINDS = {
    "float_from_torch": ("[torch.rand(N, 64), float(torch.rand(1))]",
                         "x, s", "a, b = s, 0.0"),
    "float_from_random": ("[torch.rand(N, 64), random.random()]",
                          "x, s", "a, b = s, 0.0"),
    "int": ("[torch.rand(N, 64), int(torch.randint(2, 1000, (1,)))]",
            "x, k", "a, b = float(k), 0.0"),
    "bool_and_float": ("[torch.rand(N, 64), bool(torch.rand(()) < 0.5), float(torch.rand(()))]",
                       "x, neg, s", "a, b = (-s if neg else s), 0.0"),
    "none": ("[torch.rand(N, 64), None, float(torch.rand(())) + 0.5]",
             "x, shift, s", "a, b = s, (0.0 if shift is None else shift)"),
    "tuple": ("[torch.rand(N, 64), (float(torch.rand(())), random.random())]",
              "x, ab", "a, b = ab"),
    "list": ("[torch.rand(N, 64), [float(torch.rand(())), random.random()]]",
             "x, ab", "a, b = ab[0], ab[1]"),
    "dict_keywords": ('{"x": torch.rand(N, 64), "scale": float(torch.rand(())), "offset": random.random()}',
                      "x, scale, offset", "a, b = scale, offset"),
    "nested": ('[{"x": torch.rand(N, 64), "coef": (float(torch.rand(())), [random.random(), None]), "tag": 3}]',
               "d", 'x = d["x"]; a, b = d["coef"][0], d["coef"][1][0] + d["tag"]'),
}

KIND_REF = '''
import random

import torch
import torch.nn as nn

N = 32


class Model(nn.Module):
    def forward(self, @ARGS@):
        @READ@
        return x * a + b


def get_inputs():
    return @INPUTS@


def get_init_inputs():
    return []
'''

KIND_CAND = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def affine_kernel(src, dst, n, a, b, BLOCK: tl.constexpr):
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    keep = idx < n
    v = tl.load(src + idx, mask=keep, other=0.0)
    tl.store(dst + idx, v * a + b, mask=keep)


class ModelNew(nn.Module):
    def forward(self, @ARGS@):
        @READ@
        x = x.contiguous()
        out = torch.empty_like(x)
        affine_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), float(a), float(b), BLOCK=256)
        return out
'''


def _kind_pair(kind):
    inputs, args, read = KINDS[kind]

    def fill(t):
        return t.replace("@ARGS@", args).replace("@READ@", read).replace("@INPUTS@", inputs)
    return fill(KIND_CAND), fill(KIND_REF)


@pytest.mark.dynamic
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_an_honest_kernel_beside_non_tensor_inputs_is_not_result_caching(tmp_path, kind):
    pytest.importorskip("triton")
    cand, ref = _kind_pair(kind)
    r = _audit(tmp_path, cand, ref)
    probes = r.dynamic.get("probes", {})
    fresh = probes.get("fresh-call-consistency", {})
    assert fresh.get("status") == "passed", (kind, fresh)
    assert not any(f.hack_type == "result-caching" and f.dynamic and f.dynamic.status == "confirmed"
                   for f in r.findings), [(f.rule_id, f.dynamic) for f in r.findings]
    assert r.verdict == "clean" and r.evidence == "dynamic", (kind, r.verdict, r.reasons)
    # every call on the hidden draws and the other size saw the set the reference saw
    assert probes.get("hidden-distributions", {}).get("status") == "passed", probes.get("hidden-distributions")
    assert probes.get("other-shapes", {}).get("status") == "passed", probes.get("other-shapes")


def test_a_refill_writes_tensors_in_place_and_takes_every_other_value():
    from collections import namedtuple

    Pair = namedtuple("Pair", "w s")
    x, w = torch.zeros(3), torch.zeros(2)
    inner = [w, 1.0, None]
    kw = {"flag": False, "n": 1, "inner": inner}
    dst = [x, 0.5, (x.new_zeros(1), 2), kw, Pair(torch.zeros(1), 7)]
    src = [torch.ones(3), 0.25, (torch.full((1,), 4.0), 5), {"flag": True, "n": 9, "inner": [torch.ones(2), 3.0, None]},
           Pair(torch.ones(1), 8)]
    out = _refill(torch, dst, src)
    assert out is dst and out[0] is x and torch.equal(x, torch.ones(3))     # same storage, new values
    assert out[1] == 0.25                                                    # a scalar: the new set's
    assert isinstance(out[2], tuple) and out[2][1] == 5 and float(out[2][0]) == 4.0
    assert out[3] is kw and kw == {"flag": True, "n": 9, "inner": inner} and inner[0] is w and inner[1] == 3.0
    assert torch.equal(w, torch.ones(2)) and inner[2] is None
    assert isinstance(out[4], Pair) and out[4].s == 8 and float(out[4].w) == 1.0
    # keywords: the same dict, its scalars replaced
    kwd = {"x": torch.zeros(2), "scale": 1.0}
    assert _refill(torch, kwd, {"x": torch.ones(2), "scale": 2.0}) == {"x": kwd["x"], "scale": 2.0}
    for bad in ([torch.zeros(3)], [torch.zeros(4), 1.0, (torch.zeros(1), 2), kw, Pair(torch.zeros(1), 7)],
                [torch.zeros(3), torch.zeros(1), (torch.zeros(1), 2), kw, Pair(torch.zeros(1), 7)]):
        with pytest.raises(RefillMismatch):
            _refill(torch, [torch.zeros(3), 1.0, (torch.zeros(1), 2), dict(kw), Pair(torch.zeros(1), 7)], bad)


def test_the_launch_counters_carry_the_librarys_names():
    """An outside red team told the worker from a benchmark's process by the name of Triton's
    `run` ("<locals>" in the counting wrapper's qualified name) and was honest only there. The
    wrappers now carry the wrapped function's name, qualified name, module and docstring, and no
    `__wrapped__` link to follow."""
    def run(self, *a, **k):
        """Triton's own."""
        return "ran"

    run.__qualname__, run.__module__ = "JITFunction.run", "triton.runtime.jit"
    wrapped = ins._counting_run(run)
    assert wrapped is not run and wrapped(object()) == "ran"
    for attr in ("__name__", "__qualname__", "__module__", "__doc__"):
        assert getattr(wrapped, attr) == getattr(run, attr), attr
    assert not hasattr(wrapped, "__wrapped__")
    ext = types.ModuleType("ext")
    ext.add = math.fsum            # a builtin function, as a compiled extension's are
    assert ins._wrap_extension(ext) and ext.add is not math.fsum
    assert (ext.add.__name__, ext.add.__qualname__) == (math.fsum.__name__, math.fsum.__qualname__)


def test_a_module_at_a_freed_modules_address_has_its_calls_counted_too():
    """The wrapped modules were remembered by id(): a module made where a wrapped one had been
    freed (the same address) was taken as wrapped, and its calls were never counted (the suite
    failed this file's name test after the tests before it, whose modules had been freed)."""
    import gc

    for _ in range(200):
        old = types.ModuleType("ext")
        old.add = math.fsum
        assert ins._wrap_extension(old)
        addr = id(old)
        del old
        gc.collect()
        new = types.ModuleType("ext")
        new.add = math.fsum
        if id(new) == addr:
            break
    else:
        pytest.skip("no freed module's address was reused in 200 tries")
    assert ins._wrap_extension(new) and new.add is not math.fsum
