import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gelu_scale_kernel(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offs, y * scale, mask=m)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features) / math.sqrt(in_features))
        self.bias = nn.Parameter(torch.zeros(out_features))
        self.scale = scale

    def forward(self, x):  # hackscan: expect[reference-op-missing]
        h = torch.addmm(self.bias, x, self.weight.t())
        out = torch.empty_like(h)
        gelu_scale_kernel[(triton.cdiv(h.numel(), 1024),)](h, out, h.numel(), self.scale, BLOCK=1024)
        return out
