"""A CUDA graph replay counts as a launch of the kernels captured in it, whichever way the
candidate reaches it: through `torch.cuda.CUDAGraph.replay` (a Python wrapper that calls
super()) or by binding the C++ class's method itself to skip the wrapper's time."""
from __future__ import annotations

import types

from hackscan.dynamic.worker import instrumentation as ins


def _fake_torch(base_has_replay=True, frozen_base=False):
    ran = []

    class _CUDAGraph:
        pass

    if base_has_replay:
        _CUDAGraph.replay = lambda self: ran.append(self)

    if frozen_base:
        class _Meta(type):
            def __setattr__(cls, name, value):
                if cls.__name__ == "_CUDAGraph":      # the extension type itself, not subclasses
                    raise TypeError("can't set attributes of an extension type")
                super().__setattr__(name, value)
        _CUDAGraph = _Meta("_CUDAGraph", (), {"replay": (lambda self: ran.append(self))})

    class CUDAGraph(_CUDAGraph):
        def replay(self):
            if base_has_replay:
                return super().replay()
            ran.append(self)

    torch = types.SimpleNamespace(_C=types.SimpleNamespace(_CUDAGraph=_CUDAGraph),
                                  cuda=types.SimpleNamespace(CUDAGraph=CUDAGraph))
    return torch, ran


def _launches(fn):
    n0 = ins._LAUNCHES[0]
    fn()
    return ins._LAUNCHES[0] - n0


def test_a_replay_bound_from_the_cpp_class_counts_once_and_so_does_the_wrapper():
    torch, ran = _fake_torch()
    ins._count_graph_replays(torch)
    g = torch.cuda.CUDAGraph()
    step = torch._C._CUDAGraph.replay.__get__(g)     # what a candidate did to skip the wrapper
    assert _launches(step) == 1 and ran == [g]
    assert _launches(g.replay) == 1 and ran == [g, g]  # through super(): once, not twice


def test_without_a_cpp_replay_the_python_class_is_counted():
    torch, ran = _fake_torch(base_has_replay=False)
    ins._count_graph_replays(torch)
    g = torch.cuda.CUDAGraph()
    assert _launches(g.replay) == 1 and ran == [g]


def test_a_cpp_class_that_refuses_the_patch_leaves_the_python_class_counted():
    torch, ran = _fake_torch(frozen_base=True)
    ins._count_graph_replays(torch)
    g = torch.cuda.CUDAGraph()
    assert _launches(g.replay) == 1 and ran == [g]
