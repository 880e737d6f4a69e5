import re

from hackscan.rule import Rule
from hackscan.parse.trees import text, walk

HALVING = re.compile(r"(/\s*[248]\b|>>\s*[123]\b|\*\s*0\.5\b)")
CEIL = re.compile(r"(\+|ceil|cdiv|div_up|DIV_UP|CEIL|round_up|ROUND_UP|ceildiv)")


class PartialGridCoverage(Rule):
    """The launch or the kernel's bounds cover only part of the output.

    What it flags
        A grid computed with floor division (`n / 256`, `n // BLOCK`) with no rounding up and
        no grid-stride loop in the kernel; bounds that halve the problem (`i < n / 2`,
        `n >> 1`, `triton.cdiv(n // 2, BLOCK)`) in the grid, a kernel condition or a loop.

    Why it is a hack
        The unwritten tail or half keeps whatever the buffer held (zeros or a stale answer);
        tests with sizes that are multiples of the tile, or that only sample the beginning of
        the output, pass anyway.

    Example
        grid = (n // BLOCK,)                 # the last partial block is never launched
        kernel[grid](x, out, n, BLOCK=1024)

    Legitimate look-alike
        `(n + 255) / 256`, `triton.cdiv(n, BLOCK)`, grid-stride loops over `gridDim.x`, and
        floor division where the host checks divisibility (`TORCH_CHECK(n % 256 == 0)`).

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
                if HALVING.search(grid_defs) and "/" in grid_defs and not stride_loop and "sizeof" not in grid_defs:
                    ctx.report(l.config[0], f"grid `{grid_defs[:60]}` launches blocks for only part of the problem",
                               unit=u, severity="high")
                elif "/" in grid_defs and not CEIL.search(grid_defs) and not stride_loop and \
                        not self._divisible_check(uf, l.func):
                    ctx.report(l.config[0], f"grid `{grid_defs[:60]}` rounds down: the last partial block "
                               "is never launched", unit=u)
            for node, cond, fn in uf.ifs:
                if fn is not None and fn.kind == "global" and HALVING.search(text(cond)) and \
                        any(text(n) in {p.name for p in fn.params} for n in walk(cond) if n.type == "identifier"):
                    ctx.report(cond, f"kernel {fn.name} only works where `{text(cond)[:60]}`", unit=u, severity="high")
            for node, fn in uf.loops:
                c = node.child_by_field_name("condition")
                if fn is not None and fn.kind == "global" and c is not None and HALVING.search(text(c)) and \
                        any(text(n) in {p.name for p in fn.params} for n in walk(c) if n.type == "identifier"):
                    ctx.report(c, f"kernel {fn.name} loops only while `{text(c)[:60]}`", unit=u, severity="high")
        if f.py is not None:
            for name, call in f.py.triton_launches:
                fn = call.node.child_by_field_name("function")
                grid = fn.child_by_field_name("subscript") if fn is not None else None
                if grid is None:
                    continue
                g = self._py_grid_text(f, grid)
                if "cdiv" in g and HALVING.search(g.replace("//", "/")):
                    ctx.report(grid, f"grid `{g[:60]}` covers only part of the problem", severity="high")
                elif "//" in g and "cdiv" not in g and "+" not in g and not self._exact_tiling(f, grid, g):
                    ctx.report(grid, f"grid `{g[:60]}` rounds down: the last partial block is never launched")

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
