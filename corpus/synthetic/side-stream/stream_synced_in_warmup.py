import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(y_ptr + offs, 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476)), mask=m)


class ModelNew(nn.Module):
    """The stream is synchronised after a warm-up at construction; forward's own launches on it
    are never joined."""

    def __init__(self):
        super().__init__()
        self.stream = torch.cuda.Stream()  # hackscan: expect[unjoined-side-stream]
        warm = torch.zeros(1024, device="cuda")
        self._run(warm, torch.empty_like(warm))  # hackscan: ok[kernel-result-unused]
        self.stream.synchronize()

    def _run(self, x, y):
        with torch.cuda.stream(self.stream):
            gelu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y

    def forward(self, x):
        y = torch.empty_like(x)
        with torch.cuda.stream(self.stream):
            gelu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
