"""Facts about one C++/CUDA translation unit (a raw file or a string embedded in Python).

Kernels (`__global__`), device and host functions, launches (`k<<<grid, block, smem,
stream>>>(...)`), the calls inside host functions (ATen/torch, cuBLAS/cuDNN, streams,
threads), what each kernel stores to, static state and pybind11 bindings.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

import tree_sitter as ts

from hackscan.parse.trees import blank_comments, captures, parse_cuda, text, walk


@dataclass
class CParam:
    name: str
    type: str
    pointer: bool


@dataclass
class CFunc:
    name: str
    kind: str            # global | device | host
    node: ts.Node
    params: list[CParam]

    def param(self, name: str) -> CParam | None:
        for p in self.params:
            if p.name == name:
                return p
        return None


@dataclass
class CCall:
    node: ts.Node
    callee: str           # e.g. at::matmul, torch::empty_like, cublasSgemm, x.matmul (as ".matmul")
    receiver: str | None  # for method calls: the object text
    func: CFunc | None


@dataclass
class Launch:
    node: ts.Node
    kernel: str
    config: list[ts.Node]
    args: list[ts.Node]
    func: CFunc | None


@dataclass
class Store:
    node: ts.Node
    base: str             # pointer being written
    value: ts.Node | None
    func: CFunc
    conditions: list[ts.Node]
    idents: frozenset[str] = frozenset()


@dataclass
class CudaFacts:
    label: str
    host_path: str
    source: str
    rows: list[int]              # host row (0-based) for each line of `source`
    tree: ts.Tree
    embedded: bool
    funcs: list[CFunc] = field(default_factory=list)
    calls: list[CCall] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)
    stores: list[Store] = field(default_factory=list)
    statics: list[tuple[ts.Node, CFunc | None]] = field(default_factory=list)
    ifs: list[tuple[ts.Node, ts.Node, CFunc | None]] = field(default_factory=list)
    returns: list[tuple[ts.Node, CFunc | None]] = field(default_factory=list)
    decls: list[tuple[str, ts.Node, CFunc | None]] = field(default_factory=list)
    assigns: list[tuple[ts.Node, CFunc | None]] = field(default_factory=list)
    loops: list[tuple[ts.Node, CFunc | None]] = field(default_factory=list)
    macros: list[ts.Node] = field(default_factory=list)
    bindings: dict[str, str] = field(default_factory=dict)   # python name -> C++ function
    comments: list[ts.Node] = field(default_factory=list)
    _identifiers: set[str] | None = None

    @property
    def identifiers(self) -> set[str]:
        """Every identifier in the unit (computed on first use)."""
        if self._identifiers is None:
            nodes = captures("cuda", "(identifier) @id", self.tree.root_node).get("id", [])
            self._identifiers = {text(n) for n in nodes}
        return self._identifiers

    @property
    def kernels(self) -> dict[str, CFunc]:
        return {f.name: f for f in self.funcs if f.kind == "global"}

    @property
    def host_funcs(self) -> dict[str, CFunc]:
        return {f.name: f for f in self.funcs if f.kind == "host"}

    def host_line(self, node: ts.Node) -> int:
        r = node.start_point[0]
        return (self.rows[r] if r < len(self.rows) else (self.rows[-1] if self.rows else r)) + 1

    def calls_in(self, fn: CFunc) -> list[CCall]:
        return [c for c in self.calls if c.func is fn]

    @cached_property
    def code_bytes(self) -> bytes:
        """The unit's source with comments blanked (offsets and lines kept)."""
        return blank_comments(self.source.encode("utf-8", "replace"), self.tree.root_node, lang="cuda")

    @cached_property
    def code(self) -> str:
        """The unit's source with comments blanked: what a rule searching text reads."""
        return self.code_bytes.decode("utf-8", "replace")

    def code_of(self, node: ts.Node) -> str:
        """A node's text with its comments blanked."""
        return self.code_bytes[node.start_byte:node.end_byte].decode("utf-8", "replace")


