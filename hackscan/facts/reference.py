"""Facts about the reference (KernelBench `Model`, `get_inputs`, `get_init_inputs`):
its input dimensions, module constants, parameters, input dtypes and the torch ops of
its forward, for rules that compare the candidate against what the benchmark computes."""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

from hackscan.facts import torchops
from hackscan.facts.python import PyFacts
from hackscan.parse.trees import text, walk


@dataclass
class ReferenceFacts:
    py: PyFacts
    constants: dict[str, float] = field(default_factory=dict)
    dims: set[int] = field(default_factory=set)
    input_dtypes: set[str] = field(default_factory=set)
    input_generators: set[str] = field(default_factory=set)
    ops: set[str] = field(default_factory=set)            # canonical op names in forward
    heavy_ops: set[str] = field(default_factory=set)
    layers: dict[str, str] = field(default_factory=dict)  # attr -> torch ctor
    parameters: set[str] = field(default_factory=set)
    dtypes: set[str] = field(default_factory=set)         # every dtype its inputs, model and output name

    @property
    def contract_rank(self) -> int:
        """The lowest precision the reference itself uses (its inputs, parameters, buffers and
        casts in forward), as torchops.precision_rank; fp32 where it names none."""
        ranks = [r for r in (torchops.precision_rank(d) for d in self.input_dtypes | self.dtypes) if r is not None]
        return min(ranks) if ranks else 4

    @property
    def main_ops(self) -> set[str]:
        return self.heavy_ops or self.ops

    @property
    def low_precision(self) -> bool:
        return self.contract_rank < 4


def build(py: PyFacts) -> ReferenceFacts:
    r = ReferenceFacts(py)
    for name, vals in py.module_bindings.items():
        v = vals[-1]
        if v.type in ("integer", "float"):
            try:
                r.constants[name] = ast.literal_eval(text(v))
            except (ValueError, SyntaxError):
                pass
    for name, val in r.constants.items():
        if isinstance(val, int) and not isinstance(val, bool) and abs(val) > 1:
            r.dims.add(val)
    for fname in ("get_inputs", "get_init_inputs"):
        for f in py.funcs_named(fname):
            for c in py.calls_in(f):
                if c.resolved and torchops.canonical_op(c.callee) in torchops.CREATE:
                    r.input_generators.add(torchops.canonical_op(c.callee))
                    for a in c.args:
                        for n in _ints(a):
                            if abs(n) > 1:
                                r.dims.add(n)
                    dt = c.kwarg("dtype")
                    if dt is not None:
                        res, _ = py.resolve(dt)
                        r.input_dtypes.add(res or text(dt))
    model = py.classes.get("Model")
    # dtypes named by casts and constructors: `(torch.rand(M, K) * 8).to(torch.float8_e4m3fn)`
    # makes fp8 inputs as surely as `dtype=` does
    scopes = [f.node for n in ("get_inputs", "get_init_inputs") for f in py.funcs_named(n)]
    if model is not None:
        scopes += [m.node for m in model.methods.values()]
    for n in (n for scope in scopes for n in walk(scope)):
        if n.type == "attribute":
            name = py.resolve(n)[0] or text(n)
            if name.startswith("torch.") and torchops.precision_rank(name) is not None:
                r.dtypes.add(name)
        elif n.type == "call":
            fn = n.child_by_field_name("function")
            meth = text(fn.child_by_field_name("attribute")) if fn is not None and fn.type == "attribute" else ""
            if meth in ("half", "bfloat16", "double"):
                r.dtypes.add(f"torch.{'float16' if meth == 'half' else meth}")
    if model is not None:
        for attr, vals in model.init_attrs.items():
            for v in vals:
                if v.type == "call":
                    res, _ = py.resolve(v.child_by_field_name("function"))
                    if res and torchops.is_torch_name(res):
                        r.layers[attr] = res
                        if res.endswith("Parameter"):
                            r.parameters.add(attr)
                        else:
                            r.parameters.add(attr)
                            op = torchops.canonical_op(res)
                            r.ops.add(op)
                            if op in torchops.HEAVY:
                                r.heavy_ops.add(op)
        fwd = model.methods.get("forward")
        if fwd is not None:
            for c in py.calls_in(fwd):
                op = torchops.canonical_op(c.callee)
                is_torch = c.resolved and torchops.is_torch_name(c.callee)
                is_method = not c.resolved and "." in c.callee and not c.callee.startswith("self.")
                if is_torch or is_method:
                    if op in torchops.HEAVY or op in torchops.COMPUTE:
                        r.ops.add(op)
                        if op in torchops.HEAVY:
                            r.heavy_ops.add(op)
            for n, fn in py.binops:
                if fn is fwd and text(n.child_by_field_name("operator")) == "@":
                    r.ops.add("matmul")
                    r.heavy_ops.add("matmul")
    return r


def _ints(node):
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "integer":
            try:
                yield int(text(n), 0)
            except ValueError:
                pass
        elif n.type == "identifier":
            continue
        else:
            stack.extend(n.named_children)
