import re

from hackscan.rule import Rule
from hackscan.parse.trees import text, walk

HALVING = re.compile(r"(/\s*[248]\b|>>\s*[123]\b|\*\s*0\.5\b)")
CEIL = re.compile(r"(\+|ceil|cdiv|div_up|DIV_UP|CEIL|round_up|ROUND_UP|ceildiv)")
# CUDA's vector types: a loop over `n / 4` float4s covers n floats
VEC = r"(?:float|double|int|uint|short|ushort|char|uchar|long|ulong|half|__half|__nv_bfloat16|nv_bfloat16|bfloat16)"
VEC_TYPE = re.compile(VEC + r"([248])\b")
VEC_PTR = re.compile(VEC + r"[248]\s*\*\s*(?:const\s+)?(?:__restrict__\s+)?(\w+)")
NARROW = re.compile(r"\b(half|__half|__nv_bfloat16|nv_bfloat16|bfloat16|short|at::Half|at::BFloat16|c10::Half)\b")
# a size halved in a grid (`height / 2`, `w >> 1`) and the allocations whose shape may hold it
HALVED_TERM = re.compile(r"[A-Za-z_][\w.]*(?:\(\d*\))?\s*(?:/\s*[248]\b|>>\s*[123]\b)")
ALLOC = re.compile(r"\b(?:empty|zeros|ones|full|empty_strided)\b")
# the construct acts only inside the candidate's own kernels (hackscan.dynamic.audit)
OWN_KERNELS = {"acts_in": "own-kernels"}
DIVISOR = re.compile(r"(?:/\s*([248])\b|>>\s*([123])\b)")


