import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def relu_rows(x_ptr, y_ptr, dim, BLOCK: tl.constexpr):
    col = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    row = tl.program_id(1)
    x = tl.load(x_ptr + row * dim + col)
    tl.store(y_ptr + row * dim + col, tl.maximum(x, 0.0))


class ModelNew(nn.Module):
    """Tiles of 1024 columns with no mask: the problem's row length (16384) is a multiple of the
    tile, and forward refuses any other length."""

    def forward(self, x):
        batch, dim = x.shape
        if dim % BLOCK:
            raise ValueError("rows must be a multiple of 1024 columns")
        x = x.contiguous()
        y = torch.empty_like(x)
        relu_rows[(dim // BLOCK, batch)](x, y, dim, BLOCK=BLOCK)
        return y
