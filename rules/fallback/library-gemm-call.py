from hackscan.rule import Rule

LIB_PREFIXES = ("cublas", "cublasLt", "cudnn", "cutlass::gemm", "cublasLtMatmul")


class LibraryGemmCall(Rule):
    """The extension calls cuBLAS or cuDNN.

    What it flags
        Calls to `cublas*` and `cudnn*` functions in the host C++ of an extension. Severity is
        low when the same function also launches a custom kernel (one library GEMM inside a
        fused chain) and medium when the library call is all the function does.

    Why it is a hack
        A cuBLAS/cuDNN call is vendor library work. When it is the whole operation, the
        "custom kernel" is PyTorch's backend under another name.

    Example
        cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, n, a, k, &zero, c, n);
        return c;   // no kernel of our own

    Legitimate look-alike
        One GEMM through cuBLAS followed by a custom fused epilogue kernel is reported (low),
        not condemned.

    Dynamic confirmation
        Launched-kernel attribution: device time in cuBLAS/cuDNN kernels versus the custom
        ones.

    Known gaps
        CUTLASS templates instantiate their own kernels and are only recognised by name.
    """

    id = "library-gemm-call"
    hack_type = "partial-fallback"
    severity = "low"
    confidence = "high"
    summary = "the extension calls cuBLAS/cuDNN"
    languages = ("cuda",)
    needs = ("cuda", "cflow")
    probes = ("kernel-attribution",)

    def check(self, ctx):
        f = ctx.facts
        for u in f.cuda:
            for c in u.facts.calls:
                name = c.callee
                if not name.startswith(LIB_PREFIXES) or name.endswith(("Create", "Destroy", "SetStream",
                                                                        "GetStream", "SetMathMode")):
                    continue
                if "Create" in name or "Destroy" in name or "Descriptor" in name or "GetErrorString" in name:
                    continue
                alone = c.func is not None and not f.cflow.launches(c.func.name)
                ctx.report(c.node, f"{name} runs a vendor library kernel" +
                           (" and this function launches no kernel of its own" if alone else
                            " inside a function that also launches custom kernels"),
                           unit=u, severity="medium" if alone else "low")
