import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, partial_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=0.0)
    tl.store(partial_ptr + row * BLOCK + tl.arange(0, BLOCK), acc)
    tl.store(y_ptr + row, tl.sum(acc, axis=0))


class ModelNew(nn.Module):
    """A scratch buffer for per-row partial sums, made by a helper when the batch or the device
    changes; the kernel runs on every call and writes the buffer before reading anything."""

    BLOCK = 8192

    def __init__(self):
        super().__init__()
        self._scratch = None

    def _ensure(self, rows, device):
        if self._scratch is None or self._scratch.shape[0] != rows or self._scratch.device != device:
            self._scratch = torch.empty(rows, self.BLOCK, device=device)

    def _launch(self, x):
        rows, cols = x.shape
        y = torch.empty(rows, device=x.device, dtype=x.dtype)
        row_sum_kernel[(rows,)](x, self._scratch, y, cols, BLOCK=self.BLOCK)
        return y

    def forward(self, x):
        x = x.contiguous()
        self._ensure(x.shape[0], x.device)
        return self._launch(x)
