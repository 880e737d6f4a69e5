"""Predicates shared by rules: what a branch condition tests, what a block contains, which
calls sit inside a node. Rules import these instead of re-walking trees their own way."""
from __future__ import annotations

from itertools import takewhile
from typing import Iterator

import tree_sitter as ts

from hackscan.facts import Facts
from hackscan.facts.flow import CUSTOM, HEAVY, PARAM, SELF_ATTR
from hackscan.facts.python import Call, Func
from hackscan.parse.trees import ancestors, text, walk

VALUE_REDUCERS = frozenset("""min max amin amax aminmax all any sum mean item abs sign isnan isinf
isfinite allclose equal count_nonzero nonzero norm std var median le ge lt gt eq ne
tolist any_ all_ numpy""".split())
SHAPE_ATTRS = frozenset("shape size numel dim ndim ndimension nelement".split())
DEVICE_ATTRS = frozenset("is_cuda device is_cpu".split())
DTYPE_ATTRS = frozenset("dtype is_floating_point".split())
LAYOUT_ATTRS = frozenset("is_contiguous stride storage_offset".split())
POINTER_ATTRS = frozenset("data_ptr _version untyped_storage storage _cdata".split())


def inside(inner: ts.Node, outer: ts.Node) -> bool:
    return outer.start_byte <= inner.start_byte and inner.end_byte <= outer.end_byte


def calls_in_node(facts: Facts, node: ts.Node) -> list[Call]:
    return facts.py.calls_within(node) if facts.py is not None else []


def condition_tags(facts: Facts, func: Func | None, cond: ts.Node, depth: int = 0) -> set[str]:
    """What a branch condition tests: value | param-value | shape | device | dtype | layout |
    pointer | state | literal-int | grad. A local the condition names carries the value tests
    of the expression it was bound to in the same function (`small = x.abs().max() < 1` then
    `if small:`), up to three bindings deep."""
    tags: set[str] = set()
    py = facts.py
    for n in walk(cond):
        t = n.type
        if t == "identifier" and depth < 3 and func is not None and py is not None and text(n) not in func.params \
                and not (n.parent is not None and n.parent.type == "call" and n.parent.child_by_field_name("function") == n):
            bound = py.lookup(text(n), cond)
            if bound is not None and py.func_at(bound) is func and bound.start_byte < cond.start_byte \
                    and _predicate_like(bound):
                tags |= condition_tags(facts, func, bound, depth + 1) & {"value", "param-value"}
        if t == "integer":
            tags.add("literal-int")
        if t == "attribute":
            attr = text(n.child_by_field_name("attribute"))
            obj = n.child_by_field_name("object")
            if attr in SHAPE_ATTRS:
                tags.add("shape")
            elif attr in DEVICE_ATTRS:
                tags.add("device")
            elif attr in DTYPE_ATTRS:
                tags.add("dtype")
            elif attr in LAYOUT_ATTRS:
                tags.add("layout")
            elif attr in POINTER_ATTRS:
                tags.add("pointer")
            elif attr in ("requires_grad", "training", "is_grad_enabled"):
                tags.add("grad")
            elif obj is not None and text(obj) == "self" and n.parent is not None and n.parent.type != "call":
                tags.add("state")
        if t == "call":
            fn = n.child_by_field_name("function")
            name = text(fn).rsplit(".", 1)[-1]
            if name in ("id",):
                tags.add("pointer")
            if name == "len":
                tags.add("shape")
            if name in VALUE_REDUCERS and func is not None and py is not None:
                recv = fn.child_by_field_name("object") if fn is not None and fn.type == "attribute" else None
                targets = [recv] if recv is not None and text(recv) not in ("torch", "np", "numpy") else []
                args = n.child_by_field_name("arguments")
                if args is not None:
                    targets.extend(args.named_children)
                for tg in targets:
                    if tg is None or _is_shape_expr(tg):
                        continue
                    origins = facts.flow.origins(func, tg)
                    if any(o.kind == PARAM for o in origins):
                        tags.add("value")
                    elif any(o.kind == SELF_ATTR for o in origins):
                        tags.add("param-value")
        if t == "subscript" and func is not None and py is not None:
            val = n.child_by_field_name("value")
            if val is not None and val.type == "identifier" and text(val) in func.params and text(val) != "self":
                tags.add("value")
    return tags


