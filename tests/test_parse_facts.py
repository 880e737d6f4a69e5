"""Parsing and facts: embedded-source extraction with line maps, alias resolution, the graph."""
from __future__ import annotations

import textwrap

import pytest

from hackscan.facts.flow import CUSTOM, HEAVY
from hackscan.inputs.load import load


def facts_of(src: str, ref: str | None = None):
    return load("cand.py", textwrap.dedent(src), textwrap.dedent(ref) if ref else None).facts


KERNEL = '__global__ void k(const float* x, float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = x[i]; }'


@pytest.mark.parametrize("binding", [
    'SRC = "{k}"',
    'SRC = "__global__ void k(const float* x, float* y, int n) " + "{{ int i = threadIdx.x; if (i < n) y[i] = x[i]; }}"',
    'NAME = "k"\nSRC = f"__global__ void {{NAME}}(const float* x, float* y, int n) {{{{ int i = threadIdx.x; if (i < n) y[i] = x[i]; }}}}"',
    'PARTS = ["__global__ void k(const float* x, float* y, int n)", "{{ int i = threadIdx.x; if (i < n) y[i] = x[i]; }}"]\nSRC = " ".join(PARTS)',
    'SRC = ("__global__ void k(const float* x, float* y, int n) "\n       "{{ int i = threadIdx.x; if (i < n) y[i] = x[i]; }}")',
])
def test_embedded_source_forms_are_resolved(binding):
    src = "import torch.utils.cpp_extension as cx\n" + binding.format(k=KERNEL) + \
        '\next = cx.load_inline(name="e", cpp_sources="", cuda_sources=SRC, functions=["f"])\nclass ModelNew: pass\n'
    f = load("c.py", src).facts
    assert len(f.py.extensions) == 1
    ext = f.py.extensions[0]
    assert not ext.unresolved, ext.unresolved
    assert any("k" in u.facts.kernels for u in f.cuda)


def test_unresolved_source_is_recorded():
    f = facts_of("""
        import os
        from torch.utils.cpp_extension import load_inline
        ext = load_inline(name="e", cpp_sources="", cuda_sources=os.environ["SRC"], functions=["f"])
        class ModelNew: pass
    """)
    assert f.py.extensions[0].unresolved


def test_embedded_line_map_points_to_host_lines():
    f = facts_of('''
        from torch.utils.cpp_extension import load_inline
        src = """
        __global__ void k(float* y) {
            y[0] = 1.0f;
        }
        """
        ext = load_inline(name="e", cpp_sources="", cuda_sources=src)
        class ModelNew: pass
    ''')
    unit = f.cuda[0]
    store = unit.facts.stores[0]
    assert store.node.start_point[0] + 1 == 3          # line inside the CUDA text
    assert unit.facts.host_line(store.node) == 5       # line in the Python file


@pytest.mark.parametrize("spelling,expected", [
    ("import torch.nn.functional as G\nop = lambda x: G.relu(x)", "torch.nn.functional.relu"),
    ("from torch import matmul as mm\nop = lambda x: mm(x, x)", "torch.matmul"),
    ("import torch\nop = lambda x: getattr(torch, 'mat' + 'mul')(x, x)", "torch.matmul"),
    ("import torch\nop = lambda x: torch.ops.aten.mm.default(x, x)", "torch.ops.aten.mm.default"),
    ("import torch as T\nmm = T.matmul\nop = lambda x: mm(x, x)", "torch.matmul"),
])
def test_alias_resolution(spelling, expected):
    f = facts_of(spelling + "\nclass ModelNew: pass\n")
    assert expected in {c.callee for c in f.py.calls}


def test_flow_follows_kernel_writes_and_helpers():
    f = facts_of("""
        import torch, triton
        import triton.language as tl
        @triton.jit
        def k(x_ptr, y_ptr, n, B: tl.constexpr):
            o = tl.arange(0, B)
            tl.store(y_ptr + o, tl.load(x_ptr + o))
        def launch(x, y):
            k[(1,)](x, y, x.numel(), B=16)
        class ModelNew(torch.nn.Module):
            def forward(self, x):
                y = torch.empty_like(x)
                launch(x, y)
                return y
    """)
    (value, origins), = f.forward_returns
    assert CUSTOM in {o.kind for o in origins}


def test_flow_resolves_what_a_callee_is_bound_to():
    """A launcher bound with functools.partial on self, an extension reached through a getter and
    an alias, a table of launchers: each call runs a custom kernel, and the buffers those kernels
    write (through a local alias, in another method) derive from them."""
    f = facts_of("""
        import functools, torch, triton
        import triton.language as tl
        from torch.utils.cpp_extension import load_inline
        @triton.jit
        def k(x_ptr, y_ptr, n, B: tl.constexpr):
            o = tl.arange(0, B)
            tl.store(y_ptr + o, tl.load(x_ptr + o))
        _mod = None
        def _get():
            global _mod
            if _mod is None:
                _mod = load_inline(name="m", cpp_sources="", cuda_sources="", functions=["run"])
            return _mod
        _run = _get().run
        class ModelNew(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self._launch = functools.partial(k[(1,)], B=16)
                self._table = {"a": self._launch}
                self._out = torch.empty(16)
            def _fill(self, x):
                out = self._out
                self._table["a"](x, out, 16)
            def forward(self, x):
                _run(x)
                self._launch(x, self._out, 16)
                self._fill(x)
                return self._out
    """)
    fl = f.flow
    kinds = {c.callee: fl.kind(c) for c in f.py.calls if c.func is not None and c.func.name in ("forward", "_fill")}
    assert kinds["_run"] == CUSTOM and kinds["self._launch"] == CUSTOM and kinds['self._table[]'] == CUSTOM
    (value, origins), = f.forward_returns
    assert CUSTOM in {o.kind for o in origins}
    assert "_out" in fl.kernel_written_attrs("ModelNew")