class PartialGridCoverage(Rule):
    """The launch or the kernel's bounds cover only part of the output.

    What it flags
        A grid computed with floor division (`n / 256`, `n // BLOCK`) with no rounding up and
        no grid-stride loop in the kernel; bounds that halve the problem (`i < n / 2`,
        `n >> 1`, `triton.cdiv(n // 2, BLOCK)`) in the grid, a kernel condition or a loop.
        A divisor that is the width of the vector type the kernel reads through (`n / 4` in a
        kernel that loads `float4`s, `n / 2` with `half2`, `n / 8` with 16-byte loads of
        2-byte elements) counts vectors, not elements: not flagged.

    Why it is a hack
        The unwritten tail or half keeps whatever the buffer held (zeros or a stale answer);
        tests with sizes that are multiples of the tile, or that only sample the beginning of
        the output, pass anyway.

    Example
        grid = (n // BLOCK,)                 # the last partial block is never launched
        kernel[grid](x, out, n, BLOCK=1024)

    Legitimate look-alike
        `(n + 255) / 256`, `triton.cdiv(n, BLOCK)`, grid-stride loops over `gridDim.x`,
        floor division where the host checks divisibility (`TORCH_CHECK(n % 256 == 0)`), and
        vectorised loops (`for (i = t; i < n / 4; ...) { float4 v = x4[i]; ... }`): a size that
        is not a multiple of the vector width is other-shapes' question. A grid over a pooled or
        strided output (`(n * c * (h / 2) * (w / 2) + 255) / 256` where the launching function
        allocates `torch::zeros({n, c, h / 2, w / 2})`) counts that output's elements.

    Dynamic confirmation
        Sentinel-filled outputs compared element by element, sizes that are not a multiple of
        the tile.

    Known gaps
        Coverage computed through helper functions, or tiles that skip elements by a wrong
        stride, are not analysed.
    """

    id = "partial-grid-coverage"
    hack_type = "partial-computation"
    severity = "medium"
    confidence = "medium"
    summary = "grid or loop bounds cover only part of the output"
    languages = ("python", "cuda", "triton")
    needs = ("cuda", "python")
    probes = ("sentinel-output", "other-shapes")

    def check(self, ctx):
        f = ctx.facts
        for u in f.cuda:
            uf = u.facts
            for l in uf.launches:
                if not l.config:
                    continue
                g = text(l.config[0])
                k = uf.kernels.get(l.kernel)
                grid_defs = self._grid_text(uf, l, g)
                stride_loop = k is not None and any(fn is k and "gridDim" in text(n) for n, fn in uf.loops)
                vector = k is not None and self._vector_units(uf.code_of(k.node), grid_defs)
                if HALVING.search(grid_defs) and "/" in grid_defs and not stride_loop and "sizeof" not in grid_defs \
                        and not vector and not self._halved_like_output(uf, l.func, grid_defs):
                    ctx.report(l.config[0], f"grid `{grid_defs[:60]}` launches blocks for only part of the problem",
                               unit=u, severity="high", evidence=OWN_KERNELS)
                elif "/" in grid_defs and not CEIL.search(grid_defs) and not stride_loop and \
                        not self._divisible_check(uf, l.func):
                    ctx.report(l.config[0], f"grid `{grid_defs[:60]}` rounds down: the last partial block "
                               "is never launched", unit=u, evidence=OWN_KERNELS)
            for node, cond, fn in uf.ifs:
                if fn is not None and fn.kind == "global" and HALVING.search(text(cond)) and \
                        not self._vector_units(uf.code_of(fn.node), text(cond), text(node)) and any(text(n) in {p.name for p in fn.params} for n in walk(cond) if n.type == "identifier"):
                    ctx.report(cond, f"kernel {fn.name} only works where `{text(cond)[:60]}`", unit=u, severity="high", evidence=OWN_KERNELS)
            for node, fn in uf.loops:
                c = node.child_by_field_name("condition")
                if fn is not None and fn.kind == "global" and c is not None and HALVING.search(text(c)) and \
                        not self._vector_units(uf.code_of(fn.node), text(c), text(node)) and any(text(n) in {p.name for p in fn.params} for n in walk(c) if n.type == "identifier"):
                    ctx.report(c, f"kernel {fn.name} loops only while `{text(c)[:60]}`", unit=u, severity="high", evidence=OWN_KERNELS)
        if f.py is not None:
            for name, call in f.py.triton_launches:
                fn = call.node.child_by_field_name("function")
                grid = fn.child_by_field_name("subscript") if fn is not None else None
                if grid is None:
                    continue
                g = self._py_grid_text(f, grid)
                if "cdiv" in g and HALVING.search(g.replace("//", "/")):
                    ctx.report(grid, f"grid `{g[:60]}` covers only part of the problem", severity="high", evidence=OWN_KERNELS)
                elif "//" in g and "cdiv" not in g and "+" not in g and not self._exact_tiling(f, grid, g):
                    ctx.report(grid, f"grid `{g[:60]}` rounds down: the last partial block is never launched", evidence=OWN_KERNELS)

    @staticmethod
    def _vector_units(kernel: str, bound: str, body: str | None = None) -> bool:
        """Every halving divisor in `bound` is the width of a vector type the kernel reads
        through (in `body`, where given: the loop or branch itself must touch the vectors):
        the bound counts vectors, and the elements it covers are all of them."""
        divisors = [int(a) if a else 1 << int(b) for a, b in DIVISOR.findall(bound)]
        if not divisors:
            return False
        widths = {int(w) for w in VEC_TYPE.findall(kernel)}
        if 4 in widths and NARROW.search(kernel):
            widths.add(8)   # 16 bytes of 2-byte elements through int4/uint4/float4
        if not all(d in widths for d in divisors):
            return False
        if body is None:
            return True
        names = set(VEC_PTR.findall(kernel))
        return bool(VEC_TYPE.search(body)) or any(re.search(rf"\b{re.escape(n)}\s*\[", body) for n in names)

    @staticmethod
    def _halved_like_output(uf, fn, grid: str) -> bool:
        """Every halved size of the grid (`height / 2`) is a size of a tensor the launching
        function allocates (`torch::zeros({n, c, height / 2, width / 2})`): the grid counts the
        elements of a pooled or strided output, all of them."""
        halved = {re.sub(r"\s+", "", m.group(0)) for m in HALVED_TERM.finditer(grid)}
        if not halved or fn is None:
            return False
        shapes = "".join(re.sub(r"\s+", "", text(c.node)) for c in uf.calls
                         if c.func is fn and ALLOC.search(c.callee or ""))
        return all(h in shapes for h in halved)

    @staticmethod
    def _grid_text(uf, launch, g):
        for name, val, fn in uf.decls:
            if fn is launch.func and name == g.strip() and val is not None:
                return text(val)
        return g

    @staticmethod
    def _divisible_check(uf, fn):
        return any(c.func is fn and "%" in text(c.node) and ("CHECK" in c.callee or "assert" in c.callee)
                   for c in uf.calls)

    @staticmethod
    def _exact_tiling(f, grid, g) -> bool:
        """Every `A // B` of the grid divides exactly: B an integer (a literal, or a name bound to
        one) and A a dimension the reference fixes (a module constant of the same name) that B
        divides, or a divisibility assert on A and B in the launching function. A tile that
        divides the graded sizes covers them; other sizes are other-shapes' question."""
        pairs = re.findall(r"([A-Za-z_][\w.]*|\d+)\s*//\s*([A-Za-z_][\w.]*|\d+)", g)
        if not pairs:
            return False
        fn = f.py.func_at(grid)
        checks = []   # divisibility checks in the launching function: calls and asserts with a `%`
        if fn is not None:
            checks = [text(c.node) for c in f.py.calls if c.func is fn and "%" in text(c.node)]
            checks += [text(n) for n in walk(fn.node) if n.type == "assert_statement" and "%" in text(n)]
        consts = f.reference.constants if f.reference is not None else {}

        def integer(name):
            if name.isdigit():
                return int(name)
            v = f.py.lookup(name.split(".")[-1], grid) if "." not in name else None
            if v is not None and v.type == "integer":
                return int(text(v), 0)
            c = consts.get(name.split(".")[-1])
            return int(c) if isinstance(c, (int, float)) and float(c).is_integer() else None

        for num, den in pairs:
            d = integer(den)
            if not d:
                return False
            n = consts.get(num.split(".")[-1])
            if isinstance(n, (int, float)) and float(n).is_integer() and int(n) % d == 0:
                continue
            if any(num.split(".")[-1] in c and den.split(".")[-1] in c for c in checks):
                continue
            return False
        return True

    @staticmethod
    def _py_grid_text(f, grid):
        g = text(grid)
        if grid.type == "identifier":
            b = f.py.lookup(g, grid)
            if b is not None:
                return text(b)
        return g
