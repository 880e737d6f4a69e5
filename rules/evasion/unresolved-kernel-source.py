from hackscan.rule import Rule


class UnresolvedKernelSource(Rule):
    """The C++/CUDA source given to load_inline/load cannot be resolved statically.

    What it flags
        Parts of `cpp_sources`/`cuda_sources` (or `load(sources=...)` paths) that are built at
        run time: names not bound to constant strings, calls, `.format` or `%` formatting,
        f-string parts that are not constants, files that cannot be read.

    Why it is a hack
        Source assembled at run time hides the kernel from review and from hackscan's C++
        rules; analysis of what cannot be read must not end in silence.

    Example
        src = open(os.path.join(tmp, "k.cu")).read()
        ext = load_inline(name="k", cpp_sources="", cuda_sources=src)

    Legitimate look-alike
        Sources from literals, concatenations, constant f-strings and names bound to
        constants are resolved and not reported; templated sources with constant
        substitutions are resolved too.

    Dynamic confirmation
        Launched-kernel attribution and every dynamic probe apply regardless of the source.

    Known gaps
        Only the resolved part is analysed; a hack entirely in the unresolved part is found
        only by the dynamic layer.
    """

    id = "unresolved-kernel-source"
    hack_type = "obfuscation"
    severity = "low"
    confidence = "high"
    summary = "kernel source built at run time could not be analysed"
    languages = ("python",)
    needs = ("python",)
    probes = ("kernel-attribution",)

    def check(self, ctx):
        seen = set()
        for ext in ctx.py.extensions:
            for node, reason, arg in ext.unresolved:
                key = (node.start_byte, reason)
                if key in seen:
                    continue
                seen.add(key)
                ctx.report(arg, f"kernel source built at run time: {reason}",
                           related=[(node, "not a constant", None)] if node != arg else None)
            if ext.files and ctx.facts.base_dir is not None:
                for rel in ext.files:
                    if not (ctx.facts.base_dir / rel).is_file():
                        ctx.report(ext.call.node, f"kernel source file {rel} is not next to the candidate")
