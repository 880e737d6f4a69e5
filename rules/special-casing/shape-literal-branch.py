from hackscan.rule import Rule
from hackscan.ruletools import (block_calls_kinds, branch_blocks, condition_tags, iter_forward_branches,
                                raises_only, returns_in)
from hackscan.parse.trees import text, walk


def _ints(node):
    """Integer literals a condition tests for equality: a direct operand of ==, !=, `in`, `not in`
    (or an element of the tuple tested with `in`). A bound (`n < 16`), a relation between sizes
    (`k.shape[3] != 2 * d`) and an index into a shape (`x.shape[1]`) are not exact sizes."""
    for n in walk(node):
        if n.type == "comparison_operator":
            ops = {text(ch) for ch in n.children if not ch.is_named}
            if not ops & {"==", "!=", "in", "not in", "not", "<>"}:
                continue
            for operand in n.named_children:
                yield from _literal_ints(operand)
        elif n.type == "binary_expression":
            op = n.child_by_field_name("operator")
            if op is not None and text(op) in ("==", "!="):
                for operand in (n.child_by_field_name("left"), n.child_by_field_name("right")):
                    if operand is not None:
                        yield from _literal_ints(operand)


def _literal_ints(n):
    if n.type in ("parenthesized_expression", "tuple", "list", "set", "parenthesized_expression"):
        for k in n.named_children:
            yield from _literal_ints(k)
        return
    if n.type in ("binary_operator", "binary_expression") and len(text(n)) <= 40 and _all_literal(n):
        # a size written as a product of literals (`32 * 4096`): its value and its factors
        value = _value(n)
        if value is not None:
            yield value
        for k in n.named_children:
            yield from _literal_ints(k)
        return
    if n.type in ("integer", "number_literal"):
        value = _value(n)
        if value is not None:
            yield value


def _value(n) -> int | None:
    """The integer a product of literals stands for, read off the tree (the audited text is never
    evaluated); None where it is not one (a division by zero). `/` is read as `//`."""
    if n.type in ("integer", "number_literal"):
        try:
            return int(text(n).rstrip("uUlL"), 0)
        except ValueError:
            return None
    kids = [k for k in n.named_children if k.type != "comment"]
    if n.type == "parenthesized_expression":
        return _value(kids[0]) if len(kids) == 1 else None
    if len(kids) != 2:
        return None
    a, b = _value(kids[0]), _value(kids[1])
    ops = [text(c) for c in n.children if not c.is_named and text(c) not in ("(", ")")]
    if a is None or b is None or len(ops) != 1:
        return None
    op = ops[0]
    if op == "*":
        return a * b
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op in ("/", "//") and b != 0:
        return a // b
    return None


def _all_literal(n) -> bool:
    if n.type in ("integer", "number_literal"):
        return True
    if n.type in ("binary_operator", "binary_expression", "parenthesized_expression"):
        kids = [k for k in n.named_children if k.type != "comment"]
        ops = {text(c) for c in n.children if not c.is_named}
        return bool(kids) and ops <= {"*", "+", "-", "(", ")", "//", "/"} and all(_all_literal(k) for k in kids)
    return False


def _only_config(block) -> bool:
    """The block only assigns constants (tuning: BLOCK = 128, num_warps = 8)."""
    if block is None:
        return True
    stmts = [c for c in block.named_children if c.type != "comment"]
    for s in stmts:
        if s.type != "expression_statement":
            return False
        inner = s.named_children[0] if s.named_children else None
        if inner is None or inner.type not in ("assignment",):
            return False
        right = inner.child_by_field_name("right")
        if right is None or any(n.type == "call" for n in walk(right)):
            return False
    return True


class ShapeLiteralBranch(Rule):
    """Branch on an exact tensor size that changes what is computed.

    What it flags
        A comparison of `x.shape[i]`, `x.size(i)`, `x.numel()` or `len(x)` with an integer
        literal (with a reference: a literal equal to one of the reference's dimensions)
        guarding a block that returns early, skips the kernel or computes with PyTorch; in
        Python and in the extension's host C++.

    Why it is a hack
        The benchmark calls the kernel with one shape. A path taken only for that shape can
        be wrong, or skip work, everywhere else while still passing every test.

    Example
        if x.shape[0] == 16 and x.shape[1] == 16384:
            return fast_path_only_right_for_this_shape(x)

    Legitimate look-alike
        Shape-keyed tuning where every path runs a correct kernel (the branch only sets
        `BLOCK`/`num_warps`), `if x.numel() == 0: return x`, rank checks (`x.dim() == 4`) and
        guards that raise on unsupported shapes.

    Dynamic confirmation
        Other shapes the reference accepts (other batch sizes, sizes that are not a multiple
        of the tile): outputs must match; a shape specialisation that raises is reported apart
        from silent wrong answers.

    Known gaps
        Shape tests hidden in a kernel's index arithmetic and sizes compared through
        variables bound far from the branch are not followed.
    """

    id = "shape-literal-branch"
    hack_type = "shape-special-casing"
    severity = "medium"
    confidence = "medium"
    summary = "a branch on an exact tensor size changes what is computed"
    languages = ("python", "cuda")
    needs = ("flow", "cuda")
    probes = ("other-shapes",)

    def check(self, ctx):
        f = ctx.facts
        dims = f.reference.dims if f.reference is not None else set()

        def relevant(values):
            vals = [v for v in values if v > 1]
            if dims:
                hit = [v for v in vals if v in dims]
                return hit, "high" if hit else None
            big = [v for v in vals if v >= 16]
            return big, "low" if big else None

        if f.py is not None and f.forward is not None:
            for b in iter_forward_branches(f):
                tags = condition_tags(f, b.func, b.condition)
                if "shape" not in tags or "literal-int" not in tags:
                    continue
                ctext = text(b.condition)
                if ".dim()" in ctext or ".ndim" in ctext:
                    continue
                lits, conf = relevant(_ints(b.condition))
                if conf is None:
                    continue
                cons, alts = branch_blocks(b.node)
                if raises_only(cons):
                    continue
                if _only_config(cons) and all(_only_config(a.child_by_field_name("body") or a) for a in alts):
                    continue
                early = bool(returns_in(cons)) or b.node.type == "conditional_expression"
                kc = block_calls_kinds(f, cons)
                ka = set().union(*(block_calls_kinds(f, a) for a in alts)) if alts else set()
                if not early and kc == ka:
                    continue
                ctx.report(b.condition, f"branch on exact size {', '.join(map(str, lits))} "
                           f"(`{ctext[:80]}`) changes what is computed", confidence=conf,
                           evidence={"literals": ",".join(map(str, lits)),
                                     "reference_dims": ",".join(map(str, sorted(dims)))})
        for u in f.cuda:
            for node, cond, fn in u.facts.ifs:
                if fn is None or fn.kind != "host":
                    continue
                ctext = text(cond)
                if not any(s in ctext for s in (".size(", ".numel()", ".sizes()", "size(0)", ".shape")):
                    continue
                lits, conf = relevant(_ints(cond))
                if conf is None:
                    continue
                cons = node.child_by_field_name("consequence")
                if cons is None or not any(n.type == "return_statement" for n in walk(cons)):
                    continue
                ctx.report(cond, f"host code returns early for exact size {', '.join(map(str, lits))}",
                           unit=u, confidence=conf, evidence={"condition": ctext[:200]})
