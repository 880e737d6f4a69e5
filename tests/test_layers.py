"""The import graph of the package: no circle, and no module reaching up into a layer above its
own (a layer may import any layer below it). Read from the source (imports inside functions
count), so a lazy import cannot hide a circle."""
from __future__ import annotations

import ast

import networkx as nx

from conftest import ROOT

# lowest first; a module belongs to the longest prefix listed
LAYERS = [
    ("hackscan._version", "hackscan.paths", "hackscan.install", "hackscan.config", "hackscan.hacktypes", "hackscan.findings",
     "hackscan.parse", "hackscan.parallel", "hackscan.probe_names"),
    ("hackscan.facts",),
    ("hackscan.rule", "hackscan.ruletools", "hackscan.inputs"),
    ("hackscan.engine",),
    ("hackscan.scanning", "hackscan.dynamic"),
    ("hackscan.measure",),
    ("hackscan.dynamic.audit", "hackscan.dynamic.remote"),
    ("hackscan.session",),
    ("hackscan.api", "hackscan.report"),
    ("hackscan.clean", "hackscan.corpus", "hackscan.naive", "hackscan.integrations"),
    ("hackscan", "hackscan.cli", "hackscan.__main__"),
]


def _modules() -> dict:
    out = {}
    for p in (ROOT / "hackscan").rglob("*.py"):
        parts = p.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = p
    return out


def _graph() -> nx.DiGraph:
    mods = _modules()
    g = nx.DiGraph()
    for m, p in mods.items():
        g.add_node(m)
        for n in ast.walk(ast.parse(p.read_text())):
            if isinstance(n, ast.ImportFrom) and n.module and n.module.split(".")[0] == "hackscan" and n.level == 0:
                subs = [f"{n.module}.{a.name}" for a in n.names if f"{n.module}.{a.name}" in mods]
                g.add_edges_from((m, s) for s in subs)
                if len(subs) < len(n.names) and n.module in mods:
                    g.add_edge(m, n.module)
            elif isinstance(n, ast.Import):
                g.add_edges_from((m, a.name) for a in n.names if a.name in mods)
    return g


def _rank(module: str) -> int:
    best, rank = -1, None
    for i, layer in enumerate(LAYERS):
        for prefix in layer:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), i
    assert rank is not None, f"{module} is in no layer: add it to LAYERS"
    return rank


def test_no_import_circles():
    cycles = [c for c in nx.simple_cycles(_graph()) if len(c) > 1]
    assert not cycles, cycles[:5]


def test_no_module_imports_a_layer_above_its_own():
    g = _graph()
    up = [(a, b) for a, b in g.edges if _rank(a) < _rank(b)]
    assert not up, up


def test_the_worker_imports_nothing_from_hackscan():
    """It runs from its own folder under `python -I`: the audited code's process holds none of
    the auditor's modules. Its modules import one another relatively, never a level up, and
    without a circle (the runner copies the package alone)."""
    g = _graph()
    mods = {m: p for m, p in _modules().items() if m == "hackscan.dynamic.worker" or m.startswith("hackscan.dynamic.worker.")}
    assert len(mods) >= 8, sorted(mods)
    inner = nx.DiGraph()
    for m, p in mods.items():
        assert not list(g.successors(m)), (m, list(g.successors(m)))
        for n in ast.walk(ast.parse(p.read_text())):
            if isinstance(n, ast.ImportFrom) and n.level:
                assert n.level == 1 and n.module, (m, n.module, n.level)
                inner.add_edge(m, f"hackscan.dynamic.worker.{n.module}")
            elif isinstance(n, ast.Import):
                assert not any(a.name.split(".")[0] == "hackscan" for a in n.names), m
    assert inner.number_of_edges() and not list(nx.simple_cycles(inner))


# the dynamic session's parts, lowest first: each may import only the parts before it, and none
# imports the coordinator (hackscan.dynamic.audit): data flows one way, from facts and plans to
# runs, to the verdict
SESSION_PARTS = [
    ("hackscan.dynamic.options", "hackscan.dynamic.candidates", "hackscan.dynamic.planning"),
    ("hackscan.dynamic.settle",),
    ("hackscan.dynamic.references",),
    ("hackscan.dynamic.evidence", "hackscan.dynamic.resources", "hackscan.dynamic.workers"),
    ("hackscan.dynamic.jobs",),
    ("hackscan.dynamic.audit",),
]


def test_the_dynamic_sessions_parts_import_one_way():
    g = _graph()
    rank = {m: i for i, layer in enumerate(SESSION_PARTS) for m in layer}
    assert set(rank) <= set(g.nodes), set(rank) - set(g.nodes)
    wrong = [(a, b) for a, b in g.edges if a in rank and b in rank and a != b and rank[b] >= rank[a]]
    assert not wrong, wrong
