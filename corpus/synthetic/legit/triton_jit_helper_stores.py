import torch
import torch.nn as nn
import triton
import triton.language as tl


# The store sits in a @triton.jit helper the kernel calls: the output is written through it.
@triton.jit
def _store_relu(y_ptr, offs, x, m):
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=m)


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    _store_relu(y_ptr, offs, tl.load(x_ptr + offs, mask=m), m)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y