# a local bound to one of these carries a test of values: a comparison, a boolean, or a
# reduction of values read as such (`bool((x >= 0).all())`, `x.min()`); an integer worked out
# with min/max/arithmetic (a split count, a tile) is a size, whatever it was computed from
_PREDICATE_METHODS = (".all", ".any", ".min", ".max", ".amin", ".amax", ".item", ".sum", ".mean")


def _predicate_like(n: ts.Node) -> bool:
    if n.type in ("comparison_operator", "boolean_operator", "not_operator"):
        return True
    if n.type == "parenthesized_expression" and n.named_children:
        return _predicate_like(n.named_children[0])
    if n.type == "call":
        fn = n.child_by_field_name("function")
        name = text(fn) if fn is not None else ""
        return name in ("bool", "torch.all", "torch.any") or name.endswith(_PREDICATE_METHODS)
    return False


def _is_shape_expr(n: ts.Node) -> bool:
    s = text(n)
    return any(f".{a}" in s for a in SHAPE_ATTRS) or s.startswith("len(")


def branch_blocks(node: ts.Node) -> tuple[ts.Node | None, list[ts.Node]]:
    """(consequence, [alternatives]) of an if/elif/conditional expression."""
    if node.type == "conditional_expression":
        kids = node.named_children
        return (kids[0] if kids else None), (kids[2:3] if len(kids) == 3 else [])
    cons = node.child_by_field_name("consequence") or node.child_by_field_name("body")
    alts = [c for c in node.children if c.type in ("elif_clause", "else_clause")]
    return cons, alts


def returns_in(node: ts.Node | None) -> list[ts.Node]:
    if node is None:
        return []
    if node.type == "return_statement":
        return [node]
    return [n for n in walk(node) if n.type == "return_statement"]


def raises_only(node: ts.Node | None) -> bool:
    """The block only raises (a guard that rejects unsupported input)."""
    if node is None:
        return False
    stmts = [c for c in node.named_children if c.type != "comment"]
    return bool(stmts) and all(s.type in ("raise_statement", "expression_statement") for s in stmts) and \
        any(s.type == "raise_statement" for s in stmts)


def block_calls_kinds(facts: Facts, block: ts.Node | None) -> set[str]:
    if block is None:
        return set()
    fl = facts.flow
    kinds = set()
    for c in calls_in_node(facts, block):
        k = fl.kind(c)
        if k == "local" and fl.launches_custom(fl.local_target(c)):
            k = CUSTOM
        kinds.add(k)
    for n in walk(block):
        if n.type == "binary_operator" and text(n.child_by_field_name("operator")) == "@":
            kinds.add(HEAVY)
    return kinds


def iter_forward_branches(facts: Facts) -> Iterator:
    funcs = {f.qualname for f in facts.forward_funcs}
    for b in facts.py.branches if facts.py is not None else []:
        if b.func is not None and b.func.qualname in funcs:
            yield b


# ---- the hit path: does every call launch or replay on the current inputs? --------------
def _is_capture_block(n: ts.Node) -> bool:
    """`with torch.cuda.graph(g):`: what runs inside is recorded, not run, on this call."""
    if n.type != "with_statement":
        return False
    clause = next((k for k in n.named_children if k.type == "with_clause"), None)
    t = text(clause) if clause is not None else ""
    return ".graph(" in t or t.startswith("graph(") or "stream_capture" in t


