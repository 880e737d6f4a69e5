import functools

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    live = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=live), 0.0), mask=live)


class ModelNew(nn.Module):
    """A launch plan built once per shape, like a captured graph done right: the launcher is bound
    to the module's own staging buffers, and every call copies its input into the staging buffer
    before the replay, so whatever storage the input lives in, the kernel reads this call's values."""

    def __init__(self):
        super().__init__()
        self._launch = None
        self._stage = None
        self._out = None

    def forward(self, x):
        if self._launch is None or self._stage.shape != x.shape:
            self._stage = torch.empty_like(x)
            self._out = torch.empty_like(x)
            n = x.numel()
            self._launch = functools.partial(relu_kernel[(triton.cdiv(n, 1024),)], self._stage, self._out, n,  # hackscan: expect[state-written-in-forward]
                                             BLOCK=1024)
        self._stage.copy_(x)
        self._launch()
        return self._out.clone()
