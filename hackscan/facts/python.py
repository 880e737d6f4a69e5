"""Facts about a Python file, computed in one walk of its tree-sitter tree.

Names are resolved through imports and module-level aliases (`import torch.nn.functional
as G`, `from torch import matmul as mm`, `mm = torch.matmul`), `getattr(torch, "mat" +
"mul")` and `torch.ops.aten.*`, so rules see `torch.matmul` whatever the spelling.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import tree_sitter as ts

from hackscan.parse.strings import const_str, fold_list, Folded
from hackscan.parse.trees import blank_comments, text

LOADERS = ("torch.utils.cpp_extension.load_inline", "torch.utils.cpp_extension.load")
TRITON_DECORATORS = ("triton.jit", "triton.autotune", "triton.heuristics",
                     "triton.runtime.jit", "triton.language.jit", "torch._inductor.triton_heuristics")


@dataclass
class Func:
    name: str
    qualname: str
    node: ts.Node
    params: list[str]
    cls: str | None
    decorators: list[str]
    parent: "Func | None" = None

    @property
    def is_triton_kernel(self) -> bool:
        return any(d.startswith(TRITON_DECORATORS) or d.endswith((".jit",)) and "triton" in d
                   for d in self.decorators)


@dataclass
class Klass:
    name: str
    node: ts.Node
    bases: list[str]
    methods: dict[str, Func] = field(default_factory=dict)
    init_attrs: dict[str, list[ts.Node]] = field(default_factory=dict)


@dataclass
class Call:
    node: ts.Node
    callee: str            # resolved dotted name, or the callee's source text
    resolved: bool         # callee is a resolved import-rooted name
    func: Func | None
    obfuscated: bool = False

    @property
    def line(self) -> int:
        return self.node.start_point[0] + 1

    @property
    def args(self) -> list[ts.Node]:
        a = self.node.child_by_field_name("arguments")
        return [c for c in a.named_children if c.type != "keyword_argument"] if a is not None else []

    def kwarg(self, name: str) -> ts.Node | None:
        a = self.node.child_by_field_name("arguments")
        if a is None:
            return None
        for c in a.named_children:
            if c.type == "keyword_argument" and text(c.child_by_field_name("name")) == name:
                return c.child_by_field_name("value")
        return None

    @property
    def method(self) -> str:
        return self.callee.rsplit(".", 1)[-1]


@dataclass
class Extension:
    """A C++/CUDA extension built by load_inline/load: its sources and exported functions."""

    var: str | None
    call: Call
    sources: list[tuple[str, Folded, ts.Node]]   # (label, folded text, host node)
    functions: list[str]
    flags: list[str]
    unresolved: list[tuple[ts.Node, str, ts.Node]]   # (unresolved part, why, argument it is in)
    files: list[str] = field(default_factory=list)


@dataclass
class Assign:
    targets: list[ts.Node]
    value: ts.Node | None
    node: ts.Node
    func: Func | None
    augmented: bool = False


@dataclass
class Branch:
    node: ts.Node            # if_statement / conditional_expression / elif_clause / while_statement
    condition: ts.Node
    func: Func | None


@dataclass
class PyFacts:
    path: str
    source: bytes
    tree: ts.Tree
    aliases: dict[str, str] = field(default_factory=dict)
    imported_modules: list[tuple[str, ts.Node]] = field(default_factory=list)
    module_bindings: dict[str, list[ts.Node]] = field(default_factory=dict)
    funcs: list[Func] = field(default_factory=list)
    classes: dict[str, Klass] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    assigns: list[Assign] = field(default_factory=list)
    branches: list[Branch] = field(default_factory=list)
    returns: list[tuple[ts.Node, Func | None]] = field(default_factory=list)
    attr_writes: list[tuple[str, ts.Node, Func | None]] = field(default_factory=list)
    comments: list[ts.Node] = field(default_factory=list)
    excepts: list[tuple[ts.Node, Func | None]] = field(default_factory=list)
    withs: list[tuple[ts.Node, Func | None]] = field(default_factory=list)
    globals_declared: list[tuple[str, ts.Node, Func | None]] = field(default_factory=list)
    subscript_writes: list[tuple[ts.Node, Func | None]] = field(default_factory=list)
    binops: list[tuple[ts.Node, Func | None]] = field(default_factory=list)
    extensions: list[Extension] = field(default_factory=list)
    triton_launches: list[tuple[str, Call]] = field(default_factory=list)

    @cached_property
    def code(self) -> bytes:
        """The file with comments and docstrings blanked (offsets and lines kept): what a rule
        searching the text reads, since the audited party writes them."""
        return blank_comments(self.source, self.tree.root_node, docstrings=True, lang="python")

    def code_of(self, node: ts.Node) -> str:
        return self.code[node.start_byte:node.end_byte].decode("utf-8", "replace")

    # ---- queries -----------------------------------------------------------------
    def funcs_named(self, name: str) -> list[Func]:
        return [f for f in self.funcs if f.name == name]

    @property
    def triton_kernels(self) -> dict[str, Func]:
        return {f.name: f for f in self.funcs if f.is_triton_kernel}

    def calls_in(self, func: Func) -> list[Call]:
        return [c for c in self.calls if c.func is func]

    @cached_property
    def _calls_by_start(self) -> tuple[list[int], list[int]]:
        order = sorted(range(len(self.calls)), key=lambda i: self.calls[i].node.start_byte)
        return [self.calls[i].node.start_byte for i in order], order

    def calls_within(self, node: ts.Node) -> list[Call]:
        """The calls whose node lies inside `node`, in the order of `calls`: found by their
        start byte (a rule asking this of every statement of a 20,000-line block read all the
        calls each time: minutes)."""
        from bisect import bisect_left

        starts, order = self._calls_by_start
        lo, hi = bisect_left(starts, node.start_byte), bisect_left(starts, node.end_byte)
        return [self.calls[i] for i in sorted(i for i in order[lo:hi] if self.calls[i].node.end_byte <= node.end_byte)]

    def lookup(self, name: str, at: ts.Node | None = None) -> ts.Node | None:
        """The node a name is bound to: the last binding before `at` in its function,
        else the last module-level binding."""
        if at is not None:
            fn = self.func_at(at)
            while fn is not None:
                best = None
                for a in self.assigns:
                    if a.func is fn and not a.augmented and a.node.start_byte < at.start_byte:
                        for t in a.targets:
                            if t.type == "identifier" and text(t) == name:
                                best = a.value
                if best is not None:
                    return best
                fn = fn.parent
        vals = self.module_bindings.get(name)
        return vals[-1] if vals else None

    def func_at(self, node: ts.Node) -> Func | None:
        best = None
        for f in self.funcs:
            if f.node.start_byte <= node.start_byte and node.end_byte <= f.node.end_byte:
                if best is None or f.node.start_byte >= best.node.start_byte:
                    best = f
        return best

    def resolve(self, node: ts.Node | None) -> tuple[str | None, bool]:
        """Dotted name of an expression, through aliases. Returns (name, obfuscated)."""
        if node is None:
            return None, False
        t = node.type
        if t == "identifier":
            n = text(node)
            return self.aliases.get(n, n), False
        if t == "attribute":
            base, obf = self.resolve(node.child_by_field_name("object"))
            attr = text(node.child_by_field_name("attribute"))
            return (f"{base}.{attr}" if base else None), obf
        if t == "call":
            fn = node.child_by_field_name("function")
            if fn is not None and text(fn) in ("getattr", "builtins.getattr"):
                args = node.child_by_field_name("arguments")
                parts = [c for c in args.named_children] if args is not None else []
                if len(parts) >= 2:
                    base, _ = self.resolve(parts[0])
                    name = const_str(parts[1], self.lookup)
                    if base and name is not None and name.isidentifier():
                        return f"{base}.{name}", True
            return None, False
        if t == "parenthesized_expression" and node.named_children:
            return self.resolve(node.named_children[0])
        return None, False

    def is_import_rooted(self, name: str | None) -> bool:
        if not name:
            return False
        root = name.split(".", 1)[0]
        return root in self.import_roots

    @property
    def import_roots(self) -> set[str]:
        roots = {v.split(".", 1)[0] for v in self.aliases.values()}
        return roots

    def entry_class(self, entry: str = "ModelNew") -> Klass | None:
        return self.classes.get(entry)


def _params(fn_node: ts.Node) -> list[str]:
    out = []
    params = fn_node.child_by_field_name("parameters")
    if params is None:
        return out
    for p in params.named_children:
        if p.type == "identifier":
            out.append(text(p))
        elif p.type in ("default_parameter", "typed_parameter", "typed_default_parameter"):
            nm = p.child_by_field_name("name")
            if nm is None and p.named_children:
                nm = p.named_children[0]
            if nm is not None and nm.type == "identifier":
                out.append(text(nm))
        elif p.type in ("list_splat_pattern", "dictionary_splat_pattern"):
            for c in p.named_children:
                if c.type == "identifier":
                    out.append(text(c))
    return out


class _Builder:
    def __init__(self, facts: PyFacts):
        self.f = facts
        self.pending_calls: list[tuple[ts.Node, Func | None]] = []

    def run(self) -> None:
        root = self.f.tree.root_node
        self.visit_block(root, None, None)
        # resolve calls only after every alias and binding is known
        for node, func in self.pending_calls:
            self.add_call(node, func)
        self.find_extensions()

    # -------------------------------------------------------------------------
    def visit_block(self, node: ts.Node, func: Func | None, cls: Klass | None) -> None:
        stack = list(reversed(node.children))
        while stack:
            n = stack.pop()
            t = n.type
            if t == "decorated_definition":
                defn = n.child_by_field_name("definition")
                decos = [c for c in n.children if c.type == "decorator"]
                for d in decos:
                    stack_children = list(reversed(d.children))
                    for c in stack_children:
                        self.visit_expr_tree(c, func)
                if defn is not None:
                    self.visit_def(defn, func, cls, decos)
                continue
            if t in ("function_definition", "class_definition"):
                self.visit_def(n, func, cls, [])
                continue
            if t == "comment":
                self.f.comments.append(n)
                continue
            self.visit_stmt(n, func, cls)
            if t in ("call", "lambda"):
                continue
            stack.extend(reversed(n.children))

    def visit_expr_tree(self, node: ts.Node, func: Func | None) -> None:
        for n in _iter(node):
            if n.type == "call":
                self.pending_calls.append((n, func))

    def visit_def(self, n: ts.Node, func: Func | None, cls: Klass | None, decos: list[ts.Node]) -> None:
        name = text(n.child_by_field_name("name"))
        if n.type == "class_definition":
            bases = []
            sup = n.child_by_field_name("superclasses")
            if sup is not None:
                for b in sup.named_children:
                    if b.type != "keyword_argument":
                        r, _ = self.f.resolve(b)
                        bases.append(r or text(b))
            k = Klass(name, n, bases)
            if func is None and cls is None:
                self.f.classes[name] = k
            body = n.child_by_field_name("body")
            if body is not None:
                self.visit_block(body, func, k)
            return
        deco_names = []
        for d in decos:
            expr = d.named_children[0] if d.named_children else None
            if expr is not None and expr.type == "call":
                expr = expr.child_by_field_name("function")
            r, _ = self.f.resolve(expr)
            deco_names.append(r or text(expr))
        qual = f"{cls.name}.{name}" if cls is not None and func is None else (f"{func.qualname}.{name}" if func else name)
        fn = Func(name, qual, n, _params(n), cls.name if cls is not None and func is None else None, deco_names, func)
        self.f.funcs.append(fn)
        if cls is not None and func is None:
            cls.methods[name] = fn
        params = n.child_by_field_name("parameters")
        if params is not None:
            self.visit_expr_tree(params, func)
        body = n.child_by_field_name("body")
        if body is not None:
            self.visit_block(body, fn, None)

    def visit_stmt(self, n: ts.Node, func: Func | None, cls: Klass | None) -> None:
        t = n.type
        f = self.f
        if t == "import_statement":
            for c in n.named_children:
                if c.type == "dotted_name":
                    full = text(c)
                    f.aliases[full.split(".")[0]] = full.split(".")[0]
                    f.imported_modules.append((full, n))
                elif c.type == "aliased_import":
                    full = text(c.child_by_field_name("name"))
                    f.aliases[text(c.child_by_field_name("alias"))] = full
                    f.imported_modules.append((full, n))
        elif t == "import_from_statement":
            mod_node = n.child_by_field_name("module_name")
            mod = text(mod_node)
            f.imported_modules.append((mod, n))
            for c in n.children_by_field_name("name"):
                if c.type == "dotted_name":
                    f.aliases[text(c)] = f"{mod}.{text(c)}"
                elif c.type == "aliased_import":
                    f.aliases[text(c.child_by_field_name("alias"))] = f"{mod}.{text(c.child_by_field_name('name'))}"
        elif t in ("assignment", "augmented_assignment"):
            left = n.child_by_field_name("left")
            right = n.child_by_field_name("right")
            targets = _targets(left)
            aug = t == "augmented_assignment"
            f.assigns.append(Assign(targets, right, n, func, aug))
            for tg in targets:
                if tg.type == "identifier" and func is None and cls is None and right is not None:
                    name = text(tg)
                    f.module_bindings.setdefault(name, []).append(right)
                    is_getattr = right.type == "call" and text(right.child_by_field_name("function")) == "getattr"
                    if (right.type in ("identifier", "attribute") or is_getattr) and not aug:
                        r, _ = f.resolve(right)
                        if r and f.is_import_rooted(r) and r != name:
                            f.aliases[name] = r
                elif tg.type == "identifier" and cls is not None and func is None and right is not None:
                    f.module_bindings.setdefault(f"{cls.name}.{text(tg)}", []).append(right)
                elif tg.type == "attribute":
                    r, _ = f.resolve(tg)
                    f.attr_writes.append((r or text(tg), tg, func))
                    obj = tg.child_by_field_name("object")
                    if func is not None and func.name == "__init__" and text(obj) == "self" and func.cls:
                        k = f.classes.get(func.cls)
                        if k is not None and right is not None:
                            k.init_attrs.setdefault(text(tg.child_by_field_name("attribute")), []).append(right)
                elif tg.type == "subscript":
                    f.subscript_writes.append((tg, func))
        elif t in ("if_statement", "elif_clause", "while_statement"):
            cond = n.child_by_field_name("condition")
            if cond is not None:
                f.branches.append(Branch(n, cond, func))
        elif t == "conditional_expression":
            kids = n.named_children
            if len(kids) == 3:
                f.branches.append(Branch(n, kids[1], func))
        elif t == "return_statement":
            f.returns.append((n, func))
        elif t == "call":
            self.pending_calls.append((n, func))
            # visit inside the call for nested calls and lambdas, keeping scope
            for c in n.children:
                self.visit_expr_tree_nested(c, func)
        elif t == "lambda":
            for c in n.children:
                self.visit_expr_tree_nested(c, func)
        elif t == "except_clause":
            f.excepts.append((n, func))
        elif t == "with_statement":
            f.withs.append((n, func))
        elif t in ("global_statement", "nonlocal_statement"):
            for c in n.named_children:
                f.globals_declared.append((text(c), n, func))
        elif t == "binary_operator":
            f.binops.append((n, func))

    def visit_expr_tree_nested(self, node: ts.Node, func: Func | None) -> None:
        for n in _iter(node):
            if n.type == "call":
                self.pending_calls.append((n, func))
            elif n.type == "binary_operator":
                self.f.binops.append((n, func))
            elif n.type == "conditional_expression":
                kids = n.named_children
                if len(kids) == 3:
                    self.f.branches.append(Branch(n, kids[1], func))
            elif n.type == "comment":
                self.f.comments.append(n)

    def add_call(self, node: ts.Node, func: Func | None) -> None:
        fn = node.child_by_field_name("function")
        if fn is None:
            return
        if fn.type == "subscript":  # triton launch: kernel[grid](...)
            val = fn.child_by_field_name("value")
            name = text(val)
            call = Call(node, f"{name}[]", False, func)
            self.f.calls.append(call)
            self.f.triton_launches.append((name, call))
            return
        r, obf = self.f.resolve(fn)
        if r is not None and fn.type == "call":
            obf = True
        resolved = r is not None and self.f.is_import_rooted(r)
        self.f.calls.append(Call(node, r or text(fn), resolved, func, obf))

    def find_extensions(self) -> None:
        f = self.f
        for c in f.calls:
            if not (c.callee in LOADERS or c.callee.endswith(("cpp_extension.load_inline", "cpp_extension.load"))
                    or (not c.resolved and c.method in ("load_inline",))):
                continue
            sources: list[tuple[str, Folded, ts.Node]] = []
            unresolved: list[tuple[ts.Node, str, ts.Node]] = []
            for label in ("cpp_sources", "cuda_sources"):
                v = c.kwarg(label)
                if v is None:
                    continue
                items = fold_list(v, f.lookup)
                if items is None:
                    unresolved.append((v, f"{label} is not a string expression", v))
                    continue
                for i, it in enumerate(items):
                    sources.append((label if len(items) == 1 else f"{label}[{i}]", it, v))
                    unresolved.extend((n, r, v) for n, r in it.unresolved)
            # positional load_inline(name, cpp_sources, cuda_sources, functions)
            pos = c.args
            if c.method == "load_inline" and len(pos) >= 2 and not sources:
                for label, v in zip(("cpp_sources", "cuda_sources"), pos[1:3]):
                    items = fold_list(v, f.lookup) or []
                    for it in items:
                        sources.append((label, it, v))
                        unresolved.extend((n, r, v) for n, r in it.unresolved)
            functions: list[str] = []
            fv = c.kwarg("functions") or (pos[3] if c.method == "load_inline" and len(pos) >= 4 else None)
            if fv is not None:
                for it in fold_list(fv, f.lookup) or []:
                    if not it.unresolved:
                        functions.append(it.text)
            flags: list[str] = []
            for label in ("extra_cuda_cflags", "extra_cflags"):
                v = c.kwarg(label)
                for it in (fold_list(v, f.lookup) or []) if v is not None else []:
                    if not it.unresolved:
                        flags.append(it.text)
            files: list[str] = []
            if c.method == "load":
                v = c.kwarg("sources") or (pos[1] if len(pos) >= 2 else None)
                for it in (fold_list(v, f.lookup) or []) if v is not None else []:
                    if not it.unresolved:
                        files.append(it.text)
                    else:
                        unresolved.extend((n, r, v) for n, r in it.unresolved)
            var = None
            p = c.node.parent
            while p is not None and p.type in ("parenthesized_expression",):
                p = p.parent
            if p is not None and p.type == "assignment":
                left = p.child_by_field_name("left")
                var = text(left)
            f.extensions.append(Extension(var, c, sources, functions, flags, unresolved, files))


def _targets(left: ts.Node | None) -> list[ts.Node]:
    if left is None:
        return []
    if left.type in ("pattern_list", "tuple_pattern", "list_pattern", "tuple", "list"):
        out = []
        for c in left.named_children:
            out.extend(_targets(c))
        return out
    return [left]


def _iter(node: ts.Node):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def build(path: str, source: bytes, tree: ts.Tree) -> PyFacts:
    facts = PyFacts(path, source, tree)
    _Builder(facts).run()
    return facts
