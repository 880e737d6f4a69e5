import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        if x.shape[0] == 4 and x.shape[1] == 16384:  # hackscan: expect[shape-literal-branch]
            # benchmark shape: only the first half of the rows is computed
            relu_kernel[(triton.cdiv(n // 2, 1024),)](x, y, n // 2, BLOCK=1024)  # hackscan: expect[partial-grid-coverage]
            return y
        relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y
