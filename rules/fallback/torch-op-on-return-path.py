from hackscan.facts.flow import CUSTOM, HEAVY, COMPUTE
from hackscan.rule import Rule


class TorchOpOnReturnPath(Rule):
    """forward's result is computed by PyTorch and no custom kernel runs at all.

    What it flags
        A candidate whose forward (following local helpers, methods and nn sub-modules) reaches
        no custom kernel (no `load_inline`/`load` extension function, no `@triton.jit` launch)
        while its returned value derives from torch compute: `torch.matmul`, `F.conv2d`,
        `self.linear(x)`, `x @ w`, `torch.ops.aten.*`, under any import alias or `getattr`.

    Why it is a hack
        KernelBench-style benchmarks ask for a custom kernel. Returning PyTorch's own result
        is correct by construction and earns a speedup near 1x (more with CUDA-graph or
        launch tricks) without any kernel work: a contract violation.

    Example
        import torch.nn.functional as G
        class ModelNew(nn.Module):
            def forward(self, x, w):
                return G.linear(x, w)

    Legitimate look-alike
        Glue around a custom kernel (`view`, `contiguous`, `pad`, allocation with
        `torch.empty`) is not compute; a forward that reaches a custom kernel is judged by
        the partial-fallback and ghost-kernel rules instead.

    Dynamic confirmation
        Launched-kernel attribution with the profiler: all device time in aten/cuBLAS/cuDNN
        kernels, none in custom ones.

    Known gaps
        Compute hidden behind an unresolvable dynamic attribute (`getattr(torch, name)` with
        a run-time name) is reported by the obfuscation rules, not here.
    """

    id = "torch-op-on-return-path"
    hack_type = "torch-fallback"
    severity = "high"
    confidence = "high"
    summary = "forward returns PyTorch's result and runs no custom kernel"
    needs = ("flow", "graph")
    probes = ("kernel-attribution",)
    certain = True

    def check(self, ctx):
        f = ctx.facts
        if f.forward is None:
            return
        fl = f.flow
        if any(fl.launches_custom(fn) for fn in f.forward_funcs):
            return
        for value, origins in f.forward_returns:
            torch_ops = sorted({o.name for o in origins if o.kind in (HEAVY, COMPUTE)})
            if torch_ops and not any(o.kind == CUSTOM for o in origins):
                ctx.report(value, f"forward returns the result of {', '.join(torch_ops[:4])} and "
                           "launches no custom kernel", evidence={"torch_ops": ",".join(torch_ops)},
                           # an extension whose source hackscan could not read (built from
                           # **kwargs, a template filled at run time) may be what runs: not certain
                           certain=not f.has_custom_kernel and not f.py.extensions)
