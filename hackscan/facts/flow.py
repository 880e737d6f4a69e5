"""Data flow: what a returned value derives from, in Python host code and in C++ host code.

The analysis is flow-insensitive inside a function (every binding of a name counts) and
follows local helpers, self methods, nn sub-modules and extension functions. A custom
kernel that writes an argument (`kernel[grid](x, out)`, `k<<<...>>>(out.data_ptr<float>())`)
counts as a definition of that argument, so `out = torch.empty_like(x); launch(out);
return out` derives from the kernel.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import tree_sitter as ts

from hackscan.facts import torchops
from hackscan.facts.cuda import CFunc, CudaFacts
from hackscan.facts.python import Call, Func, PyFacts
from hackscan.parse.trees import text, walk

CUSTOM = "custom"
HEAVY = "torch-heavy"
COMPUTE = "torch-compute"
CREATE = "torch-create"
GLUE = "torch-glue"
INPLACE = "torch-inplace"
PARAM = "param"
SELF_ATTR = "self-attr"
LITERAL = "literal"
REFERENCE = "reference"
OTHER = "other"
GLOBAL = "global"


@dataclass(frozen=True)
class Origin:
    kind: str
    name: str
    node: ts.Node

    def __hash__(self) -> int:
        return hash((self.kind, self.name, self.node.start_byte, self.node.end_byte))

    def __eq__(self, o: object) -> bool:
        return isinstance(o, Origin) and (self.kind, self.name, self.node.start_byte, self.node.end_byte) == (
            o.kind, o.name, o.node.start_byte, o.node.end_byte)


METADATA = frozenset("device dtype shape layout is_cuda ndim requires_grad is_contiguous".split())
ARITH = ("+", "-", "*", "/", "//", "%", "**")
SHAPEISH = (".shape", ".size(", ".numel(", "len(", ".dim(", ".ndim", ".stride(")


def _scalar_operand(n: ts.Node) -> bool:
    """A literal or a size expression: arithmetic on these is index math, not compute."""
    if n.type in ("integer", "float", "string", "concatenated_string", "true", "false", "none"):
        return True   # strings are joined, not computed (compiler flags, names)
    if n.type == "parenthesized_expression" or n.type == "binary_operator" or n.type == "unary_operator":
        return all(_scalar_operand(c) for c in n.named_children if c.type not in ("comment",))
    t = text(n)
    return any(s in t for s in SHAPEISH)


def _key(n: ts.Node) -> tuple[int, int]:
    return (n.start_byte, n.end_byte)


def _push_defs(stack: list, seen: set, func, name: str, defs: dict) -> None:
    """A name's definitions onto a walk's stack, once per walk and function: the definitions are
    the same for every use of the name, and a chain of n rebindings (`y = y + 1`, n times) pushed
    all of them at each use, n^2 in all (20,000 lines took minutes)."""
    mark = ("defs", id(func), name)
    if mark not in seen:
        seen.add(mark)
        stack.extend(defs[name])


def _paired_value(a, i: int) -> ts.Node | None:
    """The value assignment `a` binds to its i-th target: the whole value for one target, the
    i-th element of a tuple or list value for several (`a, b = x, y`), None where they do not pair."""
    v = a.value
    if v is None or len(a.targets) == 1:
        return v
    kids = [k for k in v.named_children if k.type != "comment"] if v.type in ("tuple", "expression_list", "list") else []
    return kids[i] if len(kids) == len(a.targets) else None


# the callables that bind arguments to a launcher ahead of its calls
PARTIAL = ("functools.partial", "partial")
# methods whose result shares its receiver's storage: a kernel writing the result writes the receiver
VIEWS = frozenset("data_ptr view reshape flatten contiguous squeeze unsqueeze narrow select t transpose "
                  "permute view_as as_strided detach expand".split())


class PyFlow:
    def __init__(self, py: PyFacts, ext_functions: dict[str, str], reference_names: set[str],
                 cflow: "CFlow | None" = None):
        self.py = py
        self.ext_functions = ext_functions  # python-visible extension function -> extension var
        self.ext_vars = {v for v in ext_functions.values()} | {e.var for e in py.extensions if e.var}
        # local functions that return a built extension (`def _ext(): ...; return _EXT`): a call
        # through them (`_ext().run(x)`, `ext = _ext(); ext.run(x)`) is a call into the extension
        self.ext_getters = {fn.name for r, fn in py.returns if fn is not None and r.named_children
                            and text(r.named_children[0]) in self.ext_vars}
        self.reference_names = reference_names
        self.cflow = cflow
        self.triton = set(py.triton_kernels)
        self._call_by_node = {_key(c.node): c for c in py.calls}
        self._summary: dict[str, frozenset[Origin]] = {}
        self._in_progress: set[str] = set()
        self._defs: dict[int, dict[str, list[ts.Node]]] = {}
        self._launches: dict[str, bool] = {}
        self._stored: dict[str, set[str]] = {}
        self._denot: dict[tuple[int, int], frozenset] = {}
        self._targets: dict[tuple[int, int], Func | None] = {}
        self._kernel_written: dict[str, frozenset[str]] = {}
        self._by_byte = {f.node.start_byte: f for f in py.funcs}

    # ---- call classification ----------------------------------------------------
    def call(self, node: ts.Node) -> Call | None:
        return self._call_by_node.get(_key(node))

    def local_target(self, c: Call) -> Func | None:
        """The function of this file that a call runs, if any: by name, as a method or sub-module
        of self, or through what the callee is bound to (an alias, a sub-module kept in a list)."""
        k = _key(c.node)
        if k not in self._targets:
            self._targets[k] = None   # a cycle through bindings resolves to nothing
            t = self._local_target(c)
            if t is None and not c.resolved:
                t = next((self._func_at_byte(d[1]) for d in self._callable(c) if d[0] == "local"), None)
            self._targets[k] = t
        return self._targets[k]

    def _local_target(self, c: Call) -> Func | None:
        py = self.py
        fn = c.node.child_by_field_name("function")
        callee = c.callee
        if fn is not None and fn.type == "identifier":
            cands = [f for f in py.funcs if f.name == callee and f.cls is None and f.parent is None]
            if cands:
                return cands[-1]
            k = py.classes.get(callee)
            if k is not None:
                return k.methods.get("__init__")
        parts = callee.split(".")
        if len(parts) == 2 and parts[0] == "self" and c.func is not None and c.func.cls:
            k = py.classes.get(c.func.cls)
            if k is not None and parts[1] in k.methods:
                return k.methods[parts[1]]
            sub = self.self_attr_class(c.func.cls, parts[1])
            if sub is not None:
                return sub.methods.get("forward")
        if len(parts) == 2 and parts[1] in ("apply", "forward") and parts[0] in py.classes:
            return py.classes[parts[0]].methods.get("forward")
        if len(parts) == 2 and parts[0] in py.classes and parts[1] in py.classes[parts[0]].methods:
            return py.classes[parts[0]].methods[parts[1]]
        return None

    def self_attr_init(self, cls: str | None, attr: str) -> list[ts.Node]:
        if not cls:
            return []
        k = self.py.classes.get(cls)
        if k is None:
            return []
        out = list(k.init_attrs.get(attr, []))
        for b in k.bases:
            if b in self.py.classes and b != cls:
                out.extend(self.self_attr_init(b, attr))
        return out

    def self_attr_class(self, cls: str, attr: str):
        for v in self.self_attr_init(cls, attr):
            if v.type == "call":
                fn = v.child_by_field_name("function")
                name = text(fn)
                if name in self.py.classes:
                    return self.py.classes[name]
        return None

    def self_attr_ctor(self, cls: str | None, attr: str) -> str | None:
        for v in self.self_attr_init(cls, attr):
            if v.type == "call":
                r, _ = self.py.resolve(v.child_by_field_name("function"))
                if r:
                    return r
        return None

    def kind(self, c: Call) -> str:
        callee = c.callee
        if callee.endswith("[]"):
            base = callee[:-2].split(".")[-1]
            if base in self.triton or callee[:-2] in self.triton:
                return CUSTOM
            # a table of launchers or modules (`self._fns[key](x)`, `plan[1]()`)
            ds = self._callable(c)
            if any(d[0] in ("launch", "extfn") for d in ds):
                return CUSTOM
            return "local" if self.local_target(c) is not None else OTHER
        parts = callee.split(".")
        if len(parts) >= 2:
            owner = ".".join(parts[:-1])
            if owner in self.ext_vars or (owner.startswith("self.") and self._self_is_ext(c, parts[1])):
                return CUSTOM
            if self.ext_getters and (owner.endswith("()") and owner[:-2] in self.ext_getters
                                     or owner.isidentifier() and self._ext_alias(c, owner)):
                return CUSTOM
            if parts[-1] in self.ext_functions and not c.resolved:
                return CUSTOM
        if callee in self.ext_functions:
            return CUSTOM
        if parts[0] in self.reference_names or (c.resolved and parts[0] in self.reference_names):
            return REFERENCE
        if c.resolved and torchops.is_torch_name(callee):
            k = torchops.classify(callee)
            if k == "torch-other" and ("nn.functional" in callee or ".ops.aten." in callee):
                return COMPUTE
            return {"torch-heavy": HEAVY, "torch-compute": COMPUTE, "torch-create": CREATE,
                    "torch-glue": GLUE}.get(k, OTHER)
        if len(parts) == 2 and parts[0] == "self" and c.func is not None:
            ctor = self.self_attr_ctor(c.func.cls, parts[1])
            if ctor and torchops.is_torch_name(ctor):
                k = torchops.classify(ctor)
                if k in ("torch-heavy", "torch-compute"):
                    return HEAVY if k == "torch-heavy" else COMPUTE
        if not c.resolved and not callee.endswith("[]") and any(d[0] in ("launch", "extfn") for d in self._callable(c)):
            return CUSTOM
        if self.local_target(c) is not None:
            return "local"
        if not c.resolved and len(parts) >= 2:
            m = parts[-1]
            if m.endswith("_") and m[:-1] in torchops.TENSOR_METHOD_COMPUTE | {"copy", "fill", "zero"}:
                return INPLACE
            if m in torchops.HEAVY:
                return HEAVY
            if m in torchops.TENSOR_METHOD_COMPUTE:
                return COMPUTE
            if m in torchops.CREATE:
                return CREATE
            if m in torchops.GLUE:
                return GLUE
        return OTHER

    def display_name(self, c: Call, kind: str) -> str:
        """`self.conv(x)` is reported as the layer it calls (torch.nn.Conv2d)."""
        parts = c.callee.split(".")
        if kind in (HEAVY, COMPUTE) and len(parts) == 2 and parts[0] == "self" and c.func is not None:
            ctor = self.self_attr_ctor(c.func.cls, parts[1])
            if ctor:
                return ctor
        return c.callee

    def _ext_alias(self, c: Call, name: str) -> bool:
        """`name`, where call `c` uses it, is bound to what an extension getter returns."""
        v = self.py.lookup(name, c.node)
        fn = v.child_by_field_name("function") if v is not None and v.type == "call" else None
        return fn is not None and text(fn) in self.ext_getters

    def _self_is_ext(self, c: Call, attr: str) -> bool:
        if c.func is None:
            return False
        for v in self.self_attr_init(c.func.cls, attr):
            if text(v) in self.ext_vars:
                return True
            if v.type == "call" and any(e.call.node == v for e in self.py.extensions):
                return True
        return False

    # ---- what a callable expression denotes --------------------------------------
    # A denotation is a small tuple: ("ext",) the built extension module; ("extfn", name) one of
    # its functions; ("launch", kernel name, positions bound before the call) a Triton launcher
    # (`kernel[grid]`, a functools.partial of one); ("local", Func) a function of this file;
    # ("inst", class name) an instance of a class of this file (called: its forward);
    # ("box", denotations) a list, tuple, dict, nn.ModuleList or nn.Sequential holding those.
    def _callable(self, c: Call) -> frozenset:
        """What calling `c` runs: the denotations of its callee, instances read as their forward."""
        fn = c.node.child_by_field_name("function")
        if fn is None:
            return frozenset()
        out = set()
        for d in self.denotes(fn, c.func):
            if d[0] == "inst":
                k = self.py.classes.get(d[1])
                m = k.methods.get("forward") if k is not None else None
                if m is not None:
                    out.add(("local", m.node.start_byte))
            elif d[0] != "box":
                out.add(d)
        return frozenset(out)

    def denotes(self, node: ts.Node | None, func: Func | None, depth: int = 0) -> frozenset:
        if node is None or depth > 12:
            return frozenset()
        k = _key(node)
        if k in self._denot:
            return self._denot[k]
        self._denot[k] = frozenset()   # cycles (x = f(x)) resolve to nothing
        res = frozenset(self._denotes(node, func, depth))
        self._denot[k] = res
        return res

    def _denotes(self, node: ts.Node, func: Func | None, depth: int) -> set:
        t = node.type
        py = self.py
        d = depth + 1
        if t in ("parenthesized_expression", "await"):
            kids = [n for n in node.named_children if n.type != "comment"]
            return set(self.denotes(kids[0], func, d)) if kids else set()
        if t == "conditional_expression":
            kids = node.named_children
            return set().union(*(self.denotes(n, func, d) for n in (kids[0], kids[2]))) if len(kids) == 3 else set()
        if t in ("list", "tuple", "set"):
            inner = set().union(*(self.denotes(n, func, d) for n in node.named_children if n.type != "comment"))
            return {("box", frozenset(inner))} if inner else set()
        if t == "dictionary":
            vals = [p.child_by_field_name("value") for p in node.named_children if p.type == "pair"]
            inner = set().union(*(self.denotes(v, func, d) for v in vals))
            return {("box", frozenset(inner))} if inner else set()
        if t in ("list_comprehension", "generator_expression", "set_comprehension"):
            body = node.child_by_field_name("body")
            inner = self.denotes(body, func, d)
            return {("box", inner)} if inner else set()
        if t == "lambda":
            body = node.child_by_field_name("body")
            for n in (walk(body) if body is not None else ()):
                if n.type == "call":
                    c = self.call(n)
                    if c is not None and (self.kind(c) == CUSTOM or c.callee.endswith("[]") and self._is_triton_subscript(
                            n.child_by_field_name("function"))):
                        return {("launch", None, 0)}
            return set()
        if t == "subscript":
            base = node.child_by_field_name("value")
            if self._is_triton_subscript(node):
                return {("launch", text(base).split(".")[-1], 0)}
            return set().union(*(b[1] for b in self.denotes(base, func, d) if b[0] == "box")) if base is not None else set()
        if t == "call":
            return self._denotes_call(node, func, d)
        if t == "identifier":
            return self._denotes_name(node, func, d)
        if t == "attribute":
            obj = node.child_by_field_name("object")
            attr = text(node.child_by_field_name("attribute"))
            if obj is not None and text(obj) == "self" and func is not None and func.cls:
                return self._denotes_self_attr(func.cls, attr, d)
            if obj is not None and obj.type == "identifier" and text(obj) in py.classes and attr in ("apply", "forward"):
                # `Fn.apply` of a local autograd.Function (kept as `self.op = Fn.apply`) runs its forward
                m = py.classes[text(obj)].methods.get("forward")
                return {("local", m.node.start_byte)} if m is not None else set()
            outer = self.denotes(obj, func, d)
            if ("ext",) in outer:
                return {("extfn", attr)}
            out = set()
            for o in outer:   # a method of a sub-module held by value
                if o[0] == "inst" and o[1] in py.classes and attr in py.classes[o[1]].methods:
                    out.add(("local", py.classes[o[1]].methods[attr].node.start_byte))
            return out
        return set()

    def _func_at_byte(self, start: int) -> Func | None:
        return self._by_byte.get(start)

    def _is_triton_subscript(self, node: ts.Node | None) -> bool:
        if node is None or node.type != "subscript":
            return False
        base = node.child_by_field_name("value")
        return base is not None and (text(base) in self.triton or text(base).split(".")[-1] in self.triton)

    def _denotes_call(self, node: ts.Node, func: Func | None, d: int) -> set:
        py = self.py
        if any(e.call.node == node for e in py.extensions):
            return {("ext",)}
        fn = node.child_by_field_name("function")
        if fn is None:
            return set()
        args = node.child_by_field_name("arguments")
        pos = [a for a in (args.named_children if args is not None else []) if a.type not in ("keyword_argument", "comment")]
        r, _ = py.resolve(fn)
        name = r or text(fn)
        if name in PARTIAL and pos:
            out = set()
            for x in self.denotes(pos[0], func, d):
                if x[0] == "launch":
                    out.add(("launch", x[1], x[2] + len(pos) - 1))
                elif x[0] in ("extfn", "local"):
                    out.add(x)
            return out
        if name.split(".")[-1] in ("ModuleList", "Sequential", "ModuleDict", "list", "tuple") and \
                (name.startswith(("torch.nn", "nn.")) or name in ("list", "tuple")):
            inner = set()
            for a in pos:
                for x in self.denotes(a, func, d):
                    inner |= set(x[1]) if x[0] == "box" else {x}
            return {("box", frozenset(inner))} if inner else set()
        if fn.type == "identifier" and text(fn) in py.classes:
            return {("inst", text(fn))}
        c = self.call(node)
        if c is None or c.resolved:
            return set()
        # what a local function returns: `_ext()`, `_ensure_module()`, `_make_launcher(...)`
        out = set()
        for x in self._callable(c):
            g = self._func_at_byte(x[1]) if x[0] == "local" else None
            if g is not None and g.name != "__init__":
                for v in self.return_values(g):
                    out |= self.denotes(v, g, d)
        return out

    def _denotes_name(self, node: ts.Node, func: Func | None, d: int) -> set:
        py = self.py
        name = text(node)
        if name in self.ext_vars:
            return {("ext",)}
        if name in py.classes:
            return set()
        out = set()
        fn = func
        while fn is not None:    # the function's own bindings, then the enclosing functions'
            vals = self.bindings(name, fn)
            if vals:
                for v, owner in vals:
                    out |= self.denotes(v, owner, d)
                out |= self._loop_element(node, name, fn, d)
                return out
            loop = self._loop_element(node, name, fn, d)
            if loop:
                return loop
            if name in fn.params:
                # a parameter called here (`fn(*args)`) runs what the calls of this function pass
                called = node.parent is not None and node.parent.type == "call" and \
                    node.parent.child_by_field_name("function") == node
                return self._param_denotations(fn, name, d) if called else set()
            inner = [g for g in py.funcs if g.parent is fn and g.name == name]
            if inner:
                return {("local", inner[-1].node.start_byte)}
            fn = fn.parent
        tops = [g for g in py.funcs if g.name == name and g.cls is None and g.parent is None]
        if tops:
            return {("local", tops[-1].node.start_byte)}
        for v in py.module_bindings.get(name, []):
            out |= self.denotes(v, None, d)
        # a module-level name assigned inside a function that declares it `global`
        for gname, _, gfn in py.globals_declared:
            if gname == name and gfn is not None:
                for v, owner in self.bindings(name, gfn):
                    out |= self.denotes(v, owner, d)
        return out

    def _param_denotations(self, fn: Func, name: str, d: int) -> set:
        """A callable parameter (`def launch(fn, args): return fn(*args)`): what this file's calls
        of the function pass for it, by keyword or position."""
        if d > 8:
            return set()
        idx = fn.params.index(name)
        out: set = set()
        for c in self.py.calls:
            if c.func is None or c.callee.rsplit(".", 1)[-1] != fn.name or self.local_target(c) is not fn:
                continue
            arg = c.kwarg(name)
            if arg is None:
                bound = 1 if fn.cls is not None and fn.params[:1] in (["self"], ["cls"]) and "." in c.callee else 0
                args = c.args
                pos = idx - bound
                arg = args[pos] if 0 <= pos < len(args) and args[pos].type not in ("list_splat", "dictionary_splat") \
                    else None
            if arg is not None:
                out |= self.denotes(arg, c.func, d)
        return out

    def bindings(self, name: str, fn: Func) -> list[tuple[ts.Node, Func]]:
        """Values bound to a plain name in one function, a tuple target paired by position."""
        out = []
        for a in self.py.assigns:
            if a.func is not fn or a.value is None or a.augmented:
                continue
            for i, t in enumerate(a.targets):
                if t.type == "identifier" and text(t) == name:
                    v = _paired_value(a, i)
                    if v is not None:
                        out.append((v, fn))
        return out

    def _loop_element(self, node: ts.Node, name: str, fn: Func, d: int) -> set:
        """`for layer in self.layers:` / `for i, layer in enumerate(...)`: what the list holds."""
        p = node.parent
        while p is not None and p is not fn.node:
            if p.type == "for_statement":
                left, right = p.child_by_field_name("left"), p.child_by_field_name("right")
                if left is not None and right is not None:
                    it = right
                    ok = left.type == "identifier" and text(left) == name
                    if not ok and left.type in ("pattern_list", "tuple_pattern") and right.type == "call" \
                            and text(right.child_by_field_name("function")) == "enumerate":
                        kids = [k for k in left.named_children if k.type == "identifier"]
                        ok = len(kids) == 2 and text(kids[1]) == name
                        ra = right.child_by_field_name("arguments")
                        it = ra.named_children[0] if ra is not None and ra.named_children else None
                    if ok and it is not None:
                        return set().union(*(b[1] for b in self.denotes(it, fn, d) if b[0] == "box"))
            p = p.parent
        return set()

    def _denotes_self_attr(self, cls: str, attr: str, d: int) -> set:
        py = self.py
        k = py.classes.get(cls)
        if k is None:
            return set()
        if attr in k.methods:
            return {("local", k.methods[attr].node.start_byte)}
        out = set()
        for a in py.assigns:
            if a.value is None or a.augmented or a.func is None or a.func.cls not in ({cls} | set(k.bases)):
                continue
            for i, t in enumerate(a.targets):
                if t.type == "attribute" and text(t.child_by_field_name("object")) == "self" \
                        and text(t.child_by_field_name("attribute")) == attr:
                    v = _paired_value(a, i)
                    if v is not None:
                        out |= self.denotes(v, a.func, d)
        for c in py.calls:   # self.add_module("name", Sub()) / setattr(self, "name", ...)
            if c.func is not None and c.func.cls == cls and c.method in ("add_module", "register_module", "setattr"):
                a = c.args
                if len(a) >= 2 and text(a[-2]).strip("\"'") == attr:
                    out |= self.denotes(a[-1], c.func, d)
        return out

    def launch_written_args(self, c: Call) -> set[int] | None:
        """Positions of a launch's arguments that the kernel stores to (None: unknown): a Triton
        launch written `kernel[grid](...)` or through a launcher bound to it (functools.partial)."""
        if c.callee.endswith("[]"):
            return self.triton_written_args(c)
        if self.cflow is not None:
            names = {c.callee.split(".")[-1]} if c.callee.split(".")[-1] in self.ext_functions else set()
            names |= {x[1] for x in self._callable(c) if x[0] == "extfn"}
            if len(names) == 1:
                host = self.cflow.host_for(names.pop())
                if host is not None:
                    return self.cflow.written_params(host)
        ds = [x for x in self._callable(c) if x[0] == "launch"]
        if len(ds) != 1 or ds[0][1] is None:
            return None
        k = self.py.triton_kernels.get(ds[0][1])
        if k is None:
            return None
        stored = self.triton_stored_params(k)
        skip = ds[0][2]
        return {i - skip for i, p in enumerate(k.params) if p in stored and i >= skip}

    def kernel_written_attrs(self, cls: str | None) -> frozenset[str]:
        """Attributes of self that a kernel writes anywhere in the class: passed to a launch or an
        extension call directly, as `self.X.data_ptr()`, or through a local alias
        (`out = self._out; kernel[grid](x, out)`, `a, b = self._a, self._b`)."""
        if not cls:
            return frozenset()
        if cls in self._kernel_written:
            return self._kernel_written[cls]
        self._kernel_written[cls] = frozenset()
        out: set[str] = set()
        for fn in self.py.funcs:
            if fn.cls != cls and not (fn.parent is not None and fn.parent.cls == cls):
                continue
            for c in self.py.calls_in(fn):
                out |= self._partial_bound_written(c, fn)
                k = self.kind(c)
                if not (k == CUSTOM or k == "local" and self.launches_custom(self.local_target(c))):
                    continue
                written = self.launch_written_args(c)
                for i, a in enumerate(self._spread_args(c)):
                    if written is not None and i not in written:
                        continue
                    root = self._storage_root(a, fn)
                    if root:
                        out.add(root)
        # an attribute bound to what a launching call returns, in any method
        # (`self.static_out = fused_op(...)` inside a graph capture)
        for a in self.py.assigns:
            if a.value is None or a.func is None or a.func.cls != cls:
                continue
            for i, t in enumerate(a.targets):
                v = _paired_value(a, i)
                if v is None or t.type != "attribute" or text(t.child_by_field_name("object")) != "self" \
                        or v.type != "call":
                    continue
                c = self.call(v)
                if c is None:
                    continue
                k = self.kind(c)
                if k == CUSTOM or k == "local" and self.launches_custom(self.local_target(c)):
                    out.add(text(t.child_by_field_name("attribute")))
        # an attribute holding such buffers (`self._ret = (self._vals, self._idx)`)
        for _ in range(2):
            for a in self.py.assigns:
                if a.value is None or a.func is None or a.func.cls != cls or a.value.type not in ("tuple", "list"):
                    continue
                kids = [self._storage_root(k, a.func) for k in a.value.named_children if k.type != "comment"]
                if any(r in out for r in kids if r):
                    for t in a.targets:
                        if t.type == "attribute" and text(t.child_by_field_name("object")) == "self":
                            out.add(text(t.child_by_field_name("attribute")))
        res = frozenset(out)
        self._kernel_written[cls] = res
        return res

    def partial_args(self, node: ts.Node) -> list[ts.Node] | None:
        """The positional arguments of a `functools.partial(...)` call, the callable first; None
        for any other node."""
        fnode = node.child_by_field_name("function") if node.type == "call" else None
        if fnode is None:
            return None
        r, _ = self.py.resolve(fnode)
        if (r or text(fnode)) not in PARTIAL:
            return None
        args = node.child_by_field_name("arguments")
        return [a for a in (args.named_children if args is not None else []) if a.type not in ("keyword_argument", "comment")]

    def _partial_bound_written(self, c: Call, fn: Func) -> set[str]:
        """Attributes of self bound into a launcher (`functools.partial(kernel[grid], x, self._out)`)
        at parameters the kernel stores to: every replay of the launcher writes them."""
        pos = self.partial_args(c.node)
        if not pos or len(pos) < 2:
            return set()
        out = set()
        for d in self.denotes(pos[0], fn):
            k = self.py.triton_kernels.get(d[1]) if d[0] == "launch" and d[1] else None
            if k is None:
                continue
            stored = self.triton_stored_params(k)
            for j, a in enumerate(pos[1:]):
                i = d[2] + j
                if i < len(k.params) and k.params[i] in stored:
                    root = self._storage_root(a, fn)
                    if root:
                        out.add(root)
        return out

    def extension_functions_called(self) -> set[str]:
        """Names of extension functions some call of the file runs, through aliases too
        (`_run = _ext.run; _run(...)`)."""
        out = set()
        for c in self.py.calls:
            out.add(c.callee.split(".")[-1])
            if not c.resolved:
                out |= {d[1] for d in self._callable(c) if d[0] == "extfn"}
        return out

    def _storage_root(self, a: ts.Node, fn: Func, depth: int = 0) -> str | None:
        """The self attribute whose storage an argument is: self.X, self.X.data_ptr(),
        self.X.view(...), or a local bound to one of these."""
        while a is not None and a.type == "call":
            f = a.child_by_field_name("function")
            if f is None or f.type != "attribute" or text(f.child_by_field_name("attribute")) not in VIEWS:
                return None
            a = f.child_by_field_name("object")
        if a is None:
            return None
        if a.type == "attribute" and text(a.child_by_field_name("object")) == "self":
            return text(a.child_by_field_name("attribute"))
        if a.type == "identifier" and depth < 3:
            roots = {self._storage_root(v, owner, depth + 1) for v, owner in self.bindings(text(a), fn)}
            if len(roots) == 1:
                return roots.pop()
        return None

    # ---- definitions -----------------------------------------------------------
    def defs(self, func: Func) -> dict[str, list[ts.Node]]:
        key = func.node.start_byte
        if key in self._defs:
            return self._defs[key]
        d: dict[str, list[ts.Node]] = {}
        for a in self.py.assigns:
            if a.func is not func or a.value is None:
                continue
            for t in a.targets:
                if t.type in ("identifier", "attribute"):
                    d.setdefault(text(t), []).append(a.node if a.augmented else a.value)
        for st, fn in self.py.subscript_writes:
            if fn is func:
                base = st.child_by_field_name("value")
                asg = st.parent
                if base is not None and asg is not None and asg.child_by_field_name("right") is not None:
                    d.setdefault(text(base), []).append(asg.child_by_field_name("right"))
        for c in self.py.calls:
            if c.func is not func:
                continue
            k = self.kind(c)
            writes = k == CUSTOM or (k == "local" and self.launches_custom(self.local_target(c)))
            statement = c.node.parent is not None and c.node.parent.type == "expression_statement"
            if writes and (statement or c.callee.endswith("[]")):
                written = self.launch_written_args(c) if k == CUSTOM else None
                for i, a in enumerate(self._spread_args(c)):
                    if written is not None and i not in written:
                        continue
                    if a.type in ("identifier", "attribute"):
                        d.setdefault(text(a), []).append(c.node)
                    elif a.type == "call":  # out.data_ptr(), out.view(-1)
                        inner = a.child_by_field_name("function")
                        if inner is not None and inner.type == "attribute":
                            obj = inner.child_by_field_name("object")
                            if obj is not None and obj.type in ("identifier", "attribute"):
                                d.setdefault(text(obj), []).append(c.node)
            if k == INPLACE or c.method in ("copy_", "fill_", "zero_"):
                fn = c.node.child_by_field_name("function")
                obj = fn.child_by_field_name("object") if fn is not None and fn.type == "attribute" else None
                if obj is not None and obj.type in ("identifier", "attribute"):
                    d.setdefault(text(obj), []).append(c.node)
            out = c.kwarg("out")
            if out is not None and out.type in ("identifier", "attribute"):
                d.setdefault(text(out), []).append(c.node)
            if c.method in ("append", "extend", "insert") and c.args:
                # a list filled in a loop (`parts.append(out)`, then `parts[0] + parts[1]`):
                # what goes in is what the list holds
                fn = c.node.child_by_field_name("function")
                obj = fn.child_by_field_name("object") if fn is not None and fn.type == "attribute" else None
                if obj is not None and obj.type in ("identifier", "attribute"):
                    d.setdefault(text(obj), []).append(c.args[-1])
        self._defs[key] = d
        return d

    def _spread_args(self, c: Call) -> list[ts.Node]:
        """A call's positional arguments with `*args` spread where `args` is bound, before the
        call, to a tuple or list literal (launch arguments gathered in one tuple)."""
        out: list[ts.Node] = []
        for a in c.args:
            if a.type == "list_splat":
                name = next((k for k in a.named_children if k.type == "identifier"), None)
                lit = self.py.lookup(text(name), c.node) if name is not None else None
                if lit is None or lit.type not in ("tuple", "list"):
                    return out + [a]   # positions after an unknown spread are unknown
                out.extend(k for k in lit.named_children if k.type != "comment")
                continue
            out.append(a)
        return out

    def triton_written_args(self, c: Call) -> set[int] | None:
        """Positions of launch arguments the Triton kernel stores to (None: unknown)."""
        name = c.callee[:-2].split(".")[-1]
        k = self.py.triton_kernels.get(name)
        if k is None:
            return None
        stored = self.triton_stored_params(k)
        return {i for i, p in enumerate(k.params) if p in stored}

    def triton_stored_params(self, k: Func) -> set[str]:
        """Kernel parameters that tl.store / tl.atomic_* write through."""
        if k.qualname not in self._stored:
            self._stored[k.qualname] = self._triton_stored_params(k)
        return self._stored[k.qualname]

    def _triton_stored_params(self, k: Func) -> set[str]:
        out: set[str] = set()
        self._stored[k.qualname] = out   # a jit function calling itself back sees what is known so far
        kernels = self.py.triton_kernels
        for c in self.py.calls_in(k):
            # a @triton.jit helper the kernel calls: what it stores through, the kernel stores through
            g = kernels.get(c.callee) if c.node.child_by_field_name("function") is not None and \
                c.node.child_by_field_name("function").type == "identifier" else None
            if g is not None and g is not k:
                inner = self.triton_stored_params(g)
                params = list(g.params)
                for i, a in enumerate(c.args):
                    if i < len(params) and params[i] in inner:
                        out |= {o.name for o in self.origins(k, a) if o.kind == PARAM}
                for p in inner:
                    v = c.kwarg(p)
                    if v is not None:
                        out |= {o.name for o in self.origins(k, v) if o.kind == PARAM}
        for c in self.py.calls_in(k):
            if c.method in ("store", "atomic_add", "atomic_max", "atomic_min", "atomic_xchg", "atomic_cas",
                            "atomic_and", "atomic_or", "atomic_xor") and c.args:
                # block pointers (tl.make_block_ptr(base=out_ptr, ...)) resolve to their base here
                for o in self.origins(k, c.args[0]):
                    if o.kind == PARAM:
                        out.add(o.name)
        return out

    def launches_custom(self, func: Func | None, depth: int = 0) -> bool:
        if func is None or depth > 6:
            return False
        if func.qualname in self._launches:
            return self._launches[func.qualname]
        self._launches[func.qualname] = False
        res = False
        for c in self.py.calls_in(func):
            k = self.kind(c)
            if k == CUSTOM or (k == "local" and self.launches_custom(self.local_target(c), depth + 1)):
                res = True
                break
        for inner in self.py.funcs:
            if inner.parent is func and self.launches_custom(inner, depth + 1):
                res = True
        self._launches[func.qualname] = res
        return res

    # ---- origins ---------------------------------------------------------------
    def origins(self, func: Func, node: ts.Node, _seen: set | None = None, depth: int = 0) -> set[Origin]:
        seen = _seen if _seen is not None else set()
        out: set[Origin] = set()
        stack = [node]
        defs = self.defs(func)
        while stack:
            n = stack.pop()
            k = _key(n)
            if k in seen:
                continue
            seen.add(k)
            t = n.type
            if t == "identifier":
                name = text(n)
                if name in func.params and name != "self":
                    out.add(Origin(PARAM, name, n))
                if name in defs:
                    _push_defs(stack, seen, func, name, defs)
                elif name in func.params:
                    pass
                elif func.parent is not None:
                    out |= self.origins(func.parent, n, seen, depth + 1)
                elif name in ("None", "True", "False"):
                    out.add(Origin(LITERAL, name, n))
                else:
                    out.add(Origin(GLOBAL, name, n))
                continue
            if t == "attribute":
                name = text(n)
                obj = n.child_by_field_name("object")
                attr = text(n.child_by_field_name("attribute"))
                on_self = obj is not None and text(obj) == "self"
                in_defs = name in defs
                if in_defs:
                    _push_defs(stack, seen, func, name, defs)
                elif attr in METADATA:
                    continue
                if on_self and attr in self.kernel_written_attrs(func.cls or (func.parent.cls if func.parent else None)):
                    # a buffer a kernel of this class writes (in another method, through an alias)
                    out.add(Origin(CUSTOM, f"self.{attr}", n))
                if in_defs:
                    continue
                if on_self:
                    out.add(Origin(SELF_ATTR, attr, n))
                    continue
                if obj is not None:
                    stack.append(obj)
                continue
            if t in ("integer", "float", "string", "true", "false", "none"):
                out.add(Origin(LITERAL, text(n)[:40], n))
                continue
            if t == "call":
                c = self.call(n)
                if c is None:
                    stack.extend(n.named_children)
                    continue
                kind = self.kind(c)
                if kind == "local":
                    target = self.local_target(c)
                    summ = self.summary(target, depth + 1) if target is not None else frozenset()
                    out |= {o for o in summ if o.kind != PARAM}
                    if any(o.kind in (PARAM, SELF_ATTR) for o in summ) or not summ:
                        stack.extend(c.args)
                    if target is not None and self.launches_custom(target):
                        out.add(Origin(CUSTOM, c.callee, n))
                    continue
                out.add(Origin(kind, self.display_name(c, kind), n))
                fn = n.child_by_field_name("function")
                if fn is not None and fn.type == "attribute" and not c.resolved:
                    stack.append(fn.child_by_field_name("object"))
                args = n.child_by_field_name("arguments")
                if args is not None:
                    for a in args.named_children:
                        stack.append(a.child_by_field_name("value") if a.type == "keyword_argument" else a)
                continue
            if t == "binary_operator":
                op = n.child_by_field_name("operator")
                ot = text(op) if op is not None else ""
                if ot == "@":
                    out.add(Origin(HEAVY, "torch.matmul(@)", n))
                elif ot in ARITH and not all(_scalar_operand(c) for c in n.named_children):
                    out.add(Origin(COMPUTE, f"operator{ot}", n))
            if t == "augmented_assignment":
                right = n.child_by_field_name("right")
                op = text(n.child_by_field_name("operator")).rstrip("=")
                if op in ARITH and right is not None and not _scalar_operand(right):
                    out.add(Origin(COMPUTE, f"operator{op}=", n))
                elif op == "@":
                    out.add(Origin(HEAVY, "torch.matmul(@=)", n))
                if right is not None:
                    stack.append(right)
                continue
            if t in ("lambda", "comment"):
                continue
            if t == "subscript":
                # x[a:b] holds x's values: the bounds of a slice are sizes, not data (an index
                # tensor, x[idx], is data and is followed)
                stack.extend(c for c in n.named_children if c is not None and c.type != "slice")
                continue
            stack.extend(c for c in n.named_children if c is not None)
        return out

    def input_params(self, func: Func, node: ts.Node, forward: Func, depth: int = 0) -> set[str]:
        """The parameters of `forward` whose tensor values flow into `node` in `func`: a parameter
        of a helper is followed to the arguments its callers in this file pass for it (a size
        unpacked from `x.shape`, a `device` argument, a dtype carry no tensor values and end the
        trail); a helper nobody in the file calls counts its parameters as inputs."""
        out: set[str] = set()
        for o in self.origins(func, node):
            if o.kind != PARAM:
                continue
            if func is forward:
                out.add(o.name)
                continue
            if depth > 3:
                out.add(o.name)
                continue
            sites = [c for c in self.py.calls if c.func is not None and self.local_target(c) is func]
            if not sites:
                out.add(o.name)
                continue
            params = [p for p in func.params if p != "self"]
            for c in sites:
                arg = c.kwarg(o.name)
                if arg is None and o.name in params:
                    i = params.index(o.name)
                    spread = self._spread_args(c)
                    if any(a.type == "list_splat" for a in spread[:i + 1]):
                        out.add(o.name)
                        continue
                    arg = spread[i] if i < len(spread) else None
                if arg is not None:
                    out |= self.input_params(c.func, arg, forward, depth + 1)
        return out

    def return_values(self, func: Func) -> list[ts.Node]:
        vals = []
        for r, fn in self.py.returns:
            if fn is func:
                v = r.named_children[0] if r.named_children else None
                if v is not None:
                    vals.append(v)
        return vals

    def summary(self, func: Func, depth: int = 0) -> frozenset[Origin]:
        q = func.qualname
        if q in self._summary:
            return self._summary[q]
        if q in self._in_progress or depth > 8:
            return frozenset()
        self._in_progress.add(q)
        out: set[Origin] = set()
        for v in self.return_values(func):
            out |= self.origins(func, v, None, depth)
        self._in_progress.discard(q)
        res = frozenset(out)
        self._summary[q] = res
        return res

    def reachable(self, func: Func, depth: int = 0, seen: set | None = None) -> list[Func]:
        """func and every local function/method it calls, transitively."""
        seen = seen if seen is not None else set()
        if func.qualname in seen or depth > 10:
            return []
        seen.add(func.qualname)
        out = [func]
        for c in self.py.calls_in(func):
            t = self.local_target(c)
            if t is not None:
                out.extend(self.reachable(t, depth + 1, seen))
        for inner in self.py.funcs:
            if inner.parent is func:
                out.extend(self.reachable(inner, depth + 1, seen))
        return out


# ---------------------------------------------------------------------------------
ATEN_PREFIXES = ("at::", "torch::", "c10::")


def c_kind(callee: str) -> str:
    """Classify a C++ call: ATen/torch compute, creation, glue, or other."""
    if callee.startswith(ATEN_PREFIXES) or callee.startswith("."):
        name = callee.rsplit("::", 1)[-1].lstrip(".")
        if name.startswith("at_") or name.startswith("_"):
            name = name.lstrip("_")
        k = torchops.classify(name)
        if k in ("torch-heavy",):
            return HEAVY
        if k == "torch-compute":
            return COMPUTE
        if k == "torch-create":
            return CREATE
        if k == "torch-glue":
            return GLUE
        if callee.startswith(ATEN_PREFIXES) and "::nn::functional::" in callee:
            return COMPUTE
        return OTHER
    low = callee.lower()
    if low.startswith(("cublas", "cublaslt", "cudnn", "cutlass")):
        return "library"
    return OTHER


class CFlow:
    """Origins of values returned by C++ host functions, across the units of one extension."""

    def __init__(self, units: list[CudaFacts]):
        self.units = units
        self.funcs: dict[str, tuple[CudaFacts, CFunc]] = {}
        for u in units:
            for f in u.funcs:
                if f.kind == "host" and f.node.child_by_field_name("body") is not None:
                    self.funcs[f.name] = (u, f)
        self._summary: dict[str, frozenset[Origin]] = {}

    def defs(self, unit: CudaFacts, fn: CFunc) -> dict[str, list[ts.Node]]:
        d: dict[str, list[ts.Node]] = {}
        for name, val, f in unit.decls:
            if f is fn:
                d.setdefault(name, []).append(val)
        for n, f in unit.assigns:
            if f is fn:
                lhs = n.child_by_field_name("left")
                if lhs is not None and lhs.type == "identifier":
                    d.setdefault(text(lhs), []).append(n.child_by_field_name("right"))
        for l in unit.launches:
            if l.func is fn:
                for a in l.args:
                    for ident in _identifiers(a):
                        d.setdefault(ident, []).append(l.node)
        for c in unit.calls:
            if c.func is fn and c.receiver and c.callee.endswith("_") and c.callee.startswith("."):
                d.setdefault(c.receiver, []).append(c.node)
            if c.func is fn and c.callee in self.funcs and self.launches(c.callee):
                args = c.node.child_by_field_name("arguments")
                for a in (args.named_children if args is not None else []):
                    for ident in _identifiers(a):
                        d.setdefault(ident, []).append(c.node)
        return d

    def host_for(self, pyname: str) -> str | None:
        """The C++ host function a Python-visible extension name is bound to."""
        for u in self.units:
            target = u.bindings.get(pyname, pyname)
            if target in self.funcs:
                return target
        return None

    def kernel_stored_params(self, kernel: str) -> set[int] | None:
        """Positions of a CUDA kernel's parameters that it stores to (plain or atomic), or None
        where a write could hide from the store list (inline asm, a device helper handed a
        pointer, a bulk copy, a store through a pointer not named by a parameter)."""
        for u in self.units:
            k = next((f for f in u.funcs if f.name == kernel and f.kind == "global"), None)
            if k is None:
                continue
            names = [p.name for p in k.params]
            stores = [st for st in u.stores if st.func is k]
            body = u.code_of(k.node)   # a comment naming `asm` or `store` is no write
            if not stores or "asm" in body or any(w in body for w in ("memcpy", "cp_async", "cp.async", "__stcs",
                                                                      "__stwt", "__stcg", "store", "tma")):
                return None
            device = {f.name for f in u.funcs if f.kind == "device"}
            if any(c.func is k and c.callee in device for c in u.calls):
                return None
            if any(st.base not in names for st in stores):
                return None
            return {names.index(st.base) for st in stores}
        return None

    def written_params(self, host: str, depth: int = 0) -> set[int] | None:
        """Positions of a host function's parameters that its kernels (or in-place ATen calls,
        or host functions it calls) write, or None where that cannot be told."""
        if host not in self.funcs or depth > 4:
            return None
        u, f = self.funcs[host]
        if not self.launches(host):
            return None   # what it does with the pointers it is given (a plan, a static) is not seen
        names = [p.name for p in f.params]
        d = self.defs(u, f)
        out: set[int] = set()

        def roots(ident: str, k: int = 0) -> set[int] | None:
            if ident in names:
                return {names.index(ident)}
            if k > 3 or ident not in d:
                return None
            acc: set[int] = set()
            for v in d[ident]:
                if v is None:
                    continue
                if v.type == "call_expression" and c_kind(text(v.child_by_field_name("function") or v)) == CREATE:
                    continue      # a fresh tensor made here
                if any(_key(v) == _key(l.node) for l in u.launches) or v.type == "call_expression" and any(
                        _key(v) == _key(c.node) for c in u.calls if c.callee in self.funcs):
                    continue      # the def a launch itself adds for its arguments
                ids = list(_identifiers(v))
                if not ids:
                    if v.type in ("number_literal", "null", "nullptr"):
                        continue
                    return None
                for i in ids:
                    r = roots(i, k + 1)
                    if r is None:
                        return None
                    acc |= r
            return acc

        def roots_of(node: ts.Node) -> set[int] | None:
            acc: set[int] = set()
            for ident in _identifiers(node):
                r = roots(ident)
                if r is None:
                    return None
                acc |= r
            return acc

        for l in u.launches:
            if l.func is not f:
                continue
            stored = self.kernel_stored_params(l.kernel)
            if stored is None:
                return None
            for i, a in enumerate(l.args):
                if i in stored:
                    r = roots_of(a)
                    if r is None:
                        return None
                    out |= r
        for c in u.calls:
            if c.func is not f:
                continue
            if c.receiver and c.callee.endswith("_") and c.callee.startswith("."):
                r = roots(c.receiver.rstrip(".").rstrip("->"))
                if r is None:
                    return None
                out |= r
            if c.callee in self.funcs and c.callee != host and self.launches(c.callee):
                inner = self.written_params(c.callee, depth + 1)
                if inner is None:
                    return None
                args = c.node.child_by_field_name("arguments")
                kids = list(args.named_children) if args is not None else []
                for i in inner:
                    if i < len(kids):
                        r = roots_of(kids[i])
                        if r is None:
                            return None
                        out |= r
            if c.callee.startswith(("cudaMemcpy", "cudaMemset", "cublas", "cublasLt", "cudnn", "cudaLaunch",
                                    "cuLaunch", "cudaGraphLaunch")) or "out" in c.callee.rsplit("::", 1)[-1]:
                return None   # a library writes what its arguments point at
        return out

    def launches(self, name: str, depth: int = 0) -> bool:
        if name not in self.funcs or depth > 6:
            return False
        u, f = self.funcs[name]
        if any(l.func is f for l in u.launches):
            return True
        return any(c.func is f and c.callee in self.funcs and c.callee != name and self.launches(c.callee, depth + 1)
                   for c in u.calls)

    def summary(self, name: str, depth: int = 0) -> frozenset[Origin]:
        if name in self._summary:
            return self._summary[name]
        if name not in self.funcs or depth > 6:
            return frozenset()
        self._summary[name] = frozenset()
        u, f = self.funcs[name]
        d = self.defs(u, f)
        params = {p.name for p in f.params}
        out: set[Origin] = set()
        seen: set = set()
        stack = [r.named_children[0] for r, fn in u.returns if fn is f and r.named_children]
        launch_nodes = {_key(l.node): l for l in u.launches if l.func is f}
        call_nodes = {_key(c.node): c for c in u.calls if c.func is f}
        while stack:
            n = stack.pop()
            k = _key(n)
            if k in seen:
                continue
            seen.add(k)
            if n.type == "identifier":
                nm = text(n)
                if nm in d:
                    stack.extend(d[nm])
                elif nm in params:
                    out.add(Origin(PARAM, nm, n))
                continue
            if n.type == "call_expression":
                if k in launch_nodes:
                    out.add(Origin(CUSTOM, launch_nodes[k].kernel, n))
                    continue
                c = call_nodes.get(k)
                if c is not None:
                    if c.callee in self.funcs:
                        out |= self.summary(c.callee, depth + 1)
                        if self.launches(c.callee):
                            out.add(Origin(CUSTOM, c.callee, n))
                    else:
                        kind = c_kind(c.callee)
                        out.add(Origin(kind, (c.receiver + c.callee) if c.receiver else c.callee, n))
                    if c.receiver is not None:
                        fnode = n.child_by_field_name("function")
                        obj = fnode.child_by_field_name("argument") if fnode is not None else None
                        if obj is not None:
                            stack.append(obj)
                args = n.child_by_field_name("arguments")
                if args is not None:
                    stack.extend(args.named_children)
                continue
            if n.type in ("number_literal", "string_literal"):
                out.add(Origin(LITERAL, text(n)[:40], n))
                continue
            stack.extend(n.named_children)
        res = frozenset(out)
        self._summary[name] = res
        return res


def _identifiers(node: ts.Node) -> Iterable[str]:
    """Base identifiers in a launch argument: out.data_ptr<float>() -> out; (float*)p -> p."""
    n = node
    while n is not None:
        if n.type == "identifier":
            yield text(n)
            return
        if n.type == "call_expression":
            fn = n.child_by_field_name("function")
            if fn is not None and fn.type == "field_expression":
                n = fn.child_by_field_name("argument")
                continue
            args = n.child_by_field_name("arguments")
            # data_ptr(out) style helpers: follow the first argument
            n = args.named_children[0] if args is not None and args.named_children else None
            continue
        if n.type in ("cast_expression",):
            n = n.child_by_field_name("value")
            continue
        if n.type in ("parenthesized_expression", "pointer_expression", "field_expression"):
            n = n.named_children[0] if n.named_children else None
            continue
        return
