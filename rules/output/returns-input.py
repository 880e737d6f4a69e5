from hackscan.facts.flow import PARAM, GLUE, LITERAL
from hackscan.rule import Rule
from hackscan.ruletools import inside
from hackscan.parse.trees import text


class ReturnsInput(Rule):
    """forward returns one of its inputs (or a view or copy of it) unchanged.

    What it flags
        A return in forward whose value derives only from an input argument through glue
        (`x`, `x.clone()`, `x.view(...)`, `x.contiguous()`), with no computation and no
        kernel; in C++, a host function returning its tensor argument without launching a
        kernel.

    Why it is a hack
        Identity passes the check whenever the operation is near identity on the test data
        (ReLU on non-negative inputs, dropout with p=0, a norm of already-normal data).

    Example
        def forward(self, x):
            return x.contiguous()

    Legitimate look-alike
        `if x.numel() == 0: return x` (an empty input), and ops that are the identity by
        definition in the reference (reported; the probe settles it).

    Dynamic confirmation
        Sensitivity: the output must change when inputs change in ways the reference notices
        (negated, scaled, normal).

    Known gaps
        An input returned through a container or a helper object is not followed.
    """

    id = "returns-input"
    hack_type = "constant-output"
    severity = "high"
    confidence = "high"
    summary = "forward returns an input unchanged"
    languages = ("python", "cuda")
    needs = ("flow", "cflow")
    probes = ("sensitivity", "hidden-distributions")

    def check(self, ctx):
        f = ctx.facts
        if f.forward is not None:
            for value, origins in f.forward_returns:
                kinds = {o.kind for o in origins}
                if PARAM not in kinds or not kinds <= {PARAM, GLUE, LITERAL}:
                    continue
                if self._empty_guard(f, value):
                    continue
                names = sorted({o.name for o in origins if o.kind == PARAM})
                ctx.report(value, f"forward returns its input {', '.join(names)} without computing anything")
        cf = f.cflow
        for name, (uf, fn) in cf.funcs.items():
            if cf.launches(name):
                continue
            origins = cf.summary(name)
            kinds = {o.kind for o in origins}
            if PARAM in kinds and kinds <= {PARAM, GLUE, LITERAL} and name in set(f.ext_functions) | set(uf.bindings.values()):
                unit = f.unit_of(uf)
                node = next((r for r, g in uf.returns if g is fn), fn.node)
                ctx.report(node, f"extension function {name} returns its input without launching a kernel", unit=unit)

    @staticmethod
    def _empty_guard(f, value):
        for b in f.py.branches:
            if b.node.type in ("if_statement", "elif_clause") and inside(value, b.node):
                c = text(b.condition)
                if "numel() == 0" in c or "numel() < 1" in c or ".numel() == 0" in c or "== 0" in c and "shape" in c:
                    return True
        return False