def _launching_calls(facts: Facts, func: Func, depth: int = 0) -> list[ts.Node]:
    """Calls in `func` that run custom work when executed: a kernel launch, an extension call, a
    CUDA graph replay, a local function whose every return runs such work; none inside a
    graph-capture block."""
    fl = facts.flow
    out = []
    for c in facts.py.calls_in(func):
        k = fl.kind(c)
        ok = k == CUSTOM or (c.method == "replay" and not c.resolved)
        if not ok and k == "local" and depth < 4:
            t = fl.local_target(c)
            ok = t is not None and t is not func and fl.launches_custom(t) and every_return_launches(facts, t, depth + 1)
        if ok and not any(_is_capture_block(a) for a in _ancestors_within(c.node, func.node)):
            out.append(c.node)
    return out


def _ancestors_within(n: ts.Node, top: ts.Node) -> Iterator[ts.Node]:
    return takewhile(lambda a: a != top, ancestors(n))


def _conditional_scopes(n: ts.Node, top: ts.Node) -> set[tuple[int, int]]:
    """The regions holding `n` that run only on some calls: the body of an if/elif/else or an
    except handler, an arm of a conditional expression, the right operand of `and`/`or`. Loop
    bodies and try bodies count as run."""
    out = set()
    child = n
    for a in _ancestors_within(n, top):
        if a.type == "block" and a.parent is not None and a.parent.type in (
                "if_statement", "elif_clause", "else_clause", "except_clause", "case_clause"):
            out.add((a.start_byte, a.end_byte))
        elif a.type in ("elif_clause", "else_clause", "except_clause"):
            out.add((a.start_byte, a.end_byte))
        elif a.type == "conditional_expression":
            kids = a.named_children
            if len(kids) == 3 and child != kids[1]:
                out.add((child.start_byte, child.end_byte))
        elif a.type == "boolean_operator":
            if child == a.child_by_field_name("right"):
                out.add((child.start_byte, child.end_byte))
        child = a
    return out


def every_return_launches(facts: Facts, func: Func | None = None, depth: int = 0) -> bool:
    """Whether every `return` of `func` runs custom work on its way: a launching call inside the
    returned expression, or one before it in a region that always runs when the return does (its
    conditional scopes are among the return's); a function that can fall off its end must launch
    unconditionally."""
    func = func or facts.forward
    if func is None or facts.py is None:
        return False
    launches = _launching_calls(facts, func, depth)
    if not launches:
        return False
    body = func.node.child_by_field_name("body")
    last = body.named_children[-1] if body is not None and body.named_children else None
    if last is None or last.type not in ("return_statement", "raise_statement"):
        if not any(not _conditional_scopes(l, func.node) for l in launches):
            return False
    return all(_launched_before(r, launches, func) for r, fn in facts.py.returns if fn is func)


def _launched_before(r: ts.Node, launches: list[ts.Node], func: Func) -> bool:
    if any(inside(l, r) for l in launches):
        return True
    rscopes = _conditional_scopes(r, func.node)
    return any(l.start_byte < r.start_byte and _conditional_scopes(l, func.node) <= rscopes for l in launches)


def no_return_skips_work(facts: Facts, func: Func | None = None, depth: int = 0) -> bool:
    """The hit-path test of the caching rules: no `return` of forward (or `func`) hands back stored
    state (an attribute of self, a module-level container, a local bound to one) without custom
    work launched or replayed on the way. A result cache returns its stored value on the hit path
    and launches only on the miss; a workspace, a packed weight, TMA descriptors, a graph keyed on
    pointers all launch or replay on every call. Returns that compute afresh (a PyTorch fallback)
    are other rules' concern, and a returned call of a local function is judged by that function's
    own returns."""
    func = func or facts.forward
    if func is None or facts.py is None:
        return False
    if not facts.flow.launches_custom(func):
        return False
    skips = skipping_returns(facts, func)
    return skips is not None and not skips


