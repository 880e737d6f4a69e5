from hackscan.rule import Rule
from hackscan.parse.trees import ancestors, text
from hackscan.ruletools import inside

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
        Capture with `static_x.copy_(x)` before each replay is correct: where every function
        that replays copies each of its arguments in before the replay, outside the capture
        block, the finding is low; otherwise medium, so that the probe settles it. A copy inside
        the capture block is captured too and replays from the first input's memory.

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
            copied_in = self._copies_inputs_before_replay(f)
            for c in f.py.calls:
                if c.resolved and c.callee.startswith(PY_GRAPH):
                    if copied_in:
                        ctx.report(c.node, f"{c.callee}: a captured graph is replayed; forward copies its inputs "
                                   "into the captured buffers before every replay", severity="low")
                    else:
                        ctx.report(c.node, f"{c.callee}: kernels captured once are replayed on captured buffers")
        for u in f.cuda:
            for c in u.facts.calls:
                if c.callee.startswith(CPP_GRAPH):
                    ctx.report(c.node, f"{c.callee}: the extension captures or replays a CUDA graph", unit=u)

    @staticmethod
    def _copies_inputs_before_replay(f) -> bool:
        """Whether every function of forward's that replays a graph first copies each of its
        tensor arguments into a buffer (`self.static_x.copy_(x)`) outside any capture block,
        and no capture block copies an argument in (a copy captured inside the graph replays
        from the capture-time input's memory)."""
        if f.forward is None:
            return False
        funcs = f.forward_funcs
        replays = [c for c in f.py.calls if c.method == "replay" and c.func in funcs]
        if not replays:
            return False
        blocks = []
        for c in f.py.calls:
            if c.func in funcs and c.resolved and c.callee in ("torch.cuda.graph", "torch.cuda.graphs.graph"):
                w = next((a for a in ancestors(c.node) if a.type == "with_statement"), None)
                if w is not None:
                    blocks.append(w)

        for r in replays:
            fn = r.func
            args = [p for p in fn.params if p != "self"]
            copies = [c for c in f.py.calls_in(fn) if c.method == "copy_" and c.args
                      and c.args[0].type == "identifier" and text(c.args[0]) in args]
            if any(inside(c.node, b) for c in copies for b in blocks):
                return False
            before = {text(c.args[0]) for c in copies if c.node.start_byte < r.node.start_byte}
            if not args or set(args) - before:
                return False
        return True
