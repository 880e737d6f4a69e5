from hackscan.facts.flow import CUSTOM, HEAVY, COMPUTE
from hackscan.rule import Rule


class AtenComputeInExtension(Rule):
    """The extension's host C++ returns an ATen/torch result instead of a kernel's.

    What it flags
        A host function of a C++/CUDA extension (embedded in `load_inline` or a raw file with
        a `PYBIND11_MODULE`) whose returned tensor derives from `at::`/`torch::` compute
        (`at::matmul`, `torch::conv2d`, `x.mm(w)`, `torch::nn::functional::...`) rather than
        from a kernel it launches.

    Why it is a hack
        Calling ATen from C++ is PyTorch doing the work, laundered through an extension so
        that a reading of the Python side sees a custom call.

    Example
        torch::Tensor forward(torch::Tensor a, torch::Tensor b) {
            return at::matmul(a, b);      // no kernel launched
        }

    Legitimate look-alike
        ATen used for allocation (`torch::empty_like`), views and layout glue, or an extension
        whose returned tensor is written by its own kernel. A light ATen epilogue (not a GEMM or
        convolution: the final `mean` of a loss, a scale) over the result of the function's own
        kernel is reported at low severity only. cuBLAS/ATen for one GEMM inside a
        fused chain of custom kernels is reported at low severity by library-gemm-call.

    Dynamic confirmation
        Launched-kernel attribution: the device time belongs to aten/cuBLAS/cuDNN kernels.

    Known gaps
        ATen calls through helper templates or macros the grammar cannot resolve, and
        libtorch calls reached through function pointers.
    """

    id = "aten-compute-in-extension"
    hack_type = "torch-fallback"
    severity = "high"
    confidence = "high"
    summary = "an extension function returns ATen/torch compute instead of a kernel result"
    languages = ("cuda",)
    needs = ("cuda", "cflow")
    probes = ("kernel-attribution",)

    def check(self, ctx):
        f = ctx.facts
        cf = f.cflow
        exported = set(f.ext_functions)
        for u in f.cuda:
            exported |= set(u.facts.bindings.values())
        for name, (unit_facts, fn) in cf.funcs.items():
            if exported and name not in exported:
                continue
            unit = f.unit_of(unit_facts)
            origins = cf.summary(name)
            aten = [o for o in origins if o.kind in (HEAVY, COMPUTE)]
            if not aten:
                continue
            launches = cf.launches(name)
            has_custom = any(o.kind == CUSTOM for o in origins)
            for o in sorted(aten, key=lambda o: o.node.start_byte):
                if has_custom and o.kind != HEAVY:
                    # a light epilogue (the final mean of a loss, a scale) over the kernel's output
                    sev, msg = "low", f"{name} finishes its kernel's result with {o.name} (a light epilogue in ATen)"
                elif has_custom:
                    sev, msg = "medium", f"{name} returns a value that also passes through {o.name}"
                else:
                    sev, msg = "high", f"{name} returns the result of {o.name}" + (
                        "" if launches else " and launches no kernel")
                ctx.report(o.node, msg, unit=unit, severity=sev, certain=not launches and not has_custom,
                           evidence={"function": name, "call": o.name})
