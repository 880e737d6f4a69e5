"""Predicates shared by rules: what a branch condition tests, what a block contains, which
calls sit inside a node. Rules import these instead of re-walking trees their own way."""
from __future__ import annotations

from typing import Iterator

import tree_sitter as ts

from hackscan.facts import Facts
from hackscan.facts.flow import CUSTOM, HEAVY, PARAM, SELF_ATTR
from hackscan.facts.python import Call, Func
from hackscan.parse.trees import text, walk

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
    return [c for c in facts.py.calls if inside(c.node, node)] if facts.py is not None else []


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
