from hackscan.facts.flow import PARAM
from hackscan.parse.trees import text, walk
from hackscan.rule import Rule

REDUCTIONS = frozenset("sum mean nansum nanmean amax amin max min norm var std prod logsumexp median".split())


class SubsampledReduction(Rule):
    """A reduction over a strided subsample of a forward input.

    What it flags
        In forward (or a helper it calls), a reduction (`sum`, `mean`, `amax`, `norm`, `var`,
        ...) whose operand is a slice of a forward input with a step greater than one
        (`x[:, ::4].sum(dim=1) * 4`, `torch.mean(x.flatten()[::8])`), directly or through a
        local bound to such a slice, where the reference itself takes no strided slice.

    Why it is a hack
        On the benchmark's inputs (independent draws of one distribution) a reduction over every
        k-th element, rescaled, lands close to the full one: an estimate passes a loose check
        at a fraction of the reads, and is wrong on any input whose skipped elements differ.

    Example
        def forward(self, x):
            return x[:, ::4].sum(dim=1) * 4     # a quarter of the reads

    Legitimate look-alike
        Strided slices that are the problem's own semantics (the reference slices the same way),
        strided slices that are not reduced (even/odd halves of rotary embeddings, a stride-2
        downsample returned as it is), contiguous slices.

    Dynamic confirmation
        Hidden sets that change only every other element (odd_negated; odd_scaled_x3 where signs
        cancel, as in a squared difference): a reduction that reads a subsample follows half of
        the change at most.

    Known gaps
        Subsampling inside a kernel (a Triton load over `offs * k`, a CUDA loop stepping by k)
        and prefix slices (`x[:, :256]`) are not flagged.
    """

    id = "subsampled-reduction"
    hack_type = "partial-computation"
    severity = "medium"
    confidence = "medium"
    summary = "a reduction reads a strided subsample of an input"
    languages = ("python",)
    needs = ("flow",)
    probes = ("hidden-distributions",)

    def check(self, ctx):
        f = ctx.facts
        if f.py is None or f.forward is None:
            return
        funcs = {id(fn.node) for fn in f.forward_funcs}
        ref_strided = None   # whether the reference slices with a step itself: read on the first hit
        for c in f.py.calls:
            if c.func is None or id(c.func.node) not in funcs or c.callee.rsplit(".", 1)[-1] not in REDUCTIONS:
                continue
            fn_node = c.node.child_by_field_name("function")
            operands = []
            if fn_node is not None and fn_node.type == "attribute":
                obj = fn_node.child_by_field_name("object")
                if obj is not None and text(obj) not in ("torch", "np", "numpy", "math"):
                    operands.append(obj)
            operands += c.args[:1]
            for op in operands:
                sl = self._subsample(f, c.func, op)
                if sl is None:
                    continue
                if ref_strided is None:
                    ref_strided = f.reference is not None and any(
                        _step(n) for n in walk(f.reference.py.tree.root_node) if n.type == "subscript")
                if ref_strided:
                    return
                ctx.report(c.node, f"{c.callee.rsplit('.', 1)[-1]} over `{text(sl)[:60]}`, every k-th element of "
                           "a forward input", evidence={"slice": text(sl)[:120]})
                break

    @staticmethod
    def _subsample(f, func, op):
        """A strided slice of a forward input that the reduced expression `op` reads (through
        elementwise arithmetic and locals bound to it in the same function), where the slices
        of that input with that step do not cover every residue (`x[:, ::2] + x[:, 1::2]` reads
        all of x); None otherwise."""
        slices = []   # (node, base text, step, start)
        seen = set()
        stack = [(op, 0)]
        while stack:
            node, depth = stack.pop()
            key = (node.start_byte, node.end_byte)
            if key in seen:
                continue
            seen.add(key)
            if node.type == "identifier":
                bound = f.py.lookup(text(node), op) if depth < 3 else None
                if bound is not None and f.py.func_at(bound) is func and bound.start_byte < op.start_byte:
                    stack.append((bound, depth + 1))
                continue
            if node.type == "subscript":
                step = _step(node)
                base = node.child_by_field_name("value")
                if step and base is not None and any(o.kind == PARAM for o in f.flow.origins(func, base)):
                    slices.append((node, _base_text(base), step[0], step[1]))
                    continue
            if node.type in ("lambda", "list_comprehension", "generator_expression"):
                continue
            stack.extend((c, depth) for c in node.named_children)
        for node, base, k, _ in slices:
            starts = {st for _, b, kk, st in slices if b == base and kk == k}
            if not (set(range(k)) <= {st % k for st in starts if st is not None}):
                return node
        return None


def _base_text(base) -> str:
    return text(base).replace(" ", "")


def _step(sub):
    """(step, start) of the first slice of a subscript whose step is an integer literal greater
    than one (start None where it is not a literal; 0 where absent)."""
    for n in walk(sub):
        if n.type == "slice":
            parts = list(n.children)
            colons = [i for i, c in enumerate(parts) if c.type == ":"]
            if len(colons) == 2 and colons[1] + 1 < len(parts):
                st = parts[colons[1] + 1]
                if st.type == "integer" and int(text(st), 0) > 1:
                    first = parts[0] if colons[0] > 0 else None
                    start = 0 if first is None else (int(text(first), 0) if first.type == "integer" else None)
                    return int(text(st), 0), start
    return None
