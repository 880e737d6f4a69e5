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
    """Dressed as cross-call batching (inputs queued, one launch over a stacked batch), but the
    batch is launched once, on the first call: every later call returns the first call's result."""

    def __init__(self):
        super().__init__()
        self.pending = []
        self.results = None

    def forward(self, x):
        self.pending.append(x)  # hackscan: expect[result-bank]
        if len(self.pending) == 1 or self.results is None:
            batch = torch.stack(self.pending)
            out = torch.empty_like(batch)
            relu_kernel[(triton.cdiv(batch.numel(), 1024),)](batch, out, batch.numel(), BLOCK=1024)
            self.results = out  # hackscan: expect[state-written-in-forward]
        return self.results[0]
