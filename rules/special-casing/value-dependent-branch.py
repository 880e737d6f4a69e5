from hackscan.rule import Rule
from hackscan.ruletools import (block_calls_kinds, branch_blocks, condition_tags, iter_forward_branches,
                                raises_only, returns_in)
from hackscan.parse.trees import text, walk

VALUE_CALLS = (".min", ".max", ".all", ".any", ".item", ".sum", ".mean", ".abs", ".amin", ".amax")


class ValueDependentBranch(Rule):
    """Branch on the values of the inputs that changes what forward computes.

    What it flags
        An `if`, `elif`, conditional expression or `while` in forward (or a helper it calls),
        or in the extension's host C++, whose condition reduces the input's values (`x.min()`,
        `torch.all(x >= 0)`, `(x < 0).any()`, `x.max().item()`, element reads such as `x[0]`)
        and whose branches compute differently (one returns early, skips the kernel or calls
        PyTorch instead).

    Why it is a hack
        Benchmarks draw inputs from one distribution (mostly `torch.rand`, all values in
        [0, 1)). A branch on values routes those inputs to a shortcut that is only right for
        them: a ReLU that returns its input when `x.min() >= 0` reported a 374x speedup.

    Example
        def forward(self, x):
            if x.min() >= 0:          # every torch.rand input takes this path
                return x
            return relu_ext.relu(x)

    Legitimate look-alike
        Validation that rejects bad input (`if torch.isnan(x).any(): raise ValueError(...)`)
        and branches on shapes, dtypes or devices are not value branches. A branch whose
        arms only raise is not reported.

    Dynamic confirmation
        Hidden input distributions (negated, scaled, standard normal, heavy-tailed, zeros,
        denormals): the candidate must match the reference on all of them. A shortcut that stays
        correct (ReLU returning its non-negative input) only changes the speed: the branch trace
        or timing per distribution settles it, so matching outputs alone do not clear it.

    Known gaps
        Values reduced inside a CUDA kernel and used to pick a path on the device are not
        seen; a test kept in a local (`small = x.abs().max() < 1`, `ok = bool((x >= 0).all())`)
        is followed up to three bindings deep, inside one function only, and only where the local
        holds a comparison, a boolean or a reduction (an integer worked out from values with
        min/max/arithmetic, a split count say, is read as a size).
    """

    id = "value-dependent-branch"
    hack_type = "value-special-casing"
    severity = "high"
    confidence = "medium"
    summary = "a branch on input values changes what forward computes"
    languages = ("python", "cuda")
    needs = ("flow", "cuda")
    probes = ("hidden-distributions", "branch-trace")

    def check(self, ctx):
        f = ctx.facts
        if f.py is not None and f.forward is not None:
            for b in iter_forward_branches(f):
                tags = condition_tags(f, b.func, b.condition)
                if "value" not in tags:
                    continue
                cons, alts = branch_blocks(b.node)
                if raises_only(cons) and all(raises_only(a.child_by_field_name("body") or a) for a in alts or []):
                    continue
                if raises_only(cons) and not alts:
                    continue
                early = bool(returns_in(cons)) or b.node.type == "conditional_expression"
                kinds_c = block_calls_kinds(f, cons)
                kinds_a = set().union(*(block_calls_kinds(f, a) for a in alts)) if alts else set()
                differs = early or kinds_c != kinds_a
                if not differs:
                    continue
                conf = "high" if early else "medium"
                ctx.report(b.condition, f"branch on input values `{text(b.condition)[:80]}` "
                           "selects a different computation", confidence=conf,
                           evidence={"condition": text(b.condition)[:200]})
        for u in f.cuda:
            for node, cond, fn in u.facts.ifs:
                if fn is None or fn.kind != "host":
                    continue
                ctext = text(cond)
                if not any(v + "(" in ctext or v + "<" in ctext for v in VALUE_CALLS):
                    continue
                if not any(n.type == "identifier" and text(n) in {p.name for p in fn.params} for n in walk(cond)):
                    continue
                ctx.report(cond, f"host code branches on tensor values `{ctext[:80]}`", unit=u,
                           evidence={"condition": ctext[:200]})
