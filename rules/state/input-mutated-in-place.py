from hackscan.rule import Rule
from hackscan.parse.trees import text

VIEWS = {"view", "reshape", "transpose", "permute", "flatten", "unsqueeze", "squeeze", "t", "narrow",
         "select", "expand", "as_strided", "contiguous", "view_as", "detach", "unflatten", "movedim"}
INPLACE_FUNCS = {"torch.relu_", "torch.sigmoid_", "torch.tanh_", "torch.exp_", "torch.zero_",
                 "torch.nn.functional.relu_", "torch.nn.init.zeros_", "torch.nn.init.constant_"}


class InputMutatedInPlace(Rule):
    """forward (or its extension) writes into an input tensor.

    What it flags
        In-place methods (`x.zero_()`, `x.mul_(2)`, `x.copy_(...)`, `x.relu_()`), slice
        assignment (`x[...] = ...`), `out=x` and `inplace=True` on an argument of forward or
        a view of it; a Triton launch whose kernel stores through the parameter that receives
        an input; in C++, in-place methods on tensor parameters.

    Why it is a hack
        When candidate and reference share input tensors, mutating them changes what the
        reference computes afterwards (zero the input, return zeros, and both agree); it also
        corrupts the next timing iteration's data.

    Example
        def forward(self, x):
            x.zero_()
            return torch.zeros_like(x)

    Legitimate look-alike
        In-place work on a copy (`y = x.clone(); y.relu_()`) or on a buffer the candidate
        allocated itself.

    Dynamic confirmation
        Input integrity: checksums of every input before and after the call; candidate and
        reference never share tensors.

    Known gaps
        Writes through raw pointers inside kernels are only followed for tensor parameters
        passed straight to a launch.
    """

    id = "input-mutated-in-place"
    hack_type = "input-mutation"
    severity = "medium"
    confidence = "medium"
    summary = "forward writes into an input tensor"
    languages = ("python", "cuda")
    needs = ("flow", "cuda")
    probes = ("input-integrity",)

    def check(self, ctx):
        f = ctx.facts
        if f.forward is not None:
            fwd = f.forward
            params = [p for p in fwd.params if p != "self"]
            aliases = self._aliases(f, fwd, params)
            for c in f.py.calls:
                if c.func is not fwd:
                    continue
                fn = c.node.child_by_field_name("function")
                target = None
                if fn is not None and fn.type == "attribute" and c.method.endswith("_") and not c.method.startswith("_"):
                    target = text(fn.child_by_field_name("object"))
                elif c.resolved and c.callee in INPLACE_FUNCS and c.args:
                    target = text(c.args[0])
                inplace_kw = c.kwarg("inplace")
                if inplace_kw is not None and text(inplace_kw) == "True" and c.args:
                    target = text(c.args[0])
                out_kw = c.kwarg("out")
                if out_kw is not None:
                    target = text(out_kw)
                if target in aliases and self._still_alias(f, fwd, target, c.node, aliases):
                    ctx.report(c.node, f"writes into the input {aliases[target]} in place")
            for st, fn in f.py.subscript_writes:
                if fn is fwd:
                    base = text(st.child_by_field_name("value"))
                    if base in aliases and self._still_alias(f, fwd, base, st, aliases):
                        ctx.report(st, f"assigns into the input {aliases[base]}")
            for name, call in f.py.triton_launches:
                if call.func is not fwd:
                    continue
                written = f.flow.triton_written_args(call) or set()
                kname = name.split(".")[-1]
                for i, a in enumerate(call.args):
                    t = text(a)
                    if i in written and t in aliases and self._still_alias(f, fwd, t, call.node, aliases):
                        k = f.py.triton_kernels[kname]
                        ctx.report(call.node, f"{kname} stores through {k.params[i]}, which is the input {aliases[t]}")
        for u in f.cuda:
            for c in u.facts.calls:
                if c.func is None or c.func.kind != "host" or not c.receiver:
                    continue
                if c.callee.endswith("_") and c.callee.startswith(".") and c.receiver in {
                        p.name for p in c.func.params if "Tensor" in p.type and "const" not in p.type}:
                    ctx.report(c.node, f"host code writes into the input {c.receiver} in place", unit=u)

    @classmethod
    def _still_alias(cls, f, fwd, name, at, aliases, depth=0):
        """The last binding of `name` before `at` keeps it a view of an input (a name rebound
        to a fresh value, `x = self.conv(x)`, no longer is the input)."""
        last = None
        for a in f.py.assigns:
            if a.func is fwd and not a.augmented and a.node.start_byte < at.start_byte and \
                    any(t.type == "identifier" and text(t) == name for t in a.targets):
                if last is None or a.node.start_byte > last.node.start_byte:
                    last = a
        if last is None:
            return name in fwd.params
        base = cls._view_base(last.value, aliases)
        if base is None or depth > 8:
            return False
        return cls._still_alias(f, fwd, base, last.node, aliases, depth + 1)

    @staticmethod
    def _view_base(v, out):
        if v is None:
            return None
        if v.type == "identifier" and text(v) in out:
            return text(v)
        if v.type == "call":
            fn = v.child_by_field_name("function")
            if fn is not None and fn.type == "attribute" and text(fn.child_by_field_name("attribute")) in VIEWS:
                obj = text(fn.child_by_field_name("object"))
                if obj in out:
                    return obj
        if v.type == "subscript":
            obj = text(v.child_by_field_name("value"))
            if obj in out:
                return obj
        return None

    @classmethod
    def _aliases(cls, f, fwd, params):
        out = {p: p for p in params}
        changed = True
        while changed:
            changed = False
            for a in f.py.assigns:
                if a.func is not fwd or a.value is None or a.augmented:
                    continue
                base = cls._view_base(a.value, out)
                for t in a.targets:
                    if base is not None and t.type == "identifier" and text(t) not in out:
                        out[text(t)] = out[base]
                        changed = True
        return out
