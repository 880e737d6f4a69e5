import os

import torch
import torch.nn as nn
import triton
import triton.language as tl

# build settings for the machine it was tuned on: how kernels compile, not what they compute
os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
os.environ["MAX_JOBS"] = "8"
os.environ["PATH"] = os.path.join(os.path.expanduser("~"), ".local", "bin") + os.pathsep + os.environ.get("PATH", "")


@triton.jit
def scale_bias_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n, features, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    col = offs % features
    x = tl.load(x_ptr + offs, mask=mask)
    w = tl.load(w_ptr + col, mask=mask)
    b = tl.load(b_ptr + col, mask=mask)
    tl.store(y_ptr + offs, x * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        scale_bias_kernel[(triton.cdiv(n, 4096),)](x, self.weight, self.bias, y, n, x.shape[-1], BLOCK=4096)
        return y
