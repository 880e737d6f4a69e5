from hackscan.facts.flow import CUSTOM, HEAVY, COMPUTE, PARAM
from hackscan.rule import Rule


class KernelResultUnused(Rule):
    """A custom kernel runs, but what forward returns does not derive from it.

    What it flags
        forward (or a helper it calls) launches a custom kernel or calls an extension
        function, yet no returned value depends on that call: the result is discarded,
        written to a scratch buffer, or overwritten by a PyTorch computation.

    Why it is a hack
        A ghost kernel: launched so that profilers and readers see custom work, while the
        output comes from PyTorch or from the input itself.

    Example
        def forward(self, x):
            _ = ext.relu(x.clone())        # runs, result dropped
            return torch.relu(x)

    Legitimate look-alike
        A kernel that writes the output buffer in place (`kernel[grid](x, out); return out`)
        counts: the data flow follows writes through launch arguments.

    Dynamic confirmation
        Ghost replay: no-op the kernel; the outputs must change.

    Known gaps
        Kernels that write through a global buffer later read by another kernel are followed
        only when the buffer is passed as an argument.
    """

    id = "kernel-result-unused"
    hack_type = "ghost-kernel"
    severity = "high"
    confidence = "high"
    summary = "a custom kernel runs but the returned value does not derive from it"
    languages = ("python", "triton")
    needs = ("flow",)
    probes = ("ghost-replay", "kernel-attribution")

    def check(self, ctx):
        f = ctx.facts
        if f.forward is None or not f.forward_returns:
            return
        fl = f.flow
        if not any(fl.launches_custom(fn) for fn in f.forward_funcs):
            return
        if any(any(o.kind == CUSTOM for o in origins) for _, origins in f.forward_returns):
            return
        kernel_calls = [c for fn in f.forward_funcs for c in f.py.calls_in(fn) if fl.kind(c) == CUSTOM]
        for value, origins in f.forward_returns:
            src = sorted({o.name for o in origins if o.kind in (HEAVY, COMPUTE, PARAM)})
            ctx.report(value, "the returned value does not derive from any custom kernel"
                       + (f" (it comes from {', '.join(src[:3])})" if src else ""),
                       related=[(c.node, "custom kernel whose result is not returned", None) for c in kernel_calls[:3]])
