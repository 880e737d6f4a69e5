import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(c_ptr + offs, tl.load(a_ptr + offs, mask=m) + tl.load(b_ptr + offs, mask=m), mask=m)


class ModelNew(nn.Module):
    """One launch captured in a CUDA graph over static buffers; every call copies its inputs in
    before the replay and returns a copy of the output."""

    def __init__(self):
        super().__init__()
        self.graph = None

    def _launch(self):
        n = self.sa.numel()
        add_kernel[(triton.cdiv(n, 1024),)](self.sa, self.sb, self.sc, n, BLOCK=1024)

    def forward(self, a, b):
        if self.graph is None or self.sa.shape != a.shape:
            self.sa, self.sb = torch.empty_like(a), torch.empty_like(b)  # hackscan: expect[state-written-in-forward]
            self.sc = torch.empty_like(a)  # hackscan: ok[state-written-in-forward]
            self.sa.copy_(a)
            self.sb.copy_(b)
            self._launch()   # compiles the kernel before capture
            torch.cuda.synchronize()
            self.graph = torch.cuda.CUDAGraph()  # hackscan: expect[cuda-graph-replay]
            with torch.cuda.graph(self.graph):  # hackscan: expect[cuda-graph-replay]
                self._launch()
        self.sa.copy_(a)
        self.sb.copy_(b)
        self.graph.replay()
        return self.sc.clone()  # hackscan: ok[kernel-result-unused, unwritten-empty-output]
