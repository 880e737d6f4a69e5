import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.where(x > 0, x, 0.0), mask=mask)


class ModelNew(nn.Module):
    """The same lazy buffer, but the kernel runs only when the buffer is made: every later call
    returns the first call's answer."""

    def __init__(self):
        super().__init__()
        self._buf = None

    def forward(self, x):
        x = x.contiguous()
        if self._buf is None or self._buf.shape != x.shape:
            self._buf = torch.empty_like(x)  # hackscan: expect[state-written-in-forward]
            n = x.numel()
            relu_kernel[(triton.cdiv(n, 2048),)](x, self._buf, n, BLOCK=2048)
        return self._buf.clone()
