from hackscan.rule import Rule

# the allocator's statistics a harness reads for peak memory, and the calls that reset them
RESETS = ("torch.cuda.reset_peak_memory_stats", "torch.cuda.memory.reset_peak_memory_stats",
          "torch.cuda.reset_max_memory_allocated", "torch.cuda.memory.reset_max_memory_allocated",
          "torch.cuda.reset_max_memory_cached", "torch.cuda.memory.reset_max_memory_cached",
          "torch.cuda.reset_accumulated_memory_stats", "torch.cuda.memory.reset_accumulated_memory_stats",
          "torch._C._cuda_resetPeakMemoryStats", "torch._C._cuda_resetAccumulatedMemoryStats")
CPP_RESETS = ("resetPeakStats", "resetAccumulatedStats")


class PeakMemoryReset(Rule):
    """forward resets the CUDA allocator's peak-memory statistics.

    What it flags
        A call of `torch.cuda.reset_peak_memory_stats` (or `reset_max_memory_allocated`,
        `reset_accumulated_memory_stats`, their `torch.cuda.memory` and `torch._C` spellings) in
        forward or a function forward reaches; in C++, the caching allocator's `resetPeakStats`
        or `resetAccumulatedStats`.

    Why it is a hack
        A harness measures a kernel's memory as `torch.cuda.max_memory_allocated()` after one
        call, against a reset made before it. A reset inside forward, after the workspace is
        freed, erases the peak: the candidate reports the memory of its output alone. The
        published re-evaluation found 28% of one model's correct kernels using more memory than
        PyTorch; this hides exactly that.

    Example
        def forward(self, x):
            work = torch.empty(64 * x.numel(), device=x.device)
            launch(x, work)
            del work
            torch.cuda.reset_peak_memory_stats()
            return out

    Legitimate look-alike
        A reset in `__init__`, at import or in a benchmarking helper that forward never calls
        (outside the measured call it changes nothing the harness reads).

    Dynamic confirmation
        None yet: the reset is certain from the code, and the measurement's own memory
        reading (NVML's per-process count beside the allocator's) is the cross-check.

    Known gaps
        A reset reached through `getattr` with a built name is obfuscation's to flag; a reset
        from a thread the candidate starts is not followed.
    """

    id = "peak-memory-reset"
    hack_type = "global-state-tampering"
    severity = "high"
    confidence = "high"
    summary = "forward resets the allocator's peak-memory statistics a harness reads"
    languages = ("python", "cuda")
    needs = ("python", "cuda")
    probes = ()
    certain = True

    def check(self, ctx):
        f = ctx.facts
        if f.py is not None and f.forward is not None:
            for fn in f.forward_funcs:
                for c in f.py.calls_in(fn):
                    if c.resolved and c.callee in RESETS:
                        ctx.report(c.node, f"{c.callee} inside forward erases the peak memory a harness reads "
                                           "after the call")
        for u in f.cuda:
            for c in u.facts.calls:
                if c.callee.split("::")[-1].lstrip(".") in CPP_RESETS:
                    ctx.report(c.node, f"{c.callee} resets the caching allocator's statistics", unit=u)
