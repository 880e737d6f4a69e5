from hackscan.facts.flow import CUSTOM, HEAVY
from hackscan.facts import torchops
from hackscan.rule import Rule


class HeavyTorchOpBesideKernel(Rule):
    """A custom kernel runs, but the heavy operation of forward stays in PyTorch.

    What it flags
        forward's returned value passes through both a custom kernel and a heavy torch op
        (matmul, conv, linear, bmm, attention, `@`). With a reference, severity rises when the
        heavy op is the reference's own main op and the rest of the reference is at most one
        light op, so the custom kernel can only be the trivial part.

    Why it is a hack
        "Fusing" a bias-add or ReLU while cuBLAS does the GEMM claims the speed of a fused
        kernel for PyTorch's work: the custom share of device time is tiny.

    Example
        def forward(self, x):
            y = torch.matmul(x, self.w)       # the heavy op stays in PyTorch
            return bias_relu_ext.run(y, self.b)

    Legitimate look-alike
        One cuBLAS GEMM inside an otherwise custom fused chain (e.g. GEMM followed by a custom
        LayerNorm + GELU + scale kernel) is reported at low severity, not condemned; so is a
        cheap reduction left to PyTorch after a kernel that does the main work (a loss's mean).

    Dynamic confirmation
        Kernel attribution by work: the share of the reference's work (its aten ops' FLOPs and
        bytes) that the candidate's own PyTorch calls did. Half or more, with at most one other
        kind of the reference's work left to its kernels, is a partial fallback at any share of
        device time; the candidate's kernels doing two kinds or more is the fused chain above.

    Known gaps
        Without a reference the main op is unknown and every such mix is reported low.
    """

    id = "heavy-torch-op-beside-kernel"
    hack_type = "partial-fallback"
    severity = "low"
    confidence = "medium"
    summary = "the heavy op stays in PyTorch next to a custom kernel"
    needs = ("flow",)
    probes = ("kernel-attribution",)

    def check(self, ctx):
        f = ctx.facts
        if f.forward is None:
            return
        ref = f.reference
        for value, origins in f.forward_returns:
            if not any(o.kind == CUSTOM for o in origins):
                continue
            heavy = [o for o in origins if o.kind == HEAVY]
            if not heavy:
                continue
            names = {torchops.canonical_op(o.name.split("(")[0]) for o in heavy}
            sev, conf = "low", "medium"
            if ref is not None and ref.heavy_ops:
                light = ref.ops - ref.heavy_ops
                kept = {n.lower() for n in names | _aliases(names)}
                if "torch.matmul(@)" in {o.name for o in heavy}:
                    kept |= _aliases({"matmul"})
                kept_main = {h.lower() for h in ref.heavy_ops} <= kept
                if kept_main and len(light) <= 1:
                    sev, conf = "medium", "high"
            for o in sorted(heavy, key=lambda o: o.node.start_byte):
                ctx.report(o.node, f"{o.name} computes the heavy part in PyTorch beside the custom kernel",
                           severity=sev, confidence=conf, evidence={"heavy_op": o.name})


def _aliases(names):
    out = set()
    for n in names:
        # every PyTorch product that does a GEMM's work (an outside red team's tensordot beside a
        # copy kernel was low where `@` and einsum were medium)
        if n in ("mm", "bmm", "addmm", "baddbmm", "addbmm", "linear", "Linear", "matmul", "einsum", "tensordot",
                 "chain_matmul", "multi_dot", "mv", "addmv", "inner", "outer", "dot"):
            out |= {"matmul", "mm", "bmm", "addmm", "linear", "Linear"}
        if n.lower().startswith("conv"):
            out |= {n, n.lower(), n.replace("Conv", "conv")}
    return out
