import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(y_ptr + offs, 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476)), mask=m)


def gelu(x):
    y = torch.empty_like(x)
    gelu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    return y


class ModelNew(nn.Module):
    """Regression: in-place work on a name rebound to a fresh tensor is not input mutation."""

    def forward(self, x):
        x = gelu(x.contiguous())
        flat = x.view(-1)
        flat.nan_to_num_(0.0)  # hackscan: ok[input-mutated-in-place]
        return x
