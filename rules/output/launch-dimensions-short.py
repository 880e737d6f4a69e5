import re

from hackscan.parse.trees import text
from hackscan.rule import Rule

AXES = ("y", "z")


class LaunchDimensionsShort(Rule):
    """A kernel indexes along a launch dimension that its launch does not have.

    What it flags
        A CUDA kernel that reads `blockIdx.y` (or `.z`) launched with a one-dimensional grid, or
        `threadIdx.y` (`.z`) with a one-dimensional block (a plain integer, not a `dim3` with that
        axis), where no loop in the kernel strides by `gridDim.y` / `blockDim.y`; a Triton kernel
        that reads `tl.program_id(1)` (or 2) launched with a grid of fewer axes.

    Why it is a hack
        The missing axis is always 0: only the first row (or plane) of the output is computed.
        The rest keeps whatever the buffer held, which for a zero-filled or recycled output can
        pass a check that samples the beginning, or a test whose second dimension is 1.

    Example
        int row = blockIdx.y;  int col = blockIdx.x * blockDim.x + threadIdx.x;
        kernel<<<(cols + 255) / 256, 256>>>(...)      # blockIdx.y is 0: row 0 only

    Legitimate look-alike
        `dim3 grid(nx, ny)` launches; kernels that loop over the second axis with a stride of
        `gridDim.y` (a one-dimensional launch then covers every row); a Triton grid with as many
        axes as the kernel reads.

    Dynamic confirmation
        Sentinel-filled outputs compared element by element (poisoned allocator), other shapes.

    Known gaps
        Launch configurations built in helpers or passed in from Python are not followed (no
        finding).
    """

    id = "launch-dimensions-short"
    hack_type = "partial-computation"
    severity = "high"
    confidence = "medium"
    summary = "a kernel indexes along a launch dimension its launch does not have"
    languages = ("cuda", "triton")
    needs = ("cuda", "python")
    probes = ("poisoned-allocator", "other-shapes")

    def check(self, ctx):
        f = ctx.facts
        for u in f.cuda:
            uf = u.facts
            for l in uf.launches:
                k = uf.kernels.get(l.kernel)
                if k is None or l.func is None or len(l.config) < 2:
                    continue
                body = uf.code_of(k.node)
                host = uf.code_of(l.func.node)
                strides = " ".join(text(n) for n, fn in uf.loops if fn is k)
                for which, cfg in (("blockIdx", l.config[0]), ("threadIdx", l.config[1])):
                    dims = _dims(cfg, host)
                    if dims is None:
                        continue
                    stride = "gridDim" if which == "blockIdx" else "blockDim"
                    for i, ax in enumerate(AXES, start=2):
                        if dims < i and re.search(rf"\b{which}\.{ax}\b", body) and f"{stride}.{ax}" not in strides:
                            ctx.report(cfg, f"{l.kernel} reads {which}.{ax}, but this launch's "
                                       f"{'grid' if which == 'blockIdx' else 'block'} `{text(cfg)[:40]}` has "
                                       f"{dims} dimension{'s' if dims > 1 else ''}: {which}.{ax} is always 0",
                                       unit=u)
                            break
        if f.py is not None:
            for name, call in f.py.triton_launches:
                k = f.py.triton_kernels.get(name.split(".")[-1])
                fn = call.node.child_by_field_name("function")
                grid = fn.child_by_field_name("subscript") if fn is not None else None
                if k is None or grid is None:
                    continue
                if grid.type == "identifier":
                    bound = f.py.lookup(text(grid), grid)
                    grid = bound if bound is not None else grid
                if grid.type not in ("tuple", "list"):
                    continue   # a lambda over META or a helper: not followed
                n = len(grid.named_children)
                used = {int(text(c.args[0])) for c in f.py.calls_in(k)
                        if c.callee.endswith("program_id") and c.args and c.args[0].type == "integer"}
                missing = sorted(a for a in used if a >= n)
                if missing:
                    ctx.report(grid, f"{name} reads tl.program_id({missing[0]}), but its grid `{text(grid)[:40]}` has "
                               f"{n} ax{'es' if n != 1 else 'is'}: program_id({missing[0]}) is always 0")


def _dims(cfg, host: str) -> int | None:
    """How many dimensions a launch configuration has: 1 for a plain integer expression, the
    arguments of a `dim3` (declared in the launching function or built inline); None where
    it cannot be told."""
    t = text(cfg).strip()
    if t.startswith("dim3"):
        return _dim3_args(t, 4)
    if re.fullmatch(r"[A-Za-z_]\w*", t):
        m = re.search(rf"\bdim3\s+{t}\s*(?=[({{])", host)
        if m:
            return _dim3_args(host, m.end())
        if re.search(rf"\bdim3\b[^;]*\b{t}\b", host):
            return None   # dim3 name = ..., a dim3 parameter: not followed
        if re.search(rf"\b(int|long|unsigned|size_t|int64_t|int32_t|const int|auto)\s+{t}\s*=", host):
            return 1
        return None
    if "dim3" in t or "{" in t:
        return None
    return 1


def _dim3_args(src: str, at: int) -> int | None:
    """The number of top-level arguments of the parenthesised or braced list that starts at or
    after `at` in `src` (dim3's constructor)."""
    i = at
    while i < len(src) and src[i] in " \t":
        i += 1
    if i >= len(src) or src[i] not in "({":
        return None
    depth, n, seen = 0, 1, False
    for ch in src[i:]:
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
            if depth == 0:
                return n if seen else None
        elif ch == "," and depth == 1:
            n += 1
        elif not ch.isspace() and depth >= 1:
            seen = True
    return None
