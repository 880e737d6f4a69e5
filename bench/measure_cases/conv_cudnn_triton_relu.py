import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(x_ptr + offs, tl.maximum(x, 0.0), mask=m)


class ModelNew(nn.Module):
    """The convolution stays in cuDNN (with PyTorch's default: TF32 allowed for convolutions);
    the ReLU is a Triton kernel applied in place."""

    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1)

    def forward(self, x):
        y = F.conv2d(x, self.conv.weight, self.conv.bias, padding=1)
        relu_kernel[(triton.cdiv(y.numel(), 4096),)](y, y.numel(), BLOCK=4096)
        return y
