import re

from hackscan.rule import Rule
from hackscan.parse.trees import text


API_PREFIXES = ("cuda", "cublas", "cudnn", "cusparse", "curand", "cufft", "culaunch", "cugraph", "cumem", "__nv",
                "atomic", "__shfl", "__ldg", "torch", "at_", "c10")


def _defines_local_names(body: str) -> bool:
    """Whether every pasted name the macro builds is a name it defines (followed by a parameter
    list and a body), none of them spelled from an API prefix."""
    body = body.replace("\\\n", " ")
    pasted = [m for m in re.finditer(r"((?:\w+\s*##\s*)+\w+)", body)]
    if not pasted:
        return False
    for m in pasted:
        parts = [p.strip() for p in m.group(1).split("##")]
        if any(p.lower().startswith(API_PREFIXES) for p in parts if p):
            return False
        after = body[m.end():].lstrip()
        if not after.startswith("(") or "{" not in after:
            return False
    return True


class StringBuiltApiName(Rule):
    """An API name is built from strings (`getattr(torch, "mat" + "mul")`) or pasted tokens.

    What it flags
        `getattr` on an imported module or class with a name that is concatenated, formatted,
        or otherwise not a plain literal; plain-literal `getattr` on torch (`getattr(torch,
        "matmul")`) at lower severity; C/C++ macros that paste tokens (`a##b`) into names.

    Why it is a hack
        Building the name hides the call from readers and from tools that match names: a
        `torch.matmul` fallback spelled `getattr(torch, "mat" + "mul")` is the same fallback.
        hackscan resolves constant names for its other rules and reports the spelling here.

    Example
        mm = getattr(torch, "mat" + "mul")

    Legitimate look-alike
        A macro that pastes tokens only into the names of the functions it defines
        (`DEFINE(relu, 4)` making `relu_v4(...) { ... }`), none spelled from an API prefix, is
        reported low.
        `getattr(self, name)` over the module's own attributes, and token pasting in
        well-known dispatch macros (`AT_DISPATCH_*` from PyTorch's headers) are not reported.

    Dynamic confirmation
        Launched-kernel attribution sees the real calls, whatever their spelling.

    Known gaps
        Names computed from data at run time cannot be resolved; the finding says so.
    """

    id = "string-built-api-name"
    hack_type = "obfuscation"
    severity = "medium"
    confidence = "high"
    summary = "an API name is assembled from strings or pasted tokens"
    languages = ("python", "cuda")
    needs = ("python", "cuda")
    probes = ("kernel-attribution",)

    def check(self, ctx):
        f = ctx.facts
        py = f.py
        if py is not None:
            for c in py.calls:
                if c.callee not in ("getattr", "builtins.getattr") or len(c.args) < 2:
                    continue
                target, _ = py.resolve(c.args[0])
                if not target or not py.is_import_rooted(target):
                    continue
                name = c.args[1]
                if name.type == "string" and not any(ch.type == "interpolation" for ch in name.children):
                    ctx.report(c.node, f"getattr({target}, {text(name)}) spells an API name as a string",
                               severity="low")
                else:
                    from hackscan.parse.strings import const_str

                    resolved = const_str(name, py.lookup)
                    ctx.report(c.node, f"getattr on {target} with a built name" +
                               (f" (resolves to {target}.{resolved})" if resolved else " that cannot be resolved"))
        for u in f.cuda:
            for m in u.facts.macros:
                body = u.facts.code_of(m.child_by_field_name("value"))
                if "##" in body and "AT_" not in text(m.child_by_field_name("name")):
                    name = text(m.child_by_field_name("name"))
                    if _defines_local_names(body):
                        # NAME##_f32(...) { ... }: instantiating the file's own functions per type
                        ctx.report(m, f"macro {name} pastes tokens into the names of functions it defines",
                                   unit=u, severity="low", confidence="low")
                        continue
                    ctx.report(m, f"macro {name} pastes tokens into names", unit=u)
