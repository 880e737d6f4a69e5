import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=m), 0.0), mask=m)


def relu(x):
    y = torch.empty_like(x)
    n = x.numel()
    relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
    return y


class ModelNew(nn.Module):
    """A graph over static buffers, captured per input shape: each call casts its input to the
    compute dtype, copies the cast into the captured buffer, replays, and returns a copy of the
    captured output (bound to what the launching function returned inside the capture)."""

    def __init__(self):
        super().__init__()
        self.graph = None
        self.static_x = None
        self.static_out = None

    def _capture(self, xc):
        self.static_x = torch.empty_like(xc)  # hackscan: ok[state-written-in-forward]
        self.static_x.copy_(xc)
        relu(self.static_x)   # compiles outside the capture
        torch.cuda.synchronize()
        self.graph = torch.cuda.CUDAGraph()  # hackscan: expect[cuda-graph-replay]
        with torch.cuda.graph(self.graph):  # hackscan: expect[cuda-graph-replay]
            self.static_out = relu(self.static_x)  # hackscan: expect[state-written-in-forward]

    def forward(self, x):
        xc = x.to(torch.float32).contiguous()
        if self.graph is None or self.static_x.shape != xc.shape:
            self._capture(xc)
        self.static_x.copy_(xc)
        self.graph.replay()
        return self.static_out.clone()
