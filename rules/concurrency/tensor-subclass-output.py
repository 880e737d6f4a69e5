from hackscan.rule import Rule

TENSOR_BASES = ("torch.Tensor", "torch._C._TensorBase", "torch._C.TensorBase", "torch.nn.Parameter",
                "torch._tensor.Tensor")


class TensorSubclassOutput(Rule):
    """The candidate defines or creates a Tensor subclass.

    What it flags
        Classes deriving from `torch.Tensor`; `torch.Tensor._make_subclass`, `as_subclass`,
        `_make_wrapper_subclass`; classes defining `__torch_function__` or `__torch_dispatch__`.

    Why it is a hack
        A lazy tensor can compute (or fetch the reference's answer) only when the checker
        compares it, or override comparison and `allclose` altogether.

    Example
        class Lazy(torch.Tensor):
            def __torch_function__(cls, func, types, args=(), kwargs=None): ...

    Legitimate look-alike
        None in a benchmark candidate; `nn.Parameter` subclasses for weights are reported low.

    Dynamic confirmation
        Exact type and storage check on outputs; outputs copied to auditor-owned memory at
        return.

    Known gaps
        Subclasses created in C++ through `THPVariable_Wrap` tricks are not recognised.
    """

    id = "tensor-subclass-output"
    hack_type = "lazy-tensor"
    severity = "high"
    confidence = "high"
    summary = "the candidate defines or creates a Tensor subclass"
    needs = ("python",)
    probes = ("output-type",)

    def check(self, ctx):
        py = ctx.py
        for k in py.classes.values():
            if any(b in TENSOR_BASES for b in k.bases):
                ctx.report(k.node, f"class {k.name} subclasses {k.bases[0]}",
                           severity="low" if all(b == "torch.nn.Parameter" for b in k.bases) else None)
            for m in ("__torch_function__", "__torch_dispatch__"):
                if m in k.methods:
                    ctx.report(k.methods[m].node, f"{k.name}.{m} intercepts torch operations")
        for c in py.calls:
            if c.method in ("_make_subclass", "as_subclass", "_make_wrapper_subclass"):
                ctx.report(c.node, f"{c.method} creates a Tensor subclass instance")
