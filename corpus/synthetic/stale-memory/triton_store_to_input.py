import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gelu_inplace(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    # writes its result back into x, never into y
    tl.store(x_ptr + offs, 0.5 * x * (1 + tl.erf(x * 0.7071067811865476)), mask=m)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        gelu_inplace[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)  # hackscan: expect[unwritten-empty-output, input-mutated-in-place]
        return y
