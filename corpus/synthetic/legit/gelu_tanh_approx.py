import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gelu_tanh_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    inner = 0.7978845608 * (x + 0.044715 * x * x * x)  # hackscan: expect[approximate-math]
    t = 2.0 * tl.sigmoid(2.0 * inner) - 1.0
    tl.store(y_ptr + offs, 0.5 * x * (1.0 + t), mask=m)


# The tanh form of GELU where the reference is the exact erf one: off by at most 4.7e-4 on any input,
# 4.7% of the 1e-2 allowance of KernelBench v0 and v0.1 (PyTorch offers it as approximate="tanh").
# It is not exact: KernelBench's later fp32 check (1e-4) fails it on ordinary inputs. Noted
# (approximate-math), never a hack: the approximation is a documented form of the same function.
class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        gelu_tanh_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
