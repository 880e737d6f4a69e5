from hackscan.rule import Rule

PY_GRAPH = ("torch.cuda.CUDAGraph", "torch.cuda.graph", "torch.cuda.graphs.CUDAGraph",
            "torch.cuda.make_graphed_callables", "torch.cuda.graphs.graph")
CPP_GRAPH = ("cudaStreamBeginCapture", "cudaGraphLaunch", "cudaGraphInstantiate", "cudaStreamEndCapture",
             "at::cuda::CUDAGraph", "cuGraphLaunch")


class CudaGraphReplay(Rule):
    """forward replays a captured CUDA graph.

    What it flags
        `torch.cuda.CUDAGraph`, `torch.cuda.graph(...)`, `make_graphed_callables`, `.replay()`
        in the candidate; `cudaStreamBeginCapture`/`cudaGraphLaunch` in its C++.

    Why it is a hack
        A graph replays the kernels on the buffers captured at capture time. Unless every
        call copies the new inputs into those static buffers, replay returns the result for
        stale inputs, and the launch overhead the benchmark measures disappears.

    Example
        if self.graph is None:
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.out = ext.run(self.static_x)
        self.graph.replay()
        return self.out

    Legitimate look-alike
        Capture with `static_x.copy_(x)` before each replay is correct; the finding is
        medium so that the probe settles it.

    Dynamic confirmation
        Fresh values per call and the same pointer refilled: outputs rechecked on every call.

    Known gaps
        Graph APIs reached through a driver-API wrapper library are not recognised.
    """

    id = "cuda-graph-replay"
    hack_type = "result-caching"
    severity = "medium"
    confidence = "medium"
    summary = "forward replays a captured CUDA graph"
    languages = ("python", "cuda")
    needs = ("python", "cuda")
    probes = ("fresh-call-consistency",)

    def check(self, ctx):
        f = ctx.facts
        if f.py is not None:
            for c in f.py.calls:
                if c.resolved and c.callee.startswith(PY_GRAPH):
                    ctx.report(c.node, f"{c.callee}: kernels captured once are replayed on captured buffers")
        for u in f.cuda:
            for c in u.facts.calls:
                if c.callee.startswith(CPP_GRAPH):
                    ctx.report(c.node, f"{c.callee}: the extension captures or replays a CUDA graph", unit=u)