def test_helper_parameters_are_inputs_only_where_callers_pass_tensor_values():
    f = facts_of("""
        import torch
        class ModelNew(torch.nn.Module):
            def _plan(self, rows, t):
                self._rows = rows
                self._t = t * 2
            def forward(self, x):
                B, N = x.shape
                self._plan(B, x)
                return x
    """)
    fl = f.flow
    plan = f.py.classes["ModelNew"].methods["_plan"]
    vals = {a.targets[0].text.decode(): a.value for a in f.py.assigns if a.func is plan}
    assert fl.input_params(plan, vals["self._rows"], f.forward) == set()
    assert fl.input_params(plan, vals["self._t"], f.forward) == {"x"}


def test_flow_sees_torch_on_return_path():
    f = facts_of("""
        import torch
        class ModelNew(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(4, 4)
            def forward(self, x):
                return self.lin(x) @ x
    """)
    kinds = {o.kind for _, origins in f.forward_returns for o in origins}
    assert HEAVY in kinds and CUSTOM not in kinds


def test_graph_links_forward_to_kernel_stores():
    f = facts_of('''
        import torch
        from torch.utils.cpp_extension import load_inline
        src = """
        __global__ void k(const float* x, float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = x[i]; }
        torch::Tensor run(torch::Tensor x) {
            auto y = torch::empty_like(x);
            k<<<1, 32>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
            return y;
        }
        """
        ext = load_inline(name="e", cpp_sources="torch::Tensor run(torch::Tensor x);", cuda_sources=src, functions=["run"])
        class ModelNew(torch.nn.Module):
            def forward(self, x):
                return ext.run(x)
    ''')
    import networkx as nx

    g = f.graph
    assert nx.has_path(g, "py:ModelNew.forward", "kernel:k")
    assert nx.has_path(g, "py:ModelNew.forward", "store:k.y")
    assert "kernel:k" in f.kernels_reachable_from_forward()
    assert any(o.kind == CUSTOM for o in f.cflow.summary("run"))


def test_reference_facts():
    f = facts_of("class ModelNew: pass\n", """
        import torch
        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = torch.nn.Conv2d(3, 8, 3)
            def forward(self, x):
                return torch.sigmoid(self.conv(x))
        batch = 16
        def get_inputs():
            return [torch.rand(batch, 3, 224, 224, dtype=torch.float16)]
        def get_init_inputs():
            return []
    """)
    r = f.reference
    assert {16, 3, 224} <= r.dims
    assert "Conv2d" in r.heavy_ops and "sigmoid" in r.ops
    assert r.low_precision


def test_many_comment_lines_are_blanked_before_the_parse_and_nothing_else_changes():
    """issue 48, item 7: tree-sitter-python's scanner parsed a run of n comment lines inside a
    block in time n^2. Past a count they are blanked first (by Python's own tokenizer): the tree
    has the same nodes at the same bytes and lines, less those comments; a `#` line inside a
    string (a CUDA source's `#include`) is no comment and stays."""
    from hackscan.parse.trees import COMMENT_LINES_BLANKED, _blank_comment_lines, _parser, parse_python, walk

    comments = "".join(f"        # note {i}\n" for i in range(COMMENT_LINES_BLANKED + 50))
    src = ("import torch\nSRC = '''\n#include <torch/extension.h>\n# not a comment\n'''\n"
           "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        y = x + 1  # trailing\n"
           + comments + "        return torch.relu(y)\n").encode()
    blanked = _blank_comment_lines(src)
    assert len(blanked) == len(src) and blanked.count(b"\n") == src.count(b"\n")
    assert b"#include <torch/extension.h>\n# not a comment" in blanked and b"# trailing" in blanked
    assert b"# note" not in blanked
    full = [(n.type, n.start_byte, n.end_byte) for n in walk(_parser("python").parse(src).root_node)
            if n.type != "comment"]
    fast = [(n.type, n.start_byte, n.end_byte) for n in walk(parse_python(src).root_node) if n.type != "comment"]
    assert fast == full
    # few comment lines: the source is parsed as it is
    few = b"x = 1\n# one\n# two\n"
    assert _blank_comment_lines(few) == few
    # a source the tokenizer stops on keeps the comments after that point, and still parses
    broken = src.replace(b"return torch.relu(y)", b"return (torch.relu(y)")
    assert parse_python(broken).root_node.type == "module"
    assert _blank_comment_lines(broken).count(b"# note") == 0


def test_a_long_chain_of_rebindings_still_reaches_the_parameter():
    """Each use of a name rebound n times reaches its definitions once per walk (they were pushed
    again at every use: n^2), and the walk still finds where the value comes from."""
    chain = "".join("            y = y + 1\n" for _ in range(300))
    f = facts_of("import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
                 "        y = x\n        if x is not None:\n" + chain + "        return y\n")
    (value, origins), = f.forward_returns
    assert "x" in {o.name for o in origins if o.kind == "param"}, origins
