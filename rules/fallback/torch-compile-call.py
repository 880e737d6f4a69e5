from hackscan.rule import Rule

COMPILERS = ("torch.compile", "torch.jit.script", "torch.jit.trace", "torch._dynamo.optimize",
             "torch.jit.freeze", "torch.fx.symbolic_trace", "torch._inductor.compile",
             "torch.cuda.make_graphed_callables", "torch.export.export")


def _is_compiler(name: str) -> bool:
    return any(name == c or name.startswith(c + ".") for c in COMPILERS)


class TorchCompileCall(Rule):
    """forward's work is handed to PyTorch's compiler instead of a hand-written kernel.

    What it flags
        Calls to `torch.compile`, `torch.jit.script`/`trace`, `torch._dynamo.optimize`,
        `torch._inductor` or `make_graphed_callables` anywhere in the candidate, and the
        `@torch.compile` decorator.

    Why it is a hack
        The generated kernels are Inductor's, not the candidate's: the benchmark measures
        PyTorch's compiler. Under a custom-kernel policy it is a contract violation.

    Example
        self.fn = torch.compile(lambda x: torch.softmax(x, -1))

    Legitimate look-alike
        Scripting or compiling a wrapper around a hand-written kernel changes no work
        attribution; the finding says so at medium severity and the profiler decides.

    Dynamic confirmation
        Launched-kernel attribution: Triton kernels named `triton_` by Inductor, not the
        candidate's own kernels.

    Known gaps
        Compilers reached through `importlib` or a string-built attribute are reported by the
        obfuscation rules instead.
    """

    id = "torch-compile-call"
    hack_type = "torch-fallback"
    severity = "medium"
    confidence = "high"
    summary = "the work is handed to torch.compile / TorchScript"
    needs = ("python",)
    probes = ("kernel-attribution",)

    def check(self, ctx):
        py = ctx.py
        for c in py.calls:
            if c.resolved and _is_compiler(c.callee):
                ctx.report(c.node, f"{c.callee} compiles the computation with PyTorch's own compiler")
        for fn in py.funcs:
            for d in fn.decorators:
                if _is_compiler(d):
                    ctx.report(fn.node, f"@{d} on {fn.name}: PyTorch's compiler generates the kernels")
