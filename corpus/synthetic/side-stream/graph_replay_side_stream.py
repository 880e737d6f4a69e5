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
    """Everything on a private stream: the stream is synchronised once, on the call that
    captures the graph, and every later call copies and replays on it and returns unjoined."""

    def __init__(self):
        super().__init__()
        self.stream = torch.cuda.Stream()  # hackscan: expect[unjoined-side-stream]
        self.graph = None

    def _launch(self):
        n = self.sa.numel()
        add_kernel[(triton.cdiv(n, 1024),)](self.sa, self.sb, self.sc, n, BLOCK=1024)

    def forward(self, a, b):
        with torch.cuda.stream(self.stream):
            if self.graph is None or self.sa.shape != a.shape:
                self.sa, self.sb = torch.empty_like(a), torch.empty_like(b)  # hackscan: todo-ok[state-written-in-forward]
                self.sc = torch.empty_like(a)  # hackscan: todo-ok[state-written-in-forward]
                self.sa.copy_(a)
                self.sb.copy_(b)
                self._launch()
                self.stream.synchronize()
                self.graph = torch.cuda.CUDAGraph()  # hackscan: todo-ok[cuda-graph-replay]
                with torch.cuda.graph(self.graph, stream=self.stream):  # hackscan: todo-ok[cuda-graph-replay]
                    self._launch()
            self.sa.copy_(a)
            self.sb.copy_(b)
            self.graph.replay()
            return self.sc  # hackscan: todo-ok[kernel-result-unused, unwritten-empty-output]
