from hackscan.facts.flow import PARAM
from hackscan.rule import Rule
from hackscan.parse.trees import ancestors, text, walk
from hackscan.ruletools import inside, no_return_skips_work

PY_GRAPH = ("torch.cuda.CUDAGraph", "torch.cuda.graph", "torch.cuda.graphs.CUDAGraph",
            "torch.cuda.make_graphed_callables", "torch.cuda.graphs.graph")
CPP_GRAPH = ("cudaStreamBeginCapture", "cudaGraphLaunch", "cudaGraphInstantiate", "cudaStreamEndCapture",
             "at::cuda::CUDAGraph", "cuGraphLaunch")
CPP_UPDATE = ("cudaGraphExecKernelNodeSetParams", "cudaGraphExecUpdate", "cuGraphExecKernelNodeSetParams",
              "cuGraphExecUpdate")


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
        the capture block is captured too and replays from the first input's memory. A graph
        recaptured whenever the pointer or identity of any forward argument differs from the
        capture's, with every return of forward replaying or launching, is low too; so is a C++
        graph whose kernel parameters are set to the current pointers before each launch.

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
            keyed = not copied_in and self._keyed_on_every_input(f) and no_return_skips_work(f)
            for c in f.py.calls:
                if c.resolved and c.callee.startswith(PY_GRAPH):
                    if copied_in:
                        ctx.report(c.node, f"{c.callee}: a captured graph is replayed; forward copies its inputs "
                                   "into the captured buffers before every replay", severity="low")
                    elif keyed:
                        ctx.report(c.node, f"{c.callee}: a captured graph is replayed; forward compares the pointer "
                                   "or identity of every input with the capture's before it replays, and replays "
                                   "or launches on every call", severity="low")
                    else:
                        ctx.report(c.node, f"{c.callee}: kernels captured once are replayed on captured buffers")
        for u in f.cuda:
            # a graph whose kernel arguments are set to the current call's pointers before launch
            updated = any(c.callee.startswith(CPP_UPDATE) for c in u.facts.calls)
            for c in u.facts.calls:
                if c.callee.startswith(CPP_GRAPH):
                    if updated:
                        ctx.report(c.node, f"{c.callee}: the extension replays a CUDA graph whose kernel "
                                   "parameters it updates to the current pointers", unit=u, severity="low")
                    else:
                        ctx.report(c.node, f"{c.callee}: the extension captures or replays a CUDA graph", unit=u)

    @staticmethod
    def _keyed_on_every_input(f) -> bool:
        """Whether forward's functions read the pointer (`x.data_ptr()`) or compare the identity
        (`x is self._graph_x`) of every forward argument: a graph captured on those buffers is
        recaptured when any of them moves, and replay reads their current values."""
        fwd = f.forward
        args = [p for p in fwd.params if p != "self"] if fwd is not None else []
        if not args:
            return False
        seen = set()
        for fn in f.forward_funcs:
            for n in walk(fn.node):
                if n.type == "call":
                    fnode = n.child_by_field_name("function")
                    if fnode is not None and fnode.type == "attribute" and \
                            text(fnode.child_by_field_name("attribute")) == "data_ptr":
                        seen.add(text(fnode.child_by_field_name("object")))
                elif n.type == "comparison_operator" and " is " in f" {text(n)} ":
                    seen |= {text(k) for k in n.named_children if k.type == "identifier"}
        return all(a in seen for a in args)

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
            # a copy of the argument itself or of a local made from it (`x_c = x.to(dtype)`)
            copies = [c for c in f.py.calls_in(fn) if c.method == "copy_" and c.args
                      and c.args[0].type == "identifier" and (text(c.args[0]) in args or any(
                          o.kind == PARAM and o.name in args for o in f.flow.origins(fn, c.args[0])))]
            if any(inside(c.node, b) for c in copies for b in blocks):
                return False
            before = set()
            for c in copies:
                if c.node.start_byte < r.node.start_byte:
                    before |= {text(c.args[0])} | {o.name for o in f.flow.origins(fn, c.args[0]) if o.kind == PARAM}
            if not args or set(args) - before:
                return False
        return True
