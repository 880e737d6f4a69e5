"""Facts: computed once per submission and shared by every rule.

`Facts` is lazy: a rule asks for what it needs (`facts.flow`, `facts.graph`, `facts.cuda`)
and each is built at most once, so a file that needs no C++ analysis never pays for it.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import networkx as nx

from hackscan.facts import cuda as cuda_facts
from hackscan.facts.cuda import CudaFacts
from hackscan.facts.flow import CFlow, PyFlow, CUSTOM
from hackscan.facts.python import Extension, Func, Klass, PyFacts
from hackscan.facts.reference import ReferenceFacts

REFERENCE_MODULES = ("reference", "ref_code", "ref", "problem", "original", "model_ref")


@dataclass
class CudaUnit:
    facts: CudaFacts
    extension: Extension | None


class Facts:
    """Everything the rules may ask about one submission."""

    def __init__(self, path: str, py: PyFacts | None, raw_cuda: list[CudaFacts] | None,
                 reference: ReferenceFacts | None, entry: str = "ModelNew", base_dir: Path | None = None):
        self.path = path
        self.py = py
        self._raw_cuda = raw_cuda or []
        self.reference = reference
        self.entry = entry
        self.base_dir = base_dir

    # ---- Python side -------------------------------------------------------------
    @cached_property
    def entry_class(self) -> Klass | None:
        return self.py.classes.get(self.entry) if self.py is not None else None

    @cached_property
    def forward(self) -> Func | None:
        k = self.entry_class
        if k is None:
            return None
        if "forward" in k.methods:
            return k.methods["forward"]
        for b in k.bases:
            if self.py is not None and b in self.py.classes and "forward" in self.py.classes[b].methods:
                return self.py.classes[b].methods["forward"]
        return None

    @cached_property
    def cuda(self) -> list[CudaUnit]:
        """Every C++/CUDA unit: raw files and sources embedded in load_inline/load calls."""
        units = [CudaUnit(u, None) for u in self._raw_cuda]
        if self.py is None:
            return units
        for ext in self.py.extensions:
            for label, folded, node in ext.sources:
                if not folded.text.strip():
                    continue
                units.append(CudaUnit(cuda_facts.build(label, self.path, folded.text, folded.rows, True), ext))
            for rel in ext.files:
                if self.base_dir is None:
                    continue
                p = (self.base_dir / rel)
                try:
                    if p.is_file() and p.stat().st_size < 2_000_000:
                        src = p.read_text("utf-8", "replace")
                        units.append(CudaUnit(cuda_facts.build(rel, str(p), src, None, False), ext))
                except OSError:
                    pass
        return units

    @cached_property
    def ext_functions(self) -> dict[str, str]:
        """Python-visible extension function name -> the variable holding the extension."""
        out: dict[str, str] = {}
        if self.py is None:
            return out
        for ext in self.py.extensions:
            names = list(ext.functions)
            for u in self.cuda:
                if u.extension is ext:
                    names.extend(u.facts.bindings)
            for n in names:
                out[n] = ext.var or "<extension>"
        return out

    @cached_property
    def cflow(self) -> CFlow:
        return CFlow([u.facts for u in self.cuda])

    @cached_property
    def reference_names(self) -> set[str]:
        names: set[str] = set()
        if self.py is None:
            return names
        for alias, full in self.py.aliases.items():
            if full.split(".")[0] in REFERENCE_MODULES:
                names.add(alias)
        return names

    @cached_property
    def flow(self) -> PyFlow:
        assert self.py is not None
        return PyFlow(self.py, self.ext_functions, self.reference_names, self.cflow)

    @cached_property
    def forward_funcs(self) -> list[Func]:
        """forward and every local function it reaches."""
        if self.forward is None:
            return []
        return self.flow.reachable(self.forward)

    @cached_property
    def has_custom_kernel(self) -> bool:
        if any(u.facts.kernels for u in self.cuda):
            return True
        return bool(self.py is not None and self.py.triton_kernels)

    @cached_property
    def forward_returns(self) -> list[tuple]:
        """(return value node, origins) for each return of forward and its helpers' results."""
        if self.forward is None:
            return []
        fl = self.flow
        return [(v, fl.origins(self.forward, v)) for v in fl.return_values(self.forward)]

    def unit_of(self, facts: CudaFacts) -> CudaUnit:
        """The unit holding these C++/CUDA facts."""
        return next(u for u in self.cuda if u.facts is facts)

    def ext_host_function(self, name: str):
        """The C++ host function behind a Python-visible extension function name."""
        host = self.cflow.host_for(name)
        if host is None:
            return None
        facts, f = self.cflow.funcs[host]
        return self.unit_of(facts), f

    # ---- the graph ---------------------------------------------------------------
    @cached_property
    def graph(self) -> nx.DiGraph:
        """forward -> local functions -> extension functions -> host C++ -> kernels -> stores,
        and return:<function> -> what its returned value derives from."""
        g = nx.DiGraph()
        if self.py is not None:
            fl = self.flow
            for f in self.py.funcs:
                g.add_node(f"py:{f.qualname}", kind="python")
            for c in self.py.calls:
                if c.func is None:
                    continue
                src = f"py:{c.func.qualname}"
                k = fl.kind(c)
                if k == "local":
                    t = fl.local_target(c)
                    if t is not None:
                        g.add_edge(src, f"py:{t.qualname}", kind="call")
                elif k == CUSTOM:
                    if c.callee.endswith("[]"):
                        g.add_edge(src, f"triton:{c.callee[:-2].split('.')[-1]}", kind="launch")
                    else:
                        name = c.callee.split(".")[-1]
                        g.add_edge(src, f"ext:{name}", kind="call")
                        host = self.ext_host_function(name)
                        if host is not None:
                            g.add_edge(f"ext:{name}", f"cpp:{host[1].name}", kind="binding")
                elif k.startswith("torch"):
                    g.add_edge(src, f"torch:{c.callee}", kind=k)
            if self.forward is not None:
                ret = f"return:{self.forward.qualname}"
                for _, origins in self.forward_returns:
                    for o in origins:
                        g.add_edge(ret, f"{o.kind}:{o.name}", kind="derives")
            for name, kf in self.py.triton_kernels.items():
                g.add_node(f"triton:{name}", kind="triton")
        for u in self.cuda:
            for f in u.facts.funcs:
                g.add_node(f"{'kernel' if f.kind == 'global' else 'cpp'}:{f.name}", kind=f.kind)
            for l in u.facts.launches:
                if l.func is not None:
                    g.add_edge(f"cpp:{l.func.name}", f"kernel:{l.kernel}", kind="launch")
            for c in u.facts.calls:
                if c.func is not None and c.func.kind == "host":
                    tgt = f"cpp:{c.callee}" if c.callee in self.cflow.funcs else f"c:{c.callee}"
                    g.add_edge(f"cpp:{c.func.name}", tgt, kind="call")
            for s in u.facts.stores:
                g.add_edge(f"kernel:{s.func.name}", f"store:{s.func.name}.{s.base}", kind="store")
        return g

    def kernels_reachable_from_forward(self) -> set[str]:
        if self.forward is None:
            return set()
        g = self.graph
        start = f"py:{self.forward.qualname}"
        if start not in g:
            return set()
        return {n for n in nx.descendants(g, start) if n.startswith(("kernel:", "triton:"))}
