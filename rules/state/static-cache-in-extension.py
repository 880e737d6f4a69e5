import re

from hackscan.rule import Rule
from hackscan.parse.trees import text

CACHE_TYPES = re.compile(r"(torch::Tensor|at::Tensor|Tensor\b|std::(unordered_)?map|std::vector|void\s*\*|"
                         r"float\s*\*|half\s*\*|std::pair|std::tuple|const\s+void\s*\*|uintptr_t|intptr_t|"
                         r"std::optional<.*Tensor)")


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
        (`static const float coeffs[]`, `__constant__` memory).

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
                if CACHE_TYPES.search(t.split("=")[0]):
                    ctx.report(node, f"static storage `{t.split('=')[0].strip()[:60]}` survives across calls", unit=u)
            for node in u.facts.tree.root_node.named_children:
                if node.type == "declaration":
                    t = text(node)
                    head = t.split("=")[0]
                    if "const" in head or "__constant__" in head or "extern" in head or "(" in head or "static" in head:
                        continue
                    if re.search(r"(torch::Tensor|at::Tensor|std::(unordered_)?map)", head):
                        ctx.report(node, f"global `{head.strip()[:60]}` can carry results across calls", unit=u)
