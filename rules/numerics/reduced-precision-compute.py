import re

from hackscan.facts.torchops import RANK_NAMES, precision_rank
from hackscan.rule import Rule
from hackscan.parse.trees import node_at_row, text

PY_LOW = ("torch.float16", "torch.half", "torch.bfloat16", "torch.float8_e4m3fn", "torch.float8_e5m2",
          "torch.float8_e4m3fnuz", "torch.float8_e5m2fnuz")
TL_LOW = ("tl.float16", "tl.bfloat16", "tl.float8e4nv", "tl.float8e5", "triton.language.float16",
          "triton.language.bfloat16", "triton.language.float8e4nv", "triton.language.float8e5")
CPP_LOW = re.compile(r"\b(__half2?|__nv_bfloat162?|__float2half\w*|__half2float|__float2bfloat16\w*|"
                     r"__bfloat162float|__hmul2?|__hadd2?|__hfma2?|at::kHalf|at::kBFloat16|torch::kHalf|"
                     r"torch::kBFloat16|torch::kFloat16|c10::Half|c10::BFloat16|at::Half|at::BFloat16|"
                     r"__nv_fp8_e4m3|__nv_fp8_e5m2|wmma::fragment|nvcuda::wmma)\b")


class ReducedPrecisionCompute(Rule):
    """fp16/bf16/fp8 arithmetic on an fp32 contract.

    What it flags
        Casts to half, bfloat16 or fp8 in forward (`.half()`, `.to(torch.bfloat16)`,
        `dtype=torch.float16`, `autocast`), Triton casts (`.to(tl.float16)`), and C++ half
        types, conversions and tensor-core fragments, when the reference's inputs are fp32 (or
        no reference says otherwise).

    Why it is a hack
        Lower precision is faster and often inside a 1e-2 or loose 1e-4 tolerance on small
        uniform inputs; the speedup is bought with accuracy the contract did not allow.

    Example
        return ext.gemm(x.half(), w.half()).float()

    Legitimate look-alike
        Casts to the contract's own precision or above: the contract is the lowest precision
        the reference itself uses, from its inputs' dtypes, casts in `get_inputs`
        (`.to(torch.float8_e4m3fn)`), and its model's parameters, buffers and forward (ranks fp64
        > fp32 > tf32 > bf16/fp16 > fp8: bf16 math on a bf16 contract is the contract, fp8 on a
        bf16 contract is not); fp32 kernels that only load or store packed types without changing
        the math.

    Dynamic confirmation
        Precision audit: error against an fp64 reference next to the strict-fp32
        reference's own error; scaled inputs amplify it.

    Known gaps
        Precision lowered through PTX inline assembly or library flags is not recognised.
    """

    id = "reduced-precision-compute"
    hack_type = "precision-downgrade"
    severity = "medium"
    confidence = "medium"
    summary = "fp16/bf16/fp8 math on an fp32 contract"
    languages = ("python", "cuda", "triton")
    needs = ("python", "cuda")
    probes = ("precision-audit",)

    def check(self, ctx):
        f = ctx.facts
        # the contract's precision: the lowest the reference itself uses (fp8 inputs made by a
        # cast count); a cast below it is the downgrade, a cast to it or above is the contract
        contract = f.reference.contract_rank if f.reference is not None else 4
        if contract <= 1:
            return
        name = RANK_NAMES[contract]
        where = f"on {'an' if name.startswith('fp') else 'a'} {name} contract"

        def below(name: str) -> bool:
            rank = precision_rank(name)
            return rank is not None and rank < contract

        if f.py is not None:
            for c in f.py.calls:
                if c.method in ("half", "bfloat16") and not c.resolved and not c.args:
                    if below(c.method):
                        ctx.report(c.node, f".{c.method}() lowers the precision {where}")
                elif c.resolved and c.callee.startswith(("torch.autocast", "torch.cuda.amp.autocast", "torch.amp.autocast")):
                    if contract > 2:
                        ctx.report(c.node, "autocast runs the computation in reduced precision")
                elif c.method == "to" or c.kwarg("dtype") is not None:
                    for a in list(c.args) + [c.kwarg("dtype")]:
                        if a is None:
                            continue
                        r, _ = f.py.resolve(a)
                        if (r in PY_LOW or r in TL_LOW or text(a) in TL_LOW) and below(r or text(a)):
                            ctx.report(c.node, f"casts to {r or text(a)} {where}")
                            break
        for u in f.cuda:
            seen = set()
            for m in CPP_LOW.finditer(u.facts.code):
                if m.group(0).startswith(("wmma", "nvcuda")):
                    if contract <= 2:
                        continue
                elif not below(m.group(0)):
                    continue
                line = u.facts.code.count("\n", 0, m.start())
                if line in seen:
                    continue
                seen.add(line)
                ctx.report(node_at_row(u.facts.tree.root_node, line), f"{m.group(0)}: reduced-precision arithmetic in the kernel source",
                           unit=u)
                if len(seen) >= 3:
                    break
