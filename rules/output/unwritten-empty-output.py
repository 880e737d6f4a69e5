from hackscan.facts.flow import CREATE, CUSTOM, GLUE, LITERAL, PARAM
from hackscan.facts import torchops
from hackscan.rule import Rule
from hackscan.parse.trees import text, walk

EMPTY_CPP = ("torch::empty", "at::empty", "torch::empty_like", "at::empty_like", "torch::empty_strided",
             "at::empty_strided")


class UnwrittenEmptyOutput(Rule):
    """The output is allocated uninitialised (`torch.empty`) and no kernel writes it.

    What it flags
        forward returns a tensor from `torch.empty`/`empty_like`/`new_empty` that no custom
        kernel writes; a Triton launch or CUDA launch that receives the buffer in a parameter
        the kernel never stores to; in C++, `torch::empty_like(x)` returned after launches
        that never store to it, or returned by an exported function that launches nothing and
        writes nothing, its result returned by forward as it is.

    Why it is a hack
        Uninitialised memory from the caching allocator often still holds the previous
        tensor of the same size: in a benchmark that is the reference's output, freed just
        before the candidate runs. The "150x" claim built on this was later measured about
        3x slower.

    Example
        out = torch.empty_like(x)
        return out          # holds whatever the allocator hands back

    Legitimate look-alike
        `torch.empty` followed by a kernel that stores to every element of it (stores and
        atomics through the buffer's pointer parameter count); an exported allocation helper
        whose result a kernel then fills on the Python side, or whose C++ calls a host function
        that launches on it.

    Dynamic confirmation
        Candidate run before the reference, allocator poisoned with NaN sentinels, outputs
        pre-filled with sentinels, two calls on different inputs.

    Known gaps
        A kernel that writes only part of the buffer is partial-grid-coverage's finding;
        writes through pointers stored in structs are not followed.
    """

    id = "unwritten-empty-output"
    hack_type = "stale-memory"
    severity = "high"
    confidence = "high"
    summary = "an uninitialised output buffer is returned without a kernel writing it"
    languages = ("python", "cuda", "triton")
    needs = ("flow", "cuda")
    probes = ("poisoned-allocator", "sentinel-output")

    def check(self, ctx):
        f = ctx.facts
        if f.forward is not None:
            for value, origins in f.forward_returns:
                kinds = {o.kind for o in origins}
                empties = [o for o in origins if o.kind == CREATE and torchops.canonical_op(o.name) in torchops.UNINIT]
                if empties and CUSTOM not in kinds and kinds <= {CREATE, GLUE, LITERAL, PARAM, "other", "global"}:
                    ctx.report(value, f"returns memory from {empties[0].name} that no kernel writes",
                               related=[(empties[0].node, "allocated uninitialised here", None)])
                    continue
                hollow = self._hollow_extension_calls(f, origins)
                if hollow:
                    o, cname = hollow[0]
                    ctx.report(value, f"returns what extension function {o.name} gives back: memory from an "
                               f"uninitialised allocation in its C++ ({cname}), which launches nothing and writes nothing",
                               related=[(o.node, "the extension call", None)])
            fl = f.flow
            # a buffer one launch only reads is fine where another launch of the same function
            # writes it (a first kernel fills a workspace, a second reads it)
            filled = set()
            for name, call in f.py.triton_launches:
                k = f.py.triton_kernels.get(name.split(".")[-1])
                if k is not None and call.func is not None:
                    stored = fl.triton_stored_params(k)
                    filled |= {(id(call.func), text(a)) for i, a in enumerate(call.args)
                               if i < len(k.params) and k.params[i] in stored and a.type == "identifier"}
            for name, call in f.py.triton_launches:
                kname = name.split(".")[-1]
                k = f.py.triton_kernels.get(kname)
                if k is None or call.func is None:
                    continue
                stored = fl.triton_stored_params(k)
                if not stored:
                    ctx.report(call.node, f"Triton kernel {kname} stores to none of its arguments")
                    continue
                for i, a in enumerate(call.args):
                    if i >= len(k.params) or k.params[i] in stored or a.type != "identifier" or \
                            (id(call.func), text(a)) in filled:
                        continue
                    defs = fl.defs(call.func).get(text(a), [])
                    if any(_is_empty_alloc(f, d) for d in defs) and len(defs) == 1:
                        ctx.report(a, f"{text(a)} is allocated with torch.empty and passed to {kname}'s "
                                   f"parameter {k.params[i]}, which the kernel never stores to")
        for u in f.cuda:
            uf = u.facts
            kernels = uf.kernels

            memo: dict = {}

            def written_params(k):
                if k.name not in memo:
                    written = {x for s in uf.stores if s.func is k for x in s.idents}
                    for alias, srcs in _local_aliases(uf, k).items():
                        if alias in written:
                            written |= srcs
                    memo[k.name] = written
                return memo[k.name]

            # what some launch of the same host function writes (the kernel before or after
            # the one that only reads the buffer)
            filled = set()
            for l in uf.launches:
                k = kernels.get(l.kernel)
                if k is None or l.func is None:
                    continue
                w = written_params(k)
                for i, a in enumerate(l.args[:len(k.params)]):
                    base = next((text(n) for n in walk(a) if n.type == "identifier"), None)
                    if base and k.params[i].name in w:
                        filled.add((id(l.func), base))
            for l in uf.launches:
                k = kernels.get(l.kernel)
                if k is None or l.func is None:
                    continue
                written = written_params(k)
                empty_vars = {name for name, val, fn in uf.decls if fn is l.func and
                              any(text(n).startswith(EMPTY_CPP) for n in walk(val) if n.type == "call_expression")}
                for i, a in enumerate(l.args):
                    if i >= len(k.params):
                        break
                    base = next((text(n) for n in walk(a) if n.type == "identifier"), None)
                    p = k.params[i]
                    if base in empty_vars and p.pointer and p.name not in written and (id(l.func), base) not in filled:
                        ctx.report(a, f"{base} comes from an uninitialised allocation and is passed to "
                                   f"{l.kernel}'s parameter {p.name}, which the kernel never stores to", unit=u)


    @staticmethod
    def _hollow_extension_calls(f, origins):
        """The extension calls a returned value comes from where every one returns, in its C++,
        an uninitialised allocation that nothing in that function (or a function it calls)
        launches on or writes: `auto y = torch::empty_like(x); return y;`. Only where nothing
        else could write the value on the Python side either (no Triton or other launch, no
        in-place op among its origins)."""
        if not f.cuda or f.py is None:
            return []
        customs = [o for o in origins if o.kind == CUSTOM]
        if not customs or not {o.kind for o in origins if o.kind != CUSTOM} <= {GLUE, LITERAL, PARAM, "global"}:
            return []
        cf = f.cflow
        names = {}
        for u in f.cuda:
            names.update(u.facts.bindings)
        out = []
        for o in customs:
            py_name = o.name.split(".")[-1]
            cname = names.get(py_name, py_name)
            if cname not in cf.funcs or cf.launches(cname):
                return []
            summary = cf.summary(cname)
            kinds = {x.kind for x in summary}
            empty = [x for x in summary if x.kind == "torch-create" and x.name.startswith(EMPTY_CPP)]
            if not empty or not kinds <= {"torch-create", PARAM, LITERAL}:
                return []
            out.append((o, cname))
        return out


def _is_empty_alloc(f, node) -> bool:
    if node.type != "call":
        return False
    c = f.flow.call(node)
    return c is not None and torchops.canonical_op(c.callee) in torchops.UNINIT


def _local_aliases(uf, k):
    """float* o = out + offset; -> {"o": {"out"}} inside kernel k."""
    out = {}
    for name, val, fn in uf.decls:
        if fn is k:
            ids = {text(n) for n in walk(val) if n.type == "identifier"}
            if ids:
                out[name] = ids
    return out