def skipping_returns(facts: Facts, func: Func | None = None, depth: int = 0) -> list[ts.Node] | None:
    """The returns of forward (or `func`, and of the local functions it returns the call of) that
    hand back stored state without custom work on the way: the hit paths of a result cache.
    None where the answer is unknown (too deep)."""
    func = func or facts.forward
    if func is None or facts.py is None or depth > 4:
        return None
    fl = facts.flow
    launches = _launching_calls(facts, func)
    out: list[ts.Node] = []
    for r, fn in facts.py.returns:
        if fn is not func or not r.named_children:
            continue
        if _launched_before(r, launches, func):
            continue
        value = r.named_children[0]
        c = fl.call(value) if value.type == "call" else None
        t = fl.local_target(c) if c is not None and fl.kind(c) == "local" else None
        if t is not None and t is not func:
            inner = skipping_returns(facts, t, depth + 1)
            if inner is None:
                return None
            out.extend(inner)
            continue
        if _state_rooted(facts, value, func) or _filled_from_state(facts, value, r, func):
            out.append(r)
    return out


def _filled_from_state(facts: Facts, value: ts.Node, r: ts.Node, func: Func) -> bool:
    """Whether the returned name is filled in place from stored state before the return, in the
    region that runs when the return does (`out.copy_(self._cache[key]); return out`)."""
    names = {text(k) for k in ([value] if value.type == "identifier" else value.named_children)
             if k.type == "identifier"}
    if not names:
        return False
    rscopes = _conditional_scopes(r, func.node)
    for c in facts.py.calls_in(func):
        if c.node.start_byte >= r.start_byte or not _conditional_scopes(c.node, func.node) <= rscopes:
            continue
        fnode = c.node.child_by_field_name("function")
        obj = fnode.child_by_field_name("object") if fnode is not None and fnode.type == "attribute" else None
        target = text(obj) if obj is not None and c.method.endswith("_") else None
        out = c.kwarg("out")
        if out is not None:
            target = text(out)
        if target in names and any(_state_rooted(facts, a, func) for a in c.args):
            return True
    return False


_PASS_THROUGH = frozenset("clone detach to float half bfloat16 contiguous view reshape view_as expand "
                          "narrow select squeeze unsqueeze permute transpose t flatten".split())


def _state_rooted(facts: Facts, n: ts.Node | None, func: Func, depth: int = 0) -> bool:
    """Whether a value is (a view or copy of) state that outlives the call: `self.X`, an element
    of it, a module-level name that is not a function, class or import, or a local bound to one."""
    if n is None or depth > 6:
        return False
    t = n.type
    py = facts.py
    if t in ("parenthesized_expression", "tuple", "list", "expression_list"):
        return any(_state_rooted(facts, k, func, depth + 1) for k in n.named_children if k.type != "comment")
    if t == "conditional_expression":
        kids = n.named_children
        return len(kids) == 3 and (_state_rooted(facts, kids[0], func, depth + 1)
                                   or _state_rooted(facts, kids[2], func, depth + 1))
    if t == "subscript":
        return _state_rooted(facts, n.child_by_field_name("value"), func, depth + 1)
    if t == "call":
        fnode = n.child_by_field_name("function")
        if fnode is not None and fnode.type == "attribute":
            attr = text(fnode.child_by_field_name("attribute"))
            if attr in _PASS_THROUGH or attr == "get":
                return _state_rooted(facts, fnode.child_by_field_name("object"), func, depth + 1)
        return False
    if t == "attribute":
        obj = n.child_by_field_name("object")
        return obj is not None and text(obj) == "self"
    if t == "identifier":
        name = text(n)
        if name in func.params:
            return False
        fn = func
        while fn is not None:
            vals = facts.flow.bindings(name, fn)
            if vals:
                return any(_state_rooted(facts, v, owner, depth + 1) for v, owner in vals)
            fn = fn.parent
        if name in py.classes or any(g.name == name and g.parent is None for g in py.funcs) or name in py.aliases:
            return False
        return name in py.module_bindings or any(g == name for g, _, _ in py.globals_declared)
    return False
