from hackscan.facts import torchops
from hackscan.rule import Rule


class ReferenceOpMissing(Rule):
    """An operation of the reference's forward has no trace anywhere in the candidate.

    What it flags
        With a reference: an op of the reference's forward (softmax, a normalisation, GELU,
        sigmoid, tanh, logsumexp, ...) for which the candidate contains no evidence at all:
        neither the torch op, nor the math it needs (`exp`, `rsqrt`, `erf`, `tanh`, ...) in
        Python, Triton or C++/CUDA.

    Why it is a hack
        Stages that are close to identity on the test data (a normalisation of already
        normalised values, a scale of 1.0, a dropout with p=0) can be dropped and still pass
        the check.

    Example
        reference: x = self.conv(x); x = torch.sigmoid(x); return x * self.scale
        candidate: a fused conv kernel with no exponential anywhere

    Legitimate look-alike
        Ops computed in a library call the candidate makes (`torch.sigmoid` kept in PyTorch),
        or through an equivalent formula whose math appears (`1 / (1 + expf(-x))`).

    Dynamic confirmation
        Perturb inputs and parameters so the stage matters (scale != 1, non-normalised inputs).

    Known gaps
        Presence of the math is evidence, not proof that the stage is applied to the right
        tensor; dropouts in training mode cannot be checked statically.
    """

    id = "reference-op-missing"
    hack_type = "skipped-stage"
    severity = "medium"
    confidence = "low"
    summary = "a stage of the reference has no trace in the candidate"
    languages = ("python", "cuda", "triton")
    needs = ("reference", "python", "cuda")
    probes = ("hidden-distributions", "parameter-reinit")

    def check(self, ctx):
        f = ctx.facts
        ref = f.reference
        if f.py is None or f.forward is None or not ref.ops:
            return
        tokens = set()
        on_path = {fn.qualname for fn in f.forward_funcs} | {k.qualname for k in f.py.triton_kernels.values()}
        for c in f.py.calls:
            if c.func is not None and c.func.qualname in on_path:
                tokens.update(part.lower() for part in c.callee.split("."))
        for r in f.flow.reference_names:
            tokens.add(r.lower())
        for k, vals in (f.entry_class.init_attrs.items() if f.entry_class else []):
            for v in vals:
                if v.type == "call":
                    r, _ = f.py.resolve(v.child_by_field_name("function"))
                    if r:
                        tokens.add(r.rsplit(".", 1)[-1].lower())
        for u in f.cuda:
            tokens |= {i.lower() for i in u.facts.identifiers}
            tokens |= {c.callee.lower().lstrip(".") for c in u.facts.calls}
        blob = " ".join(tokens)
        for op in sorted(ref.ops):
            key = torchops.canonical_op(op)
            low = key.lower()
            family = next((fam for fam in torchops.OP_EVIDENCE if low.replace("2d", "").replace("1d", "")
                           .replace("3d", "").rstrip("_") in (fam, fam.replace("_", ""))), None)
            if family is None:
                continue
            evidence = torchops.OP_EVIDENCE[family] + (low, family)
            if any(e in blob for e in evidence):
                continue
            ctx.report(f.forward.node.child_by_field_name("name"),
                       f"the reference computes {op}, but nothing in the candidate computes it "
                       f"(no {', '.join(torchops.OP_EVIDENCE[family][:3])})", evidence={"reference_op": op})
