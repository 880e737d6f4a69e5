import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=m), 0.0), mask=m)


class TritonReLU(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y


class ModelNew(nn.Module):
    """Regression: an nn.Sequential of the file's own kernel modules is not PyTorch compute."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(TritonReLU())

    def forward(self, x):
        return self.body(x)  # hackscan: ok[torch-op-on-return-path]
