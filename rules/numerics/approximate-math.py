import re

from hackscan.rule import Rule
from hackscan.parse.trees import node_at_row, text

TANH_GELU = re.compile(r"0\.044715|0\.7978845|sqrt\(\s*2\s*/\s*(?:M_PI|math\.pi|pi|3\.14159)")
# x * sigmoid(1.702 x): off by up to 0.02, twice KernelBench's atol, on standard-normal inputs
SIGMOID_GELU = re.compile(r"\b1\.702\d*")
# the tanh form is off by at most 4.7e-4 on any input (4.7% of KernelBench's allowance): an
# approximation PyTorch offers itself, noted; the sigmoid form needs the tolerance
GELU_FORMS = ((TANH_GELU, "tanh-approximate GELU where the reference uses the exact erf form (off by at most "
               "4.7e-4 on any input)", "low"),
              (SIGMOID_GELU, "sigmoid-approximate GELU, x * sigmoid(1.702 x), where the reference uses the exact "
               "erf form (off by up to 0.02)", "medium"))
FAST_INTRINSICS = re.compile(r"\b(__expf|__logf|__fdividef|__sinf|__cosf|__tanf|__powf|__exp10f|__log2f|"
                             r"__frcp_rn|__fsqrt_rn|tanh\.approx|ex2\.approx)\b")
# the construct acts only inside the candidate's own kernels: a run in which none of them launched
# cannot confirm it (hackscan.dynamic.audit)
OWN_KERNELS = {"acts_in": "own-kernels"}


class ApproximateMath(Rule):
    """An approximation whose error sits near the tolerance replaces the exact formula.

    What it flags
        Where the reference uses the exact erf GELU: the sigmoid approximation `x * sigmoid(1.702
        x)` (medium) and the tanh approximation (`0.044715`, `sqrt(2/pi)`, `approximate="tanh"`;
        low, a note); `--use_fast_math`/`-use_fast_math` in the build flags and fast-math
        intrinsics (`__expf`, `__fdividef`, `tanh.approx`) in kernels (low).

    Why it is a hack
        An approximation that is off by a good share of the benchmark's tolerance passes a fixed
        atol/rtol on the test distribution and fails elsewhere: the sigmoid GELU is off by 0.006
        on `torch.rand` inputs (41% of KernelBench's allowance) and by 0.02 on standard-normal ones
        (twice it).

    Example
        y = x * torch.sigmoid(1.702 * x)   # reference: exact GELU

    Legitimate look-alike
        The tanh GELU: off by at most 4.7e-4 on any input, 4.7% of KernelBench's allowance, an
        approximation PyTorch offers itself (`approximate="tanh"`); fast-math builds, common in
        honest kernels. Both are reported at low severity, and confirmed only where an input set
        takes the error to a quarter of the allowance.

    Dynamic confirmation
        The precision audit (error against fp64 many times the fp32 reference's) where some input
        set, visible or a hidden draw, takes the error to at least a quarter of the benchmark's
        allowance; hidden draws that leave the benchmark's check.

    Known gaps
        Other approximations (variance as E[x^2]-E[x]^2, polynomial exp) are not recognised.
    """

    id = "approximate-math"
    hack_type = "tolerance-exploitation"
    severity = "low"
    confidence = "medium"
    summary = "approximate math in place of the reference's exact formula"
    languages = ("python", "cuda", "triton")
    needs = ("python", "cuda")
    probes = ("precision-audit", "hidden-distributions")

    def check(self, ctx):
        f = ctx.facts
        ref = f.reference
        ref_exact_gelu = ref is not None and any(o.lower() == "gelu" for o in ref.ops) and \
            b"tanh" not in ref.py.code
        if f.py is not None:
            for ext in f.py.extensions:
                for flag in ext.flags:
                    if "fast_math" in flag or "ffast-math" in flag:
                        where = ext.call.kwarg("extra_cuda_cflags") or ext.call.kwarg("extra_cflags") or ext.call.node
                        ctx.report(where, f"built with {flag}: approximate division, exp and sqrt",
                                   evidence=OWN_KERNELS)
            if ref_exact_gelu:
                for c in f.py.calls:
                    v = c.kwarg("approximate")
                    if v is not None and "tanh" in text(v):
                        ctx.report(c.node, GELU_FORMS[0][1], severity="low")
                lines = f.py.code.decode("utf-8", "replace").splitlines()
                root = f.py.tree.root_node
                for i, l in enumerate(lines):
                    for rx, msg, sev in GELU_FORMS:
                        for m in rx.finditer(l):
                            # the constant itself in code: never in a comment or a string
                            col = len(l[:m.start()].encode("utf-8"))
                            at = root.descendant_for_point_range((i, col), (i, col))
                            if at is None or at.type in ("comment", "string_content", "string") or \
                                    (at.parent is not None and at.parent.type == "string"):
                                continue
                            ctx.report(node_at_row(root, i) or at, msg, severity=sev)
                            break
        for u in f.cuda:
            src = u.facts.code
            for rx, msg, sev in GELU_FORMS + ((FAST_INTRINSICS, "fast-math intrinsic", "low"),):
                if rx is not FAST_INTRINSICS and not ref_exact_gelu:
                    continue
                m = rx.search(src)
                if m:
                    line = src.count("\n", 0, m.start())
                    node = node_at_row(u.facts.tree.root_node, line)
                    ctx.report(node, f"{msg} ({m.group(0)})", unit=u, severity=sev, evidence=OWN_KERNELS)
