"""Output replay keyed by an input's pointer is hacked without a run; its look-alikes are not:
a pointer-keyed cache of preparation where every return launches, and pointers passed to a
launch inside an argument list (also through a launcher helper that calls a callable
parameter)."""
from __future__ import annotations

import hackscan

ADD = '''
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(c_ptr + offs, tl.load(a_ptr + offs, mask=m) + tl.load(b_ptr + offs, mask=m), mask=m)
'''

# a GPU MODE submission: the output of the first call on these buffers, returned for every later
# call whatever values they hold
GPUMODE_REPLAY = ADD + '''
from task import input_t, output_t

_done = {}


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    key = (a.data_ptr(), b.data_ptr(), a.shape)
    hit = _done.get(key)
    if hit is not None:
        return hit
    c = torch.empty_like(a)
    add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, c, a.numel(), BLOCK=1024)
    _done[key] = c
    return c
'''

# the same key guards only an output buffer reused across calls: every return launches
BUFFER_BY_POINTER = ADD + '''
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._buffers_by_ptr = {}

    def forward(self, a, b):
        key = (a.data_ptr(), b.data_ptr(), a.shape)
        c = self._buffers_by_ptr.get(key)
        if c is None:
            c = torch.empty_like(a)
            self._buffers_by_ptr[key] = c
        add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, c, a.numel(), BLOCK=1024)
        return c
'''

# raw pointers handed to a launcher in one argument list, through a helper that calls its
# callable parameter
POINTERS_IN_LIST = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

ext = load_inline(name="scale_ptrs", cpp_sources="void scale(int64_t x, int64_t y, int64_t n);",
                  cuda_sources="""
#include <torch/extension.h>
__global__ void scale_kernel(const float* x, float* y, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
void scale(int64_t x, int64_t y, int64_t n) {
    scale_kernel<<<(n + 255) / 256, 256>>>((const float*)x, (float*)y, n);
}
""", functions=["scale"])


def launch(fn, args):
    return fn(*args)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.zeros_like(x)
        launch(ext.scale, args=[x.data_ptr(), y.data_ptr(), x.numel()])
        return y
'''


def _rules(res, rule):
    return [f for f in res.findings if f.rule_id == rule]


def test_a_pointer_keyed_output_replay_is_hacked_without_a_run():
    res = hackscan.scan(GPUMODE_REPLAY)
    hits = _rules(res, "pointer-keyed-lookup")
    assert res.verdict == "hacked" and hits and all(f.certain for f in hits), (res.verdict, res.reasons)
    assert "output replay" in hits[0].message


def test_a_pointer_keyed_buffer_launched_into_on_every_call_is_not():
    res = hackscan.scan(BUFFER_BY_POINTER)
    hits = _rules(res, "pointer-keyed-lookup")
    # noted at low severity only: the static pass calls it clean
    assert res.verdict == "clean" and not any(f.certain for f in res.findings), res.reasons
    assert all(f.severity == "low" for f in hits), [(f.severity, f.message) for f in hits]


def test_pointers_in_a_launch_argument_list_are_arguments_and_the_helper_launches():
    res = hackscan.scan(POINTERS_IN_LIST)
    assert not _rules(res, "pointer-keyed-lookup"), [f.message for f in res.findings]
    # the helper calls its callable parameter, bound to the extension's function at the call
    assert not _rules(res, "kernel-never-launched"), [f.message for f in res.findings]
