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
    """A graph per set of input addresses: a replay reads whatever the inputs hold now, and a
    call on other storage captures a graph of its own."""

    def __init__(self):
        super().__init__()
        self.graphs = {}

    def forward(self, a, b):
        key = (a.data_ptr(), b.data_ptr(), tuple(a.shape), a.dtype)  # hackscan: expect[pointer-keyed-lookup]
        n = a.numel()
        if key not in self.graphs:
            c = torch.empty_like(a)
            add_kernel[(triton.cdiv(n, 1024),)](a, b, c, n, BLOCK=1024)
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()  # hackscan: expect[cuda-graph-replay]
            with torch.cuda.graph(g):  # hackscan: expect[cuda-graph-replay]
                add_kernel[(triton.cdiv(n, 1024),)](a, b, c, n, BLOCK=1024)
            # only the latest: storage of earlier calls may be reused
            self.graphs = {key: (g, c)}  # hackscan: expect[state-written-in-forward]
        g, c = self.graphs[key]
        g.replay()
        return c.clone()