def _declarator_name(d: ts.Node | None) -> tuple[str, bool]:
    pointer = False
    while d is not None and d.type in ("pointer_declarator", "reference_declarator", "init_declarator",
                                        "array_declarator", "function_declarator", "parenthesized_declarator"):
        if d.type in ("pointer_declarator", "array_declarator"):
            pointer = True
        nxt = d.child_by_field_name("declarator")
        if nxt is None:
            nxt = next((c for c in d.named_children if c.type in ("identifier", "field_identifier", "qualified_identifier",
                                                                  "pointer_declarator", "reference_declarator")), None)
        d = nxt
    return (text(d) if d is not None else ""), pointer


def _func_kind(fn: ts.Node) -> str:
    for c in fn.children:
        if c.type == "__global__":
            return "global"
        if c.type == "__device__":
            return "device"
    head = text(fn)[: max(0, (fn.child_by_field_name("body").start_byte - fn.start_byte) if fn.child_by_field_name("body") else 0)]
    if "__global__" in head:
        return "global"
    if "__device__" in head and "__host__" not in head:
        return "device"
    return "host"


def _base_of(lhs: ts.Node) -> str | None:
    n = lhs
    while n is not None:
        if n.type == "subscript_expression":
            n = n.child_by_field_name("argument")
        elif n.type == "pointer_expression":
            n = n.child_by_field_name("argument")
        elif n.type == "parenthesized_expression":
            n = n.named_children[0] if n.named_children else None
        elif n.type == "binary_expression":  # *(p + i)
            n = n.child_by_field_name("left")
        elif n.type == "field_expression":
            n = n.child_by_field_name("argument")
        elif n.type == "cast_expression":
            n = n.child_by_field_name("value")
        elif n.type == "identifier":
            return text(n)
        else:
            return None
    return None


def _idents(node: ts.Node):
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "identifier":
            yield n
        stack.extend(n.named_children)


def _call_name(fn: ts.Node) -> tuple[str, str | None]:
    if fn.type == "field_expression":
        field_ = fn.child_by_field_name("field")
        name = field_
        if field_ is not None and field_.type == "template_method":
            name = field_.child_by_field_name("name")
        return "." + text(name), text(fn.child_by_field_name("argument"))
    if fn.type == "template_function":
        return text(fn.child_by_field_name("name")), None
    return text(fn), None


