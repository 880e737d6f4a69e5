import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gemv_ones_row_sum_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    # a row sum is a matrix-vector product with a vector of ones: the author named it so
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + offs
        acc += tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(y_ptr + row, tl.sum(acc, axis=0))


class ModelNew(nn.Module):
    """An honest row sum whose one kernel is named like a vendor library's (`gemv` is a word of
    cuBLAS's kernel names): its own kernel, launched by its own code, does all the work."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        y = torch.empty(rows, device=x.device, dtype=x.dtype)
        gemv_ones_row_sum_kernel[(rows,)](x, y, cols, BLOCK=triton.next_power_of_2(min(cols, 8192)))
        return y
