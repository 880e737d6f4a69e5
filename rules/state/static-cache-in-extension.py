import re

from hackscan.rule import Rule
from hackscan.parse.trees import text

CACHE_TYPES = re.compile(r"(torch::Tensor|at::Tensor|Tensor\b|std::(unordered_)?map|std::vector|void\s*\*|"
                         r"float\s*\*|half\s*\*|std::pair|std::tuple|const\s+void\s*\*|uintptr_t|intptr_t|"
                         r"std::optional<.*Tensor)")


TENSOR = re.compile(r"(torch::Tensor|at::Tensor|\bTensor\b|float\s*\*|half\s*\*|__half\s*\*|__nv_bfloat16\s*\*)")
LAUNCH = re.compile(r"<<<|cudaGraphLaunch|cudaLaunchKernel|cuLaunchKernel|cudaLaunchCooperativeKernel")


def _declared_name(head: str) -> str | None:
    m = re.search(r"([A-Za-z_]\w*)\s*(\[[^\]]*\])?\s*;?\s*$", head.strip().rstrip(";").split("{")[0])
    return m.group(1) if m else None


def _returns_on_hit(facts, name: str) -> bool:
    """Whether some `if` whose condition reads the static returns, in its taken branch, before
    any launch there: the hit path of a cache."""
    word = re.compile(rf"\b{re.escape(name)}\b")
    for node, cond, fn in facts.ifs:
        if not word.search(text(cond)):
            continue
        body = node.child_by_field_name("consequence")
        src = facts.code_of(body) if body is not None else ""
        r = src.find("return")
        if r >= 0 and not LAUNCH.search(src[:r]):
            return True
    return False


class StaticCacheInExtension(Rule):
    """The extension keeps tensors, pointers or maps in static storage across calls.

    What it flags
        `static` locals in host functions and namespace-level variables of tensor, pointer,
        container or pointer-sized integer type that host functions write.

    Why it is a hack
        Static storage in C++ is invisible from Python: a result computed on the first call
        can be returned again, keyed on a pointer or a shape, without any Python state.

    Example
        static torch::Tensor cached;
        static const void* last = nullptr;
        if (x.data_ptr() == last) return cached;

    Legitimate look-alike
        A static `cublasHandle_t`, a static `bool initialised`, constant lookup tables
        (`static const float coeffs[]`, `__constant__` memory). A static that holds no tensor
        or data pointer (launch plans, graph executables, handles) where no branch on it returns
        before launching is reported at low severity.

    Dynamic confirmation
        Fresh-call consistency: same pointer refilled in place, new values every call.

    Known gaps
        Caches hidden in singletons behind function calls, or in `thread_local` storage with
        an unusual type, are not recognised.
    """

    id = "static-cache-in-extension"
    hack_type = "result-caching"
    severity = "high"
    confidence = "medium"
    summary = "the extension keeps tensors or pointers in static storage"
    languages = ("cuda",)
    needs = ("cuda",)
    probes = ("fresh-call-consistency",)

    def check(self, ctx):
        for u in ctx.facts.cuda:
            for node, fn in u.facts.statics:
                t = text(node)
                if "const " in t.split("=")[0] and "*" not in t.split("=")[0]:
                    continue
                if "cublasHandle_t" in t or "cudnnHandle_t" in t or "__constant__" in t:
                    continue
                head = t.split("=")[0]
                if CACHE_TYPES.search(head):
                    name = _declared_name(head)
                    if not TENSOR.search(head) and name and not _returns_on_hit(u.facts, name):
                        # plans, handles or pointers to them, read on a path that always goes on to
                        # launch: a result kept here would need a return that skips the kernels
                        ctx.report(node, f"static storage `{head.strip()[:60]}` survives across calls; no "
                                   f"branch on {name} returns without launching", unit=u, severity="low",
                                   confidence="low")
                        continue
                    ctx.report(node, f"static storage `{head.strip()[:60]}` survives across calls", unit=u)
            for node in u.facts.tree.root_node.named_children:
                if node.type == "declaration":
                    t = text(node)
                    head = t.split("=")[0]
                    if "const" in head or "__constant__" in head or "extern" in head or "(" in head or "static" in head:
                        continue
                    if re.search(r"(torch::Tensor|at::Tensor|std::(unordered_)?map)", head):
                        ctx.report(node, f"global `{head.strip()[:60]}` can carry results across calls", unit=u)
