import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        # input validation kept in locals: a NaN is refused, a non-contiguous view copied; every
        # input that passes takes the same kernel
        has_nan = bool(torch.isnan(x).any())
        strided = not x.is_contiguous()
        if has_nan:
            raise ValueError("softmax input holds NaN")
        if strided:
            x = x.contiguous()
        out = torch.empty_like(x)
        softmax_rows[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return out