class _Walker:
    def __init__(self, facts: CudaFacts):
        self.f = facts

    def run(self) -> None:
        self.visit(self.f.tree.root_node, None, [])

    def visit(self, node: ts.Node, fn: CFunc | None, conds: list[ts.Node]) -> None:
        stack: list[tuple[ts.Node, CFunc | None, list[ts.Node]]] = [(node, fn, conds)]
        f = self.f
        while stack:
            n, fn, conds = stack.pop()
            t = n.type
            if t == "function_definition":
                decl = n.child_by_field_name("declarator")
                name, _ = _declarator_name(decl)
                params: list[CParam] = []
                fd = decl
                while fd is not None and fd.type != "function_declarator":
                    fd = fd.child_by_field_name("declarator")
                plist = fd.child_by_field_name("parameters") if fd is not None else None
                if plist is not None:
                    for p in plist.named_children:
                        if p.type in ("parameter_declaration", "optional_parameter_declaration"):
                            pname, ptr = _declarator_name(p.child_by_field_name("declarator"))
                            ptype = text(p.child_by_field_name("type"))
                            params.append(CParam(pname, ptype, ptr))
                new = CFunc(name.split("::")[-1], _func_kind(n), n, params)
                f.funcs.append(new)
                body = n.child_by_field_name("body")
                if body is not None:
                    stack.append((body, new, []))
                continue
            if t in ("identifier", "number_literal", "string_literal", "primitive_type", "type_identifier",
                     "field_identifier", "namespace_identifier"):
                continue
            if t == "comment":
                f.comments.append(n)
                continue
            if t == "preproc_function_def" or t == "preproc_def":
                f.macros.append(n)
                continue
            if t == "call_expression":
                callee = n.child_by_field_name("function")
                args = n.child_by_field_name("arguments")
                ksyntax = next((c for c in n.children if c.type == "kernel_call_syntax"), None)
                if ksyntax is not None and callee is not None:
                    cfg = list(ksyntax.named_children)
                    f.launches.append(Launch(n, text(callee).split("<")[0].split("::")[-1], cfg,
                                             list(args.named_children) if args is not None else [], fn))
                elif callee is not None:
                    name, recv = _call_name(callee)
                    f.calls.append(CCall(n, name, recv, fn))
                    if fn is not None and fn.kind in ("global", "device") and name.startswith("atomic") and args is not None \
                            and args.named_children:
                        a0 = args.named_children[0]
                        f.stores.append(Store(n, _base_of(a0) or "", None, fn, list(conds),
                                              frozenset(text(x) for x in _idents(a0))))
                    if name == ".def" and args is not None and len(args.named_children) >= 2:
                        a0, a1 = args.named_children[0], args.named_children[1]
                        if a0.type == "string_literal":
                            target = text(a1).lstrip("&").split("::")[-1]
                            f.bindings[text(a0).strip('"')] = target
            elif t == "assignment_expression" and fn is not None:
                lhs = n.child_by_field_name("left")
                f.assigns.append((n, fn))
                if fn.kind in ("global", "device") and lhs is not None and lhs.type in (
                        "subscript_expression", "pointer_expression"):
                    base = _base_of(lhs)
                    idents = frozenset(text(x) for x in _idents(lhs))
                    if base or idents:
                        f.stores.append(Store(n, base or "", n.child_by_field_name("right"), fn, list(conds), idents))
            elif t == "declaration":
                is_static = any(c.type == "storage_class_specifier" and text(c) == "static" for c in n.children)
                if is_static:
                    f.statics.append((n, fn))
                for d in n.children_by_field_name("declarator"):
                    name, _ = _declarator_name(d)
                    val = d.child_by_field_name("value") if d.type == "init_declarator" else None
                    if name:
                        f.decls.append((name, val if val is not None else d, fn))
            elif t == "if_statement":
                cond = n.child_by_field_name("condition")
                if cond is not None:
                    f.ifs.append((n, cond, fn))
                    cons = n.child_by_field_name("consequence")
                    alt = n.child_by_field_name("alternative")
                    stack.append((cond, fn, conds))
                    if cons is not None:
                        stack.append((cons, fn, conds + [cond]))
                    if alt is not None:
                        stack.append((alt, fn, conds + [cond]))
                    continue
            elif t in ("for_statement", "while_statement", "do_statement"):
                f.loops.append((n, fn))
            elif t == "return_statement":
                f.returns.append((n, fn))
            elif t == "conditional_expression":
                cond = n.child_by_field_name("condition")
                if cond is not None:
                    f.ifs.append((n, cond, fn))
            for c in reversed(n.named_children):
                stack.append((c, fn, conds))


def build(label: str, host_path: str, source: str, rows: list[int] | None, embedded: bool) -> CudaFacts:
    tree = parse_cuda(source.encode("utf-8", "replace"))
    if rows is None:
        rows = list(range(source.count("\n") + 1))
    facts = CudaFacts(label, host_path, source, rows, tree, embedded)
    _Walker(facts).run()
    _macro_launches(facts)
    return facts


_MACRO_LAUNCH = re.compile(r"([A-Za-z_]\w*)\s*(?:<[^<>;]*>)?\s*<<<")


def _macro_launches(f: CudaFacts) -> None:
    """A host call of a function-like macro whose body launches a kernel
    (`#define LAUNCH(V) k<V><<<g, b>>>(x.data_ptr<float>(), ...)`) is a launch at the call site:
    its arguments are read from the macro body, parsed on their own (only their names are used)."""
    bodies = {}
    for m in f.macros:
        if m.type != "preproc_function_def":
            continue
        name = m.child_by_field_name("name")
        value = m.child_by_field_name("value")
        if name is None or value is None:
            continue
        body = text(value).replace("\\\n", " ")
        hit = _MACRO_LAUNCH.search(body)
        if hit is None:
            continue
        mini = parse_cuda(f"void __hackscan_macro() {{ {body}; }}".encode("utf-8", "replace"))
        launch = next((n for n in walk(mini.root_node) if n.type == "call_expression" and any(
            c.type == "kernel_call_syntax" for c in n.children)), None)
        args = launch.child_by_field_name("arguments") if launch is not None else None
        bodies[text(name)] = (hit.group(1), list(args.named_children) if args is not None else [])
    if not bodies:
        return
    for c in list(f.calls):
        if c.func is not None and c.func.kind == "host" and c.callee in bodies:
            kernel, args = bodies[c.callee]
            f.launches.append(Launch(c.node, kernel, [], args, c.func))

