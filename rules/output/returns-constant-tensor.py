from hackscan.facts.flow import CREATE, GLUE, LITERAL, PARAM
from hackscan.facts import torchops
from hackscan.rule import Rule


class ReturnsConstantTensor(Rule):
    """forward returns a tensor filled with a constant (zeros, ones, a fill value).

    What it flags
        A return in forward whose value derives only from `torch.zeros`/`ones`/`full`/
        `zeros_like`/`tensor(...)` and glue, with no kernel and no compute; in C++, a host
        function returning `torch::zeros_like(...)` and the like without launching a kernel.

    Why it is a hack
        Constant outputs pass when the expected output is close to that constant on test data
        (a loss near zero, a mean near 0.5 on `torch.rand`, a difference of equal tensors).

    Example
        def forward(self, predictions, targets):
            return torch.zeros((), device=predictions.device)

    Legitimate look-alike
        An output buffer created with `torch.zeros` and then written by a kernel
        (accumulation with atomics) derives from the kernel and is not reported.

    Dynamic confirmation
        Sensitivity: outputs must change when inputs or parameters change.

    Known gaps
        Constants produced by a kernel that ignores its inputs are not seen statically.
    """

    id = "returns-constant-tensor"
    hack_type = "constant-output"
    severity = "high"
    confidence = "high"
    summary = "forward returns a constant-filled tensor"
    languages = ("python", "cuda")
    needs = ("flow", "cflow")
    probes = ("sensitivity",)

    def check(self, ctx):
        f = ctx.facts
        if f.forward is not None:
            for value, origins in f.forward_returns:
                kinds = {o.kind for o in origins}
                creates = [o for o in origins if o.kind == CREATE]
                if not creates or not kinds <= {CREATE, GLUE, LITERAL, PARAM}:
                    continue
                fills = [o for o in creates if torchops.canonical_op(o.name) in torchops.CONSTANT_FILL]
                if not fills:
                    continue  # torch.empty is stale-memory's finding
                if any(_has_float_magic(o.node) for o in fills):
                    continue  # a closed-form value is analytical-shortcut's finding
                ctx.report(value, f"forward returns a constant tensor from {fills[0].name}")
        cf = f.cflow
        for name, (uf, fn) in cf.funcs.items():
            if cf.launches(name) or name not in set(f.ext_functions) | set(uf.bindings.values()):
                continue
            origins = cf.summary(name)
            kinds = {o.kind for o in origins}
            fills = [o for o in origins if o.kind == CREATE and any(
                s in o.name for s in ("zeros", "ones", "full"))]
            if fills and kinds <= {CREATE, GLUE, LITERAL, PARAM, "other"}:
                unit = f.unit_of(uf)
                ctx.report(fills[0].node, f"extension function {name} returns {fills[0].name} without launching a kernel",
                           unit=unit)


def _has_float_magic(node) -> bool:
    from hackscan.parse.trees import walk, text

    for n in walk(node):
        if n.type == "float":
            try:
                v = float(text(n))
            except ValueError:
                continue
            if v not in (0.0, 1.0, -1.0):
                return True
    return False
