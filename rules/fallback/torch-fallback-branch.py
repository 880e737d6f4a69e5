from hackscan.facts.flow import CUSTOM, HEAVY, COMPUTE, REFERENCE
from hackscan.rule import Rule
from hackscan.ruletools import block_calls_kinds, branch_blocks, condition_tags, iter_forward_branches, calls_in_node


class TorchFallbackBranch(Rule):
    """One arm of a branch runs the custom kernel, another computes the op with PyTorch.

    What it flags
        An `if`/`else` (or conditional expression) in forward or its helpers where one arm
        reaches a custom kernel and another arm computes with torch compute ops or the
        reference model, whatever the condition tests: an availability flag, the device, the
        dtype, contiguity, a size limit. Device-only conditions (`x.is_cuda`) are reported
        at low severity, since on the GPU benchmark the custom arm runs.

    Why it is a hack
        The custom path runs only where it works; everywhere else the benchmark scores
        PyTorch's result as the candidate's. On a CPU the probe tests the fallback, not the
        kernel.

    Example
        if x.is_contiguous() and x.shape[-1] <= 1024:
            return ext.softmax(x)
        return torch.softmax(x, dim=-1)

    Legitimate look-alike
        Branches whose arms all run custom kernels (tuning), arms that raise on unsupported
        input, and glue-only arms (`x = x.contiguous()`).

    Dynamic confirmation
        Record which arm ran for each probe input; force the custom path and compare.

    Known gaps
        Value-based conditions are left to value-dependent-branch.
    """

    id = "torch-fallback-branch"
    hack_type = "guarded-fallback"
    severity = "medium"
    confidence = "medium"
    summary = "a branch falls back to PyTorch compute where the custom path is not taken"
    needs = ("flow",)
    probes = ("forced-failure", "branch-trace")

    def check(self, ctx):
        f = ctx.facts
        if f.forward is None:
            return
        for b in iter_forward_branches(f):
            tags = condition_tags(f, b.func, b.condition)
            if "value" in tags:
                continue
            cons, alts = branch_blocks(b.node)
            arms = [cons] + [a for a in alts]
            if b.node.type in ("if_statement", "elif_clause") and not alts:
                # `if cond: return torch...` followed by the custom path in the same block
                parent = b.node.parent
                rest = []
                if parent is not None:
                    after = False
                    for s in parent.named_children:
                        if after:
                            rest.append(s)
                        if s == b.node:
                            after = True
                arm_kinds = [block_calls_kinds(f, cons), set().union(*(block_calls_kinds(f, s) for s in rest))
                             if rest else set()]
            else:
                arm_kinds = [block_calls_kinds(f, a) for a in arms]
            custom_arm = any(CUSTOM in k for k in arm_kinds)
            torch_arms = [k for k in arm_kinds if CUSTOM not in k and k & {HEAVY, COMPUTE, REFERENCE}]
            if not (custom_arm and torch_arms):
                continue
            fallback_calls = [c for a in arms if a is not None for c in calls_in_node(f, a)
                              if f.flow.kind(c) in (HEAVY, COMPUTE, REFERENCE)]
            only_device = tags and tags <= {"device"}
            ctx.report(b.condition, "where this condition sends inputs away from the custom kernel, "
                       "PyTorch computes the result" + (f" ({fallback_calls[0].callee})" if fallback_calls else ""),
                       severity="low" if only_device else None,
                       evidence={"condition_tests": ",".join(sorted(tags)) or "flag"})
