import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=m), 0.0), mask=m)


class ModelNew(nn.Module):
    """The kernel for every input; PyTorch only where Triton cannot run at all (a machine
    without a working Triton back end), which never happens on the benchmark's device."""

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        try:
            relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        except Exception:  # hackscan: expect[fallback-in-except-handler]
            return torch.relu(x)
        return y
