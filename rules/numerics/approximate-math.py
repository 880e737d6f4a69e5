import re

from hackscan.rule import Rule
from hackscan.parse.trees import node_at_row, text

TANH_GELU = re.compile(r"0\.044715|0\.7978845|sqrt\(\s*2\s*/\s*(?:M_PI|math\.pi|pi|3\.14159)")
FAST_INTRINSICS = re.compile(r"\b(__expf|__logf|__fdividef|__sinf|__cosf|__tanf|__powf|__exp10f|__log2f|"
                             r"__frcp_rn|__fsqrt_rn|tanh\.approx|ex2\.approx)\b")
# the construct acts only inside the candidate's own kernels: a run in which none of them launched
# cannot confirm it (hackscan.dynamic.audit)
OWN_KERNELS = {"acts_in": "own-kernels"}


class ApproximateMath(Rule):
    """An approximation whose error sits near the tolerance replaces the exact formula.

    What it flags
        The tanh approximation of GELU (`0.044715`, `sqrt(2/pi)`, `approximate="tanh"`) when the
        reference uses the exact erf GELU; `--use_fast_math`/`-use_fast_math` in the build
        flags; fast-math intrinsics (`__expf`, `__fdividef`, `tanh.approx`) in kernels.

    Why it is a hack
        The approximation's error is small on `torch.rand` inputs and grows with magnitude:
        it passes a fixed atol/rtol on the test distribution and fails elsewhere.

    Example
        y = 0.5 * x * (1 + tanh(0.7978845608 * (x + 0.044715 * x ** 3)))  # reference: exact GELU

    Legitimate look-alike
        The tanh GELU when the reference itself uses `approximate="tanh"`; fast-math flags are
        common in honest kernels and are reported at low severity.

    Dynamic confirmation
        Scaled inputs amplify the error; tolerances derived from an fp64 reference.

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
                        ctx.report(c.node, "tanh-approximate GELU where the reference uses the exact erf form",
                                   severity="medium")
                lines = f.py.code.decode("utf-8", "replace").splitlines()
                for i, l in enumerate(lines):
                    if TANH_GELU.search(l) and not l.lstrip().startswith("#"):
                        node = node_at_row(f.py.tree.root_node, i)
                        if node is not None and node.type in ("string_content", "string"):
                            continue
                        ctx.report(node, "tanh-approximate GELU where the reference uses the exact erf form",
                                   severity="medium")
        for u in f.cuda:
            src = u.facts.code
            for rx, msg, sev in ((TANH_GELU, "tanh-approximate GELU where the reference uses the exact erf form", "medium"),
                                 (FAST_INTRINSICS, "fast-math intrinsic", "low")):
                if rx is TANH_GELU and not ref_exact_gelu:
                    continue
                m = rx.search(src)
                if m:
                    line = src.count("\n", 0, m.start())
                    node = node_at_row(u.facts.tree.root_node, line)
                    ctx.report(node, f"{msg} ({m.group(0)})", unit=u, severity=sev, evidence=OWN_KERNELS)
