"""Constant folding of Python string expressions, keeping a line map back to the host.

Generated kernels pass C++/CUDA to `load_inline` as literals, concatenations, f-strings
or names bound to such strings. `fold` resolves what is constant and records what is
not, so an unresolved piece becomes a finding instead of silence.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Callable

import tree_sitter as ts

from hackscan.parse.trees import text


@dataclass
class Folded:
    """A resolved string: its text, the 0-based host row of each of its lines, and the
    nodes that could not be resolved (with why)."""

    text: str
    rows: list[int]
    unresolved: list[tuple[ts.Node, str]] = field(default_factory=list)

    def __add__(self, other: "Folded") -> "Folded":
        if not self.text and not self.rows:
            return other
        rows = self.rows[:-1] + [self.rows[-1]] + other.rows[1:] if other.rows else self.rows
        return Folded(self.text + other.text, rows, self.unresolved + other.unresolved)


def _piece(value: str, start_row: int, raw: str) -> Folded:
    n = value.count("\n")
    if raw.count("\n") == n:
        rows = [start_row + i for i in range(n + 1)]
    else:  # escapes such as \n or line continuations: map every line to the start
        rows = [start_row] * (n + 1)
    return Folded(value, rows)


def _literal(node: ts.Node, lookup: Callable[[str, ts.Node], ts.Node | None], depth: int) -> Folded:
    start = node.child_by_field_name("start") or (node.children[0] if node.children else None)
    prefix = text(start) if start is not None and start.type == "string_start" else '"'
    is_f = "f" in prefix.lower()
    if not is_f:
        try:
            value = ast.literal_eval(text(node))
        except (ValueError, SyntaxError):
            return Folded("", [node.start_point[0]], [(node, "string literal could not be decoded")])
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        body_row = node.start_point[0]
        return _piece(value, body_row, text(node))
    quote = prefix.lstrip("fFrRbBuU")
    plain = prefix.replace("f", "").replace("F", "")
    out = Folded("", [node.start_point[0]])
    for ch in node.children:
        if ch.type == "string_content":
            raw = text(ch).replace("{{", "{").replace("}}", "}")
            try:
                value = ast.literal_eval(plain + raw + quote)
            except (ValueError, SyntaxError):
                value = raw
            out = out + _piece(value, ch.start_point[0], raw)
        elif ch.type == "interpolation":
            expr = ch.child_by_field_name("expression")
            sub = fold(expr, lookup, depth + 1) if expr is not None else None
            if sub is None or sub.unresolved:
                out = out + Folded("", [ch.start_point[0]], (sub.unresolved if sub else [])
                                   or [(ch, f"f-string part {{{text(expr)}}} is not a constant")])
            else:
                out = out + Folded(sub.text, [ch.start_point[0]] * (sub.text.count("\n") + 1))
    return out


def fold(node: ts.Node | None, lookup: Callable[[str, ts.Node], ts.Node | None], depth: int = 0) -> Folded | None:
    """Resolve `node` to a constant string. `lookup(name, at)` returns the node a name is
    bound to (or None). Returns None when the node is not string-like at all."""
    if node is None or depth > 12:
        return None
    t = node.type
    if t == "string":
        return _literal(node, lookup, depth)
    if t == "concatenated_string":
        out = Folded("", [node.start_point[0]])
        for ch in node.named_children:
            sub = fold(ch, lookup, depth + 1)
            if sub is not None:
                out = out + sub
        return out
    if t == "parenthesized_expression":
        inner = node.named_children[0] if node.named_children else None
        return fold(inner, lookup, depth + 1)
    if t in ("integer", "float"):
        return Folded(text(node), [node.start_point[0]])
    if t == "binary_operator":
        op = node.child_by_field_name("operator")
        if op is not None and text(op) == "+":
            left = fold(node.child_by_field_name("left"), lookup, depth + 1)
            right = fold(node.child_by_field_name("right"), lookup, depth + 1)
            if left is None and right is None:
                return None
            left = left or Folded("", [node.start_point[0]], [(node.child_by_field_name("left"), "operand is not a constant string")])
            right = right or Folded("", [node.start_point[0]], [(node.child_by_field_name("right"), "operand is not a constant string")])
            return left + right
        return None
    if t == "identifier":
        bound = lookup(text(node), node)
        if bound is None:
            return Folded("", [node.start_point[0]], [(node, f"name '{text(node)}' is not bound to a constant string")])
        return fold(bound, lookup, depth + 1)
    if t == "call":
        fn = node.child_by_field_name("function")
        ftxt = text(fn)
        args = node.child_by_field_name("arguments")
        # "sep".join([...constants...])
        if fn is not None and fn.type == "attribute" and ftxt.endswith(".join") and args is not None:
            sep = fold(fn.child_by_field_name("object"), lookup, depth + 1)
            parts = args.named_children
            if sep is not None and not sep.unresolved and len(parts) == 1:
                seq = fold_list(parts[0], lookup, depth + 1)
                if seq is not None:
                    out = Folded("", [node.start_point[0]])
                    for i, p in enumerate(seq):
                        if i:
                            out = out + Folded(sep.text, [node.start_point[0]] * (sep.text.count("\n") + 1))
                        out = out + p
                    return out
        return Folded("", [node.start_point[0]], [(node, f"string built at run time by {ftxt}(...)")])
    return Folded("", [node.start_point[0]], [(node, f"{t} is not a constant string")])


def fold_list(node: ts.Node | None, lookup: Callable[[str, ts.Node], ts.Node | None], depth: int = 0) -> list[Folded] | None:
    """Resolve a list/tuple of strings (or a single string) to its items."""
    if node is None or depth > 12:
        return None
    if node.type in ("list", "tuple"):
        out = []
        for ch in node.named_children:
            f = fold(ch, lookup, depth + 1)
            if f is not None:
                out.append(f)
        return out
    if node.type == "identifier":
        bound = lookup(text(node), node)
        if bound is not None and bound.type in ("list", "tuple"):
            return fold_list(bound, lookup, depth + 1)
    f = fold(node, lookup, depth)
    return [f] if f is not None else None


def const_str(node: ts.Node | None, lookup: Callable[[str, ts.Node], ts.Node | None]) -> str | None:
    f = fold(node, lookup)
    if f is None or f.unresolved:
        return None
    return f.text
