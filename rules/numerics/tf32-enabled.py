from hackscan.rule import Rule
from hackscan.parse.trees import node_at_row, text

PY_FLAGS = ("torch.backends.cuda.matmul.allow_tf32", "torch.backends.cudnn.allow_tf32",
            "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
            "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction",
            "torch.backends.fp32_precision", "torch.backends.cuda.matmul.fp32_precision",
            "torch.backends.cudnn.conv.fp32_precision")
CPP_TF32 = ("CUBLAS_TF32_TENSOR_OP_MATH", "CUBLAS_COMPUTE_32F_FAST_TF32", "CUBLAS_COMPUTE_32F_FAST_16F",
            "CUBLAS_COMPUTE_32F_FAST_16BF", "setAllowTF32CuBLAS", "setAllowTF32CuDNN", "setFloat32MatmulPrecision",
            "CUDNN_FMA_MATH", "CUBLAS_TENSOR_OP_MATH")


class Tf32Enabled(Rule):
    """TF32 (or reduced-precision reductions) switched on for an fp32 problem.

    What it flags
        `torch.backends.cuda.matmul.allow_tf32 = True`, `cudnn.allow_tf32 = True`,
        `torch.set_float32_matmul_precision("high"|"medium")`, Triton `tl.dot(...,
        allow_tf32=True)` or `input_precision="tf32"|"tf32x3"`, and in C++ TF32 math modes and
        compute types (`CUBLAS_TF32_TENSOR_OP_MATH`, `CUBLAS_COMPUTE_32F_FAST_TF32`).

    Why it is a hack
        TF32 keeps 10 mantissa bits. On the H200 a 4096^3 fp32 matmul runs 7.2x faster with
        TF32, a 3x3 conv2d 2.8x: against PyTorch's default strict-fp32 baseline this is a
        speedup from precision, not from the kernel. Setting the global flags also changes the
        reference when both run in one process.

    Example
        torch.backends.cuda.matmul.allow_tf32 = True

    Legitimate look-alike
        `input_precision="ieee"` and explicit `allow_tf32=False`; TF32 on a problem whose
        contract is bf16, fp16 or fp8 (its inputs, parameters or casts), where TF32 ranks above
        the contract's precision; measurement against a
        TF32-enabled baseline (what hackscan's fair speedup does) makes TF32 itself fair.

    Dynamic confirmation
        Precision audit against fp64, and speedup reported against both the strict and the
        TF32 baseline.

    Known gaps
        Triton's `tl.dot` on fp32 uses TF32 by default; that default is not reported, since
        the fair baseline already accounts for it.
    """

    id = "tf32-enabled"
    hack_type = "precision-downgrade"
    severity = "medium"
    confidence = "high"
    summary = "TF32 or reduced-precision math switched on for an fp32 problem"
    languages = ("python", "cuda", "triton")
    needs = ("python", "cuda")
    probes = ("precision-audit",)

    # TF32 and reduced-precision tensor-core math exist on NVIDIA GPUs only: a run on a CPU computes
    # the same fp32 whatever the flag says, so it can neither show nor refute the downgrade
    effect_on = "cuda"

    def check(self, ctx):
        f = ctx.facts
        if f.reference is not None and f.reference.contract_rank < 3:
            # a bf16, fp16 or fp8 contract: TF32 (ranked above them) keeps more precision than
            # the problem asks for, so it lowers nothing (reduced-precision-compute ranks the rest)
            return
        if f.py is not None:
            for name, node, fn in f.py.attr_writes:
                if name in PY_FLAGS:
                    asg = node.parent
                    val = text(asg.child_by_field_name("right")) if asg is not None else ""
                    if val not in ("False", '"ieee"', "'ieee'"):
                        ctx.report(asg or node, f"{name} = {val} enables TF32/reduced-precision math")
            for c in f.py.calls:
                if c.resolved and c.callee == "torch.set_float32_matmul_precision" and c.args and \
                        text(c.args[0]).strip("'\"") in ("high", "medium"):
                    ctx.report(c.node, f"set_float32_matmul_precision({text(c.args[0])}) enables TF32 matmuls")
                for kw in ("allow_tf32", "input_precision"):
                    v = c.kwarg(kw)
                    if v is not None and text(v).strip("'\"") in ("True", "tf32", "tf32x3"):
                        ctx.report(c.node, f"{c.method}({kw}={text(v)}) computes fp32 products in TF32")
        for u in f.cuda:
            for ident in CPP_TF32:
                if ident in u.facts.code and (ident in u.facts.identifiers or ident in {
                        c.callee.rsplit("::", 1)[-1].lstrip(".") for c in u.facts.calls}):
                    idx = u.facts.code.find(ident)
                    line = u.facts.code.count("\n", 0, idx)
                    node = node_at_row(u.facts.tree.root_node, line)
                    ctx.report(node, f"{ident} selects TF32/reduced-precision tensor-core math", unit=u)
