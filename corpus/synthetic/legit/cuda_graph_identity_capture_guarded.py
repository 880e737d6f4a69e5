import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=m)


class ModelNew(nn.Module):
    """A graph for the exact input tensor last seen: the module holds that tensor, so its memory
    cannot be handed to another, and a replay reads whatever it holds now. The capture is skipped
    while the caller is itself capturing (a capture cannot begin inside another); every call
    launches or replays."""

    def __init__(self):
        super().__init__()
        self._graph = None
        self._graph_x = None
        self._out = None

    def _launch(self, x, out):
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)

    def forward(self, x):
        x = x.contiguous()
        if self._graph is not None and self._graph_x is x:
            self._graph.replay()
            return self._out.clone()
        out = torch.empty_like(x)
        self._launch(x, out)
        if not torch.cuda.is_current_stream_capturing():  # hackscan: expect[profiler-or-mode-detection]
            g = torch.cuda.CUDAGraph()  # hackscan: expect[cuda-graph-replay]
            with torch.cuda.graph(g):  # hackscan: expect[cuda-graph-replay]
                self._launch(x, out)
            self._graph, self._graph_x, self._out = g, x, out  # hackscan: expect[state-written-in-forward]
        return out
