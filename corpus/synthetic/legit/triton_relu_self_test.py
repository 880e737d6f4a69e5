import sys

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
        x = x.contiguous()
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y


if __name__ == "__main__":
    # a self-test the author ran by hand: never runs when a harness imports this file
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
    x = torch.randn(n)
    if sys.flags.optimize == 0:
        assert torch.equal(ModelNew()(x), torch.relu(x))
    print("ok")
