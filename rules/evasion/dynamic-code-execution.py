from hackscan.rule import Rule
from hackscan.parse.trees import text, walk

EXEC = ("exec", "eval", "compile", "builtins.exec", "builtins.eval", "builtins.compile", "__import__",
        "builtins.__import__")
DECODERS = ("base64.", "zlib.decompress", "lzma.decompress", "bz2.decompress", "gzip.decompress",
            "marshal.loads", "pickle.loads", "codecs.decode", "binascii.", "dill.loads", "cloudpickle.loads",
            "types.CodeType", "types.FunctionType")


class DynamicCodeExecution(Rule):
    """The candidate executes code it builds or decodes at run time.

    What it flags
        `exec`, `eval`, `compile`, `__import__`, `importlib.import_module` with a computed
        name, and decoders that usually carry a payload (`base64`, `zlib`, `marshal`,
        `pickle.loads`, `codecs.decode`, `types.CodeType`).

    Why it is a hack
        Hidden code cannot be read by a reviewer or a static analyser: encoded payloads are
        how other hacks are smuggled past both.

    Certain (hacked without a run) where what is executed is decoded on the way (`exec` of a
    `base64`/`zlib`/`marshal`/`codecs` decode, directly or through a name bound to one): code
    encoded so that no reader sees it.

    Example
        exec(zlib.decompress(base64.b64decode(PAYLOAD)))

    Legitimate look-alike
        `importlib.import_module("triton")` with a constant name is not reported; string
        kernels passed to `load_inline` are source, not executed Python. `exec` of a source
        built from a readable template (specialising a kernel) is reported, never certain.

    Dynamic confirmation
        Dynamic probes are unaffected by obfuscation: all of them apply (`--dynamic all`).

    Known gaps
        Execution through `ctypes` or a C extension's `PyRun_String` is not seen.
    """

    id = "dynamic-code-execution"
    hack_type = "obfuscation"
    severity = "high"
    confidence = "high"
    summary = "code is built or decoded and executed at run time"
    needs = ("python",)
    probes = ("all-probes",)

    def check(self, ctx):
        py = ctx.py
        for c in py.calls:
            name = c.callee
            if name in EXEC:
                if c.args and self._decoded(ctx, c.args[0]):
                    ctx.report(c.node, f"{name}(...) executes a payload decoded at run time: code no reader sees",
                               certain=True)
                else:
                    ctx.report(c.node, f"{name}(...) executes code that is not in the file")
            elif c.resolved and name.startswith(DECODERS):
                ctx.report(c.node, f"{name} decodes a payload", severity="medium")
            elif name in ("importlib.import_module", "importlib.__import__") and c.args and \
                    c.args[0].type != "string":
                ctx.report(c.node, f"imports a module whose name is computed: {text(c.args[0])[:40]}")

    @staticmethod
    def _decoded(ctx, arg, depth: int = 0) -> bool:
        """Whether an executed argument is decoded on the way: a decoder call inside it, or a name
        in it bound to an expression that holds one."""
        py = ctx.py
        for n in walk(arg):
            if n.type == "call":
                c = next((c for c in py.calls if c.node == n), None)
                if c is not None and c.resolved and c.callee.startswith(DECODERS):
                    return True
            elif n.type == "identifier" and depth < 2:
                bound = py.lookup(text(n), arg)
                if bound is not None and DynamicCodeExecution._decoded(ctx, bound, depth + 1):
                    return True
        return False
