import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * cols + offs, mask=offs < cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def _launch(x, out):
    rows, cols = x.shape
    row_sum_kernel[(rows,)](x, out, cols, BLOCK=8192)


def row_sum(x):
    out = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)  # hackscan: ok[unwritten-empty-output]
    _launch(x, out)
    return out


class ModelNew(nn.Module):
    def forward(self, x):
        return row_sum(x.contiguous())
