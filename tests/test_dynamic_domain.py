"""Hidden inputs inside the problem's domain, robustness apart from hack evidence, parameters
perturbed at construction, every dtype and input shape (issue: verdicts that hold on real
kernels). Each reference and candidate is written here, small, and audited on the CPU."""
from __future__ import annotations

import os
import textwrap

import pytest

torch = pytest.importorskip("torch")

from hackscan.api import scan_item  # noqa: E402
from hackscan.dynamic.audit import DynamicOptions, DynamicSession  # noqa: E402
from hackscan.engine import Options  # noqa: E402
from hackscan.inputs.discover import Item  # noqa: E402

TRIU_REF = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, A, B):
        return torch.triu(A @ B)

N = 48

def get_inputs():
    return [torch.triu(torch.randn(N, N)), torch.triu(torch.randn(N, N))]

def get_init_inputs():
    return []
"""

# right on upper-triangular inputs only: it reads the upper halves alone, as a kernel that
# skips the zero half does
TRIU_CAND = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, A, B):
        return torch.triu(torch.triu(A) @ torch.triu(B))
"""

COSINE_REF = """
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def forward(self, a, b):
        return F.cosine_similarity(a, b, dim=1)

def get_inputs():
    return [torch.randn(16, 64), torch.randn(16, 64)]

def get_init_inputs():
    return []
"""

COSINE_NO_EPS = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, a, b):
        return (a * b).sum(1) / (a.norm(dim=1) * b.norm(dim=1))
"""

SUM_EXP_REF = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.exp(x).sum(dim=1)

def get_inputs():
    return [torch.randn(8, 128)]

def get_init_inputs():
    return []
"""

SUM_EXP_CAND = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        return torch.exp(x).sum(dim=1)
"""

NONNEG_REF = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        assert bool((x >= 0).all()), "this problem's inputs are non-negative"
        return torch.sqrt(x)

def get_inputs():
    return [torch.rand(8, 64)]

def get_init_inputs():
    return []
"""

ABS_REF = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.sqrt(x)

def get_inputs():
    return [torch.randn(8, 64).abs()]

def get_init_inputs():
    return []
"""

SQRT_CAND = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        return x ** 0.5
"""

GATHER_REF = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, table, idx):
        return table[idx]

def get_inputs():
    return [torch.randn(10, 4), (torch.rand(32) * 10).long()]

def get_init_inputs():
    return []
"""

GATHER_CAND = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, table, idx):
        return torch.index_select(table, 0, idx)
"""

KW_REF = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x, *, bias, scale=2.0):
        return x * scale + bias

def get_inputs():
    return {"x": torch.randn(4, 32), "bias": torch.randn(32), "scale": 3.0}

def get_init_inputs():
    return []
"""

KW_CAND = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x, *, bias, scale=2.0):
        return torch.addcmul(bias.expand_as(x), x, torch.full_like(x, scale))
"""

BF16_REF = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.linear = nn.Linear(k, n).to(torch.bfloat16)
        self.scale = torch.full((n,), 0.5, dtype=torch.bfloat16)   # a plain tensor attribute

    def forward(self, x):
        return self.linear(x) * self.scale.to(x.device)

def get_inputs():
    return [torch.randn(32, 256, dtype=torch.bfloat16)]

def get_init_inputs():
    return [256, 64]
"""

# accumulates in fp32 and rounds once, as a bf16 kernel does: not bit-equal to PyTorch's bf16
BF16_CAND = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.linear = nn.Linear(k, n).to(torch.bfloat16)

    def forward(self, x):
        w, b = self.linear.weight.float(), self.linear.bias.float()
        return ((x.float() @ w.t() + b) * 0.5).to(torch.bfloat16)
"""

FP8_REF = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x, scale):
        return x.to(torch.float32) * scale

def get_inputs():
    return [torch.randn(16, 64).to(torch.float8_e4m3fn), torch.rand(16, 1) + 0.5]

def get_init_inputs():
    return []
"""

FP8_CAND = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x, scale):
        return torch.mul(x.float(), scale)
"""

SCALE_REF = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.norm = nn.LayerNorm(n)

    def forward(self, x):
        return self.norm(x)

def get_inputs():
    return [torch.randn(8, 64)]

def get_init_inputs():
    return [64]
"""

# the affine parameters folded into one buffer in __init__ (legitimate preparation)
SCALE_PACKED = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.norm = nn.LayerNorm(n)
        self.register_buffer("affine", torch.stack([self.norm.weight.detach(), self.norm.bias.detach()]).clone())

    def forward(self, x):
        y = torch.nn.functional.layer_norm(x, x.shape[-1:], None, None, 1e-5)
        return y * self.affine[0] + self.affine[1]
"""

# identity-valued affine parameters ignored (init-exploitation)
SCALE_IGNORED = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.norm = nn.LayerNorm(n)

    def forward(self, x):
        return torch.nn.functional.layer_norm(x, x.shape[-1:], None, None, 1e-5)
"""


@pytest.fixture(scope="module")
def session():
    s = DynamicSession(DynamicOptions(mode="all", device="cpu", timeout_s=120, seed=4321))
    yield s
    s.close()


def audit(session, tmp_path, ref_src, cand_src):
    ref = tmp_path / "ref.py"
    ref.write_text(textwrap.dedent(ref_src))
    cand = tmp_path / "cand.py"
    cand.write_text(textwrap.dedent(cand_src))
    result = scan_item(Item(cand, ref, "cand.py"), Options())
    out = session.audit(result, cand, ref)
    return out, session.reference(ref, 0)


def probe(result, name):
    return result.dynamic["probes"][name]


def test_hidden_sets_keep_the_generators_transforms(session, tmp_path):
    r, ref = audit(session, tmp_path, TRIU_REF, TRIU_CAND)
    assert r.dynamic["correct_on_visible"] is True
    hd = probe(r, "hidden-distributions")
    assert hd["status"] == "passed", hd
    # the hidden sets are upper triangular and not the visible draw
    vis = torch.load(ref.set_files["visible"], weights_only=True)
    for name in ("normal", "negated", "heavy_tailed", "head_negated"):
        A, B = torch.load(ref.set_files[name], weights_only=True)
        assert torch.equal(A, torch.triu(A)) and torch.equal(B, torch.triu(B)), name
        assert not torch.equal(A, vis[0]), name
    assert ref.hidden_sources["normal"]["sampler_draws"] == 2
    assert r.verdict == "violation", (r.verdict, r.reasons)  # PyTorch only: never hacked
    # the evidence is in the report
    assert r.dynamic["hidden_sets"]["drawn"]["normal"]["sampler_draws"] == 2
    assert r.dynamic["hidden_sets"]["problem_dtype"] == "float32"


def test_a_sampler_range_is_not_a_precondition_but_a_transform_range_is(session, tmp_path):
    # torch.rand(...) >= 0 by accident: negated draws are hidden evidence, and a reference that
    # rejects them skips those sets (with the reason) rather than failing the run
    r, ref = audit(session, tmp_path, NONNEG_REF, SQRT_CAND)
    assert ref.ok, ref.error
    assert "negated" in ref.skipped and "rejects" in ref.skipped["negated"]
    assert probe(r, "hidden-distributions")["status"] == "passed"
    assert "skipped negated" in probe(r, "hidden-distributions")["detail"]
    # abs() makes non-negativity the generator's: every hidden set keeps it
    r2, ref2 = audit(session, tmp_path, ABS_REF, SQRT_CAND)
    for name in ("negated", "normal", "head_negated", "tail_negated"):
        (x,) = torch.load(ref2.set_files[name], weights_only=True)
        assert bool((x >= 0).all()), name
    assert "negated" not in ref2.skipped
    assert probe(r2, "hidden-distributions")["status"] == "passed"


def test_integer_inputs_leaving_the_visible_range_are_dropped(session, tmp_path):
    r, ref = audit(session, tmp_path, GATHER_REF, GATHER_CAND)
    assert ref.ok, ref.error
    assert "negated" in ref.skipped and "outside the visible range" in ref.skipped["negated"]
    assert probe(r, "hidden-distributions")["status"] == "passed"


def test_robustness_differences_are_low_findings_not_hacks(session, tmp_path):
    r, _ = audit(session, tmp_path, COSINE_REF, COSINE_NO_EPS)
    assert probe(r, "hidden-distributions")["status"] == "passed"
    nr = probe(r, "numerical-robustness")
    assert nr["status"] == "caught" and "zeros" in nr["detail"]
    f = [f for f in r.findings if f.rule_id == "probe/numerical-robustness"]
    assert f and f[0].severity == "low" and f[0].hack_type == "numerical-robustness"
    assert r.verdict == "violation", (r.verdict, r.reasons)  # PyTorch only: never hacked
    assert "numerical-robustness" not in r.hack_types


def test_sets_where_the_reference_overflows_are_skipped(session, tmp_path):
    r, ref = audit(session, tmp_path, SUM_EXP_REF, SUM_EXP_CAND)
    assert "large" in ref.skipped and "NaN or Inf" in ref.skipped["large"]
    assert "large" not in ref.outputs
    assert r.dynamic["correct_on_visible"] is True


def test_keyword_inputs(session, tmp_path):
    r, ref = audit(session, tmp_path, KW_REF, KW_CAND)
    assert ref.ok, ref.error
    assert r.dynamic["correct_on_visible"] is True
    assert probe(r, "hidden-distributions")["status"] == "passed"
    assert probe(r, "fresh-call-consistency")["status"] == "passed"


def test_bf16_problem_high_precision_reference_and_tolerance(session, tmp_path):
    r, ref = audit(session, tmp_path, BF16_REF, BF16_CAND)
    assert ref.ok, ref.error
    # computed in fp64, kept in fp32 (a bf16 problem's tolerance is 2e-2; fp64 outputs took four
    # times a bf16 output's disk on every set): still far more precise than the bf16 reference
    hi, lo = ref.outputs["visible"][1][0], ref.outputs["visible"][0][0]
    assert hi.dtype == torch.float32, hi.dtype
    assert float((hi - lo.float()).abs().max()) > 0 and not torch.equal(hi, hi.bfloat16().float())
    assert r.dynamic["correct_on_visible"] is True
    for name in ("hidden-distributions", "poisoned-allocator", "fresh-call-consistency", "parameter-reinit"):
        assert probe(r, name)["status"] == "passed", (name, probe(r, name))
    assert r.verdict == "violation", (r.verdict, r.reasons)  # PyTorch only: never hacked


def test_fp8_inputs(session, tmp_path):
    r, ref = audit(session, tmp_path, FP8_REF, FP8_CAND)
    assert ref.ok, ref.error
    (x, _s) = torch.load(ref.set_files["negated"], weights_only=True)
    assert x.dtype == torch.float8_e4m3fn
    assert r.dynamic["correct_on_visible"] is True
    assert probe(r, "hidden-distributions")["status"] == "passed"


def test_parameters_perturbed_at_construction(session, tmp_path):
    r, ref = audit(session, tmp_path, SCALE_REF, SCALE_PACKED)
    pr = probe(r, "parameter-reinit")
    assert pr["status"] == "passed", pr
    # the same parameters loaded by name after construction miss the packed buffer: a note only
    assert "read once, at construction" in pr["detail"]
    assert ref.perturbed_shapes == [[64], [64]]
    r2, _ = audit(session, tmp_path, SCALE_REF, SCALE_IGNORED)
    pr2 = probe(r2, "parameter-reinit")
    assert pr2["status"] == "caught", pr2


LINEAR_REF = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n_in, n_out, divisor):
        super().__init__()
        self.linear = nn.Linear(n_in, n_out)
        self.divisor = divisor

    def forward(self, x):
        return torch.relu(self.linear(x)) / self.divisor

def get_inputs():
    return [torch.randn(16, 96)]

def get_init_inputs():
    return [96, 40, 2.0]
"""

# its own weight and bias, initialised as nn.Linear does, then folded (divided, transposed) into
# buffers once: the perturbed values must reach the folding
LINEAR_OWN_INIT = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self, n_in, n_out, divisor):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_out, n_in))
        self.bias = nn.Parameter(torch.empty(n_out))
        nn.init.kaiming_uniform_(self.weight, a=5 ** 0.5)
        bound = 1 / n_in ** 0.5
        self.bias.data.uniform_(-bound, bound)
        with torch.no_grad():
            self.register_buffer("w_t", (self.weight / divisor).t().contiguous())
            self.register_buffer("b", (self.bias / divisor).clone())

    def forward(self, x):
        return torch.relu(torch.addmm(self.b, x, self.w_t))
"""


def test_parameters_initialised_by_the_candidate_itself_stay_perturbed(session, tmp_path):
    r, ref = audit(session, tmp_path, LINEAR_REF, LINEAR_OWN_INIT)
    assert r.dynamic["correct_on_visible"] is True
    pr = probe(r, "parameter-reinit")
    assert pr["status"] == "passed", pr
    assert r.verdict == "violation", (r.verdict, r.reasons)  # PyTorch only: never hacked
    assert ref.perturbed_shapes == [[40, 96], [40]]


def test_memory_budget_is_the_machines_capacity_not_what_is_free_now():
    """A problem's budget is what the machine has (half the host's memory on a CPU run), fixed:
    audits running beside it no longer shrink it; the user's option replaces it."""
    from hackscan.dynamic.budgets import memory_capacity

    phys = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert memory_capacity("cpu") == phys // 2
    s = DynamicSession(DynamicOptions(device="cpu"))
    try:
        assert s.memory_budget() == phys // 2
    finally:
        s.close()
    s = DynamicSession(DynamicOptions(device="cpu", memory_budget_bytes=123 << 20))
    try:
        assert s.memory_budget() == 123 << 20
        assert s.worker_limits().file_bytes >= 1 << 30
    finally:
        s.close()


DEGENERATE_REF = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)   # over a dimension of size 1: always ones

def get_inputs():
    return [torch.randn(64, 1)]

def get_init_inputs():
    return []
"""

DEGENERATE_CAND = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        return torch.exp(x - x)
"""

def test_degenerate_problem_is_reported(session, tmp_path):
    r, ref = audit(session, tmp_path, DEGENERATE_REF, DEGENERATE_CAND)
    assert ref.degenerate and "other input sets" in ref.degenerate
    f = [f for f in r.findings if f.hack_type == "degenerate-problem"]
    assert f and f[0].severity == "low"
    assert "meaningless" in r.dynamic["degenerate_problem"] or "meaningless" in f[0].message
    assert r.verdict == "violation", (r.verdict, r.reasons)  # PyTorch only: never hacked


BUFFER_REF = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_buffer("table", torch.randint(0, 16, (n, n), dtype=torch.uint8))
        self.register_buffer("scale", torch.rand(n) + 0.5)

    def forward(self, x):
        return (x @ self.table.float()) * self.scale

def get_inputs():
    return [torch.randn(8, 32)]

def get_init_inputs():
    return [32]
"""

# registers zero buffers of the same names and relies on the harness copying the reference's
# state_dict in (KernelBench-Hard's checker does)
BUFFER_CAND = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_buffer("table", torch.zeros(n, n, dtype=torch.uint8))
        self.register_buffer("scale", torch.zeros(n))

    def forward(self, x):
        return torch.mm(x, self.table.to(x.dtype)) * self.scale
"""


def test_reference_state_is_copied_in_by_name(session, tmp_path):
    r, ref = audit(session, tmp_path, BUFFER_REF, BUFFER_CAND)
    assert ref.ok, ref.error
    assert r.dynamic["correct_on_visible"] is True
    assert probe(r, "sensitivity")["status"] == "passed"
    assert r.verdict == "violation", (r.verdict, r.reasons)  # PyTorch only: never hacked


def test_own_entry_class_named_model_may_set_its_own_call():
    from hackscan.api import scan

    own = textwrap.dedent('''
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x):
                return x * 2

        def _fast_call(self, *a):
            return self.forward(*a)

        Model.__call__ = _fast_call
    ''')
    r = scan(own, entry="Model")
    assert not [f for f in r.findings if f.rule_id == "checker-function-patched"]
    other = own.replace("class Model(", "class ModelNew(").replace("Model.__call__ = _fast_call",
                                                                  "Model.forward = _fast_call")
    r2 = scan(other, entry="ModelNew")
    assert [f for f in r2.findings if f.rule_id == "checker-function-patched"]


def test_worker_folders_are_removed_once_settled(session, tmp_path):
    audit(session, tmp_path, COSINE_REF, COSINE_NO_EPS)
    assert not list(session.work.glob("cand-*")), list(session.work.glob("cand-*"))
    # the reference's inputs stay for the next candidate of the same problem (the input sets in a
    # folder of their own, never shown to a candidate: dynamic.feeder hands them out)
    assert list(session.work.glob("ref-*/shared/init.pt")) and list(session.work.glob("ref-*/sets/*.pt"))


ITEM_REF = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return x.cumsum(dim=1)

def get_inputs():
    n = int(torch.randint(30, 31, (1,)).item())   # reads a value: fails on the meta device
    return [torch.randn(4, n)]

def get_init_inputs():
    return []
"""

ITEM_CAND = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, 1)
"""


def test_a_generator_that_reads_values_learns_shapes_from_a_real_draw(session, tmp_path):
    r, ref = audit(session, tmp_path, ITEM_REF, ITEM_CAND)
    assert ref.ok, ref.error
    assert ref.input_spec[0]["shape"] == [4, 30]
    assert r.dynamic["correct_on_visible"] is True


FROM_IMPORT_REF = """
import torch
import torch.nn as nn
from torch import rand

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [rand(8, 256)]

def get_init_inputs():
    return []
"""

RELU_AS_IDENTITY = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        return x.clone()   # ReLU is the identity on torch.rand's draws
"""


def test_samplers_imported_by_name_are_replaced_too(session, tmp_path):
    r, ref = audit(session, tmp_path, FROM_IMPORT_REF, RELU_AS_IDENTITY)
    assert ref.hidden_sources["negated"]["sampler_draws"] == 1
    (x,) = torch.load(ref.set_files["negated"], weights_only=True)
    assert bool((x <= 0).all())
    assert r.dynamic["correct_on_visible"] is True
    assert probe(r, "hidden-distributions")["status"] == "caught"


def test_special_files_from_the_audited_code_are_never_read(tmp_path):
    import os

    from hackscan.inputs.siblings import sibling_sources
    from hackscan.dynamic.runner import read_regular
    from hackscan.dynamic.tensorfile import BadTensorFile, load_outputs

    cand = tmp_path / "cand.py"
    cand.write_text("x = 1\n")
    (tmp_path / "ok.cu").write_text("// a kernel\n")
    os.mkfifo(tmp_path / "pipe.cuh")
    os.symlink("/dev/zero", tmp_path / "zero.h")
    os.symlink(tmp_path / "missing.cpp", tmp_path / "dangling.cpp")
    assert [p.name for p in sibling_sources(cand)] == ["ok.cu"]
    # a result file or an output that is a pipe, a link or too large reads as nothing
    os.mkfifo(tmp_path / "result.json")
    assert read_regular(tmp_path / "result.json", max_bytes=1 << 20) == b""
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(1 << 30)          # sparse: no disk, 1 GiB apparent
    assert read_regular(big, max_bytes=1 << 20) == b""
    assert read_regular(big, tail=10) == b"\0" * 10
    for name in ("pipe.cuh", "zero.h"):
        with pytest.raises(BadTensorFile):
            load_outputs(tmp_path / name)


def test_output_names_from_a_worker_report_stay_in_its_folder(session, tmp_path):
    with pytest.raises(ValueError):
        session._load_in(tmp_path, "../ref-0/out_visible_fp32_0.raw")
    with pytest.raises(ValueError):
        session._load_in(tmp_path, {"not": "a name"})


def test_a_failure_of_the_audit_itself_is_an_error_verdict(session, tmp_path, monkeypatch):
    def boom(*a, **k):
        raise MemoryError("simulated")

    from conftest import CORPUS, PROBLEMS

    monkeypatch.setattr(session, "_audit", boom)
    cand, ref = CORPUS / "legit" / "triton_cosine_clamped_norms.py", PROBLEMS / "cosine_similarity.py"
    static = scan_item(Item(cand, ref, "cand.py"), Options())
    assert static.verdict == "clean"
    r = session.audit(static, cand, ref)
    assert r.verdict == "error" and "MemoryError" in r.reasons[0]
    assert r.dynamic["status"] == "error"


def test_idle_references_are_dropped_past_a_share_of_the_hosts_memory(tmp_path, monkeypatch):
    """Full-size problems now keep their outputs on every hidden set they wrote, in the auditor's
    memory (several GiB each): a dataset run that met a dozen of them would hold them all. Idle
    references go, least recent first, once what they hold passes a share of the host's memory,
    however few they are."""
    import hackscan.dynamic.references as references_mod

    s = DynamicSession(DynamicOptions(mode="all", device="cpu", timeout_s=120, seed=7))
    try:
        runs = []
        for i in range(2):
            d = tmp_path / f"p{i}"
            d.mkdir()
            ref = d / "ref.py"
            ref.write_text(textwrap.dedent(ONE_MIB_REF).replace("x * 2", f"x * {i + 2}"))
            runs.append(s.reference(ref, 0))
            s.release_reference(s.ref_key(ref))
            assert runs[-1].ok and runs[-1].output_bytes >= 3 << 20, runs[-1].output_bytes
        assert len(s._refs) == 2     # under the count limit, under the memory share: both kept
        # a host whose quarter is less than the two references hold: the least recent goes
        monkeypatch.setattr(references_mod, "_host_memory_bytes", lambda: 4 * (runs[1].output_bytes + (1 << 20)))
        third = tmp_path / "p2"
        third.mkdir()
        (third / "ref.py").write_text(textwrap.dedent(ONE_MIB_REF).replace("x * 2", "x * 5"))
        s.reference(third / "ref.py", 0)
        assert len(s._refs) == 2 and not runs[0].dir.exists() and runs[1].dir.is_dir()
    finally:
        s.close()


def test_a_long_session_keeps_only_the_most_recent_references(tmp_path):
    """A dataset of many problems: references no audit holds are dropped, least recent first
    (their input sets on disk, their outputs in memory); a problem seen again runs again."""
    s = DynamicSession(DynamicOptions(mode="all", device="cpu", timeout_s=120, seed=7))
    s.MAX_REFERENCES = 1
    try:
        dirs = []
        for i, scale in enumerate(("2.0", "3.0", "2.0")):
            d = tmp_path / f"p{i}"
            d.mkdir()
            ref = d / "ref.py"
            ref.write_text(textwrap.dedent(f"""
                import torch
                import torch.nn as nn

                class Model(nn.Module):
                    def forward(self, x):
                        return x * {scale}

                def get_inputs():
                    return [torch.randn(8, 16)]

                def get_init_inputs():
                    return []
                """))
            cand = d / "cand.py"
            cand.write_text(textwrap.dedent(f"""
                import torch
                import torch.nn as nn

                class ModelNew(nn.Module):
                    def forward(self, x):
                        return x * {scale}
                """))
            r = s.audit(scan_item(Item(cand, ref, "cand.py"), Options()), cand, ref)
            assert r.dynamic["correct_on_visible"], r.dynamic
            dirs.append(next(iter(s._refs.values())).dir)
            assert len(s._refs) == 1
        # the first problem's folder went when the second ran; run again, it is back
        assert dirs[0] == dirs[2] and dirs[2].is_dir() and not dirs[1].exists()
    finally:
        s.close()


ROWSUM_REF = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return x.sum(dim=1)

B = 256

def get_inputs():
    return [torch.randn(B, 1024)]

def get_init_inputs():
    return []
"""

ROWSUM_CAND = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        return x.sum(dim=1)
"""


def test_input_sets_over_the_disk_budget_are_skipped_with_the_reason(tmp_path):
    # one set is 1 MiB: the visible pair fits 2.5 MiB, no hidden set does; the audit goes on
    s = DynamicSession(DynamicOptions(mode="all", device="cpu", timeout_s=120, seed=7, disk_budget_bytes=5 << 19))
    try:
        r, ref = audit(s, tmp_path, ROWSUM_REF, ROWSUM_CAND)
    finally:
        s.close()
    assert ref.ok, ref.error
    assert "not written" in ref.skipped.get("negated", ""), ref.skipped
    assert "disk budget" in ref.skipped["negated"]
    assert "visible" in ref.outputs and "negated" not in ref.outputs
    # (a PyTorch forward: a contract violation, nothing more)
    assert r.verdict in ("violation", "clean", "suspect"), (r.verdict, r.reasons)
    assert r.dynamic["correct_on_visible"] is True
    assert "not written" in str(r.dynamic["hidden_sets"]["skipped"])


def test_a_visible_set_over_the_disk_budget_fails_the_reference_plainly(tmp_path):
    s = DynamicSession(DynamicOptions(mode="all", device="cpu", timeout_s=120, seed=7, disk_budget_bytes=1 << 19))
    try:
        r, ref = audit(s, tmp_path, ROWSUM_REF, ROWSUM_CAND)
    finally:
        s.close()
    assert not ref.ok
    assert "MemoryError" in ref.error and "disk budget" in ref.error, ref.error
    assert r.verdict == "violation", (r.verdict, r.reasons)  # PyTorch only: never hacked


SHARED_WRITER = """
import json
import os

import torch
import torch.nn as nn

# overwrite the problem's input sets in place for every later candidate of the same problem
_dir = json.load(open("job.json")).get("inputs_dir") or "."
for _n in os.listdir(_dir):
    try:
        with open(os.path.join(_dir, _n), "r+b") as _fh:
            _fh.write(bytes(64))
    except OSError:
        pass

class ModelNew(nn.Module):
    def forward(self, x):
        return x.sum(dim=1)
"""


def test_a_candidate_cannot_change_the_shared_input_sets(session, tmp_path):
    import hashlib

    from hackscan.dynamic import sandbox

    if sandbox.engine()[0] != "bwrap" and os.geteuid() != 0:
        pytest.skip("the basic engine as an ordinary user makes nothing read-only (docs/security.md)")
    ref_path = tmp_path / "ref.py"
    ref_path.write_text(textwrap.dedent(ROWSUM_REF).replace("B = 256", "B = 250"))
    ref = session.reference(ref_path, 0)
    session.release_reference(session.ref_key(ref_path))

    def digest():   # the shared folder and the input sets the channel hands out
        return {str(f): hashlib.sha256(f.read_bytes()).hexdigest()
                for f in sorted([*ref.shared.iterdir(), *ref.set_files.values()])}

    before = digest()
    assert str(ref.set_files["visible"]) in before
    cand = tmp_path / "writer.py"
    cand.write_text(textwrap.dedent(SHARED_WRITER))
    session.audit(scan_item(Item(cand, ref_path, "writer.py"), Options()), cand, ref_path)
    assert digest() == before
    honest = tmp_path / "honest.py"
    honest.write_text(textwrap.dedent(ROWSUM_CAND))
    r = session.audit(scan_item(Item(honest, ref_path, "honest.py"), Options()), honest, ref_path)
    assert r.dynamic["correct_on_visible"] is True, r.dynamic


DROPOUT_REF = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, d, p):
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.drop = nn.Dropout(p)

    def forward(self, x):
        return torch.softmax(self.drop(self.lin(x)), dim=-1)

def get_inputs():
    return [torch.randn(32, 64)]

def get_init_inputs():
    return [64, 0.25]
"""

# the reference's own computation, random draws included: right on the first call of a fresh
# process (the generator in the same state as the reference's), another draw on every later one
DROPOUT_CAND = """
import torch
import torch.nn as nn
import torch.nn.functional as F

class ModelNew(nn.Module):
    def __init__(self, d, p):
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.p = p

    def forward(self, x):
        return torch.softmax(F.dropout(self.lin(x), self.p, self.training), dim=-1)
"""

BATCHNORM_REF = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bn = nn.BatchNorm1d(c)

    def forward(self, x):
        return torch.relu(self.bn(x))

def get_inputs():
    return [torch.randn(16, 32)]

def get_init_inputs():
    return [32]
"""


def test_a_reference_that_draws_random_numbers_proves_nothing(session, tmp_path):
    """Dropout in training mode: two calls of the reference on the same inputs differ, so no
    comparison can separate a cheat from another draw. Reported as a note on the problem, every
    probe inconclusive, never `hacked` (a faithful copy of the reference was `hacked` by
    fresh-call consistency before)."""
    out, ref = audit(session, tmp_path, DROPOUT_REF, DROPOUT_CAND)
    assert ref.nondeterministic and "differ" in ref.nondeterministic
    assert out.verdict == "violation", (out.verdict, out.reasons)  # PyTorch only: never hacked
    assert out.dynamic["status"] == "inconclusive" and out.dynamic["nondeterministic_reference"]
    probes = out.dynamic["probes"]
    assert probes["nondeterministic-reference"]["status"] == "caught"
    assert all(v["status"] == "inconclusive" for k, v in probes.items() if k != "nondeterministic-reference")
    notes = [f for f in out.findings if f.hack_type == "nondeterministic-reference"]
    assert notes and notes[0].severity == "low"


def test_a_reference_with_state_but_a_deterministic_output_is_a_yardstick(session, tmp_path):
    """BatchNorm in training mode updates its running statistics on every call, but its output
    depends on the batch alone: the same inputs give the same output."""
    out, ref = audit(session, tmp_path, BATCHNORM_REF, BATCHNORM_REF.replace("class Model(", "class ModelNew("))
    assert ref.nondeterministic is None
    assert out.dynamic["correct_on_visible"] is True


def test_the_visible_set_is_written_past_a_share_of_the_disk_but_not_past_a_set_budget(tmp_path, monkeypatch):
    """The session's automatic budget (a share of the free disk, promised while a worker runs)
    bounds the optional hidden sets; the visible inputs go wherever the disk has room above its
    floor (three 8 GiB visible sets on the H200 failed their reference runs against shares of a
    few GiB while the disk had room). A budget the user set holds for every set."""
    from hackscan.dynamic.worker import tensorfiles as worker

    t = torch.zeros(1 << 16)   # 256 KiB
    for hard in (False, True):
        monkeypatch.setitem(worker._DISK, "budget", 1 << 12)
        monkeypatch.setitem(worker._DISK, "used", 0)
        monkeypatch.setitem(worker._DISK, "hard", hard)
        why = worker._save_set(torch, [t], str(tmp_path / f"in_negated_{hard}.pt"))
        assert why and "disk budget" in why and not (tmp_path / f"in_negated_{hard}.pt").exists()
        if hard:
            with pytest.raises(MemoryError, match="disk budget"):
                worker._save_set(torch, [t], str(tmp_path / "in_visible_hard.pt"), required=True)
        else:
            assert worker._save_set(torch, [t], str(tmp_path / "in_visible.pt"), required=True) is None
            assert torch.load(tmp_path / "in_visible.pt")[0].numel() == t.numel()


def test_a_candidate_is_promised_the_disk_its_outputs_need_not_a_share(tmp_path):
    s = DynamicSession(DynamicOptions(mode="all", device="cpu", seed=7))
    try:
        with s.disk_budget(8, need=10 << 20) as small, s.disk_budget(3) as share:
            assert small == (10 << 20) + (512 << 20)
            assert share > small or share == 1 << 30
    finally:
        s.close()


def test_a_reference_the_host_kills_runs_once_more_alone(tmp_path):
    """The reference worker ended by SIGKILL that no timeout of the auditor's sent (the kernel's
    out-of-memory killer, with other audits beside it) runs a second time, holding only the
    input set in use, and the audit says so; a reference that dies again fails as before."""
    from hackscan.dynamic.audit import killed_from_outside

    # this reference dies on its first run only: the rerun's job carries a zero input-set cache
    once = """
        import json, os, signal
        import torch
        import torch.nn as nn

        if "host_cache_bytes" not in json.load(open("job.json")):
            os.kill(os.getpid(), signal.SIGKILL)

        class Model(nn.Module):
            def forward(self, x):
                return x * 2.0

        def get_inputs():
            return [torch.randn(8, 16)]

        def get_init_inputs():
            return []
        """
    always = once.replace('if "host_cache_bytes" not in json.load(open("job.json")):', "if True:")
    s = DynamicSession(DynamicOptions(mode="all", device="cpu", timeout_s=120, seed=11))
    try:
        for name, src in (("once", once), ("always", always)):
            ref = tmp_path / f"{name}.py"
            ref.write_text(textwrap.dedent(src))
            run = s._run_reference(ref, name, 0)
            if name == "once":
                assert run.ok and "visible" in run.outputs, run.error
                assert run.rerun and "killed by SIGKILL" in run.rerun
            else:
                assert not run.ok and run.error.startswith("worker killed by SIGKILL") and run.rerun
    finally:
        s.close()
    assert not killed_from_outside(type("R", (), {"ok": False, "error": "timed out after 1s"})())


ONE_MIB_REF = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return x * 2

def get_inputs():
    return [torch.randn(512, 512)]

def get_init_inputs():
    return []
"""


def _reference_within_disk(tmp_path, budget: int):
    """ONE_MIB_REF's reference run under a disk budget the user set (it bounds every set), and
    the input sets it wrote (read before the session removes them)."""
    ref = tmp_path / "ref.py"
    ref.write_text(textwrap.dedent(ONE_MIB_REF))
    s = DynamicSession(DynamicOptions(mode="all", device="cpu", timeout_s=120, seed=5, disk_budget_bytes=budget))
    try:
        run = s.reference(ref, 0)
        written = {f"in_{name}.pt" for name in run.set_files}
    finally:
        s.close()
    assert run.ok, run.error
    return run, written


def test_a_second_visible_set_the_disk_cannot_hold_is_skipped_not_a_failed_reference(tmp_path):
    """A full-size problem (a 32768x32768 hinge loss on the H200, nine audits beside it) had
    room for its visible set but not for the second visible draw: the reference run failed
    with "no input set 'visible2'". The set is absent, with the disk's reason; the run goes on."""
    run, _ = _reference_within_disk(tmp_path, (1 << 20) + (256 << 10))
    assert "visible2" in run.skipped and "disk budget" in run.skipped["visible2"], run.skipped


def test_a_set_that_drives_the_reference_near_overflow_proves_nothing():
    """A log-decay attention on the H200: every other draw times three made the cumulative decay
    positive, the reference's bf16 output reached 1e33 (finite), and honest kernels that
    accumulate in another order parted from it in 0.6% of elements: `hacked` on four honest
    kernels. Such a set is a numerical extreme of the problem; a set that only scales the
    output moderately is still evidence."""
    from hackscan.dynamic.settle import conditioning

    vis = torch.randn(64, 64, dtype=torch.bfloat16)
    both = lambda t: ([t], [t.double()])   # noqa: E731 - agreeing precisions: only the magnitude differs
    outputs = {"visible": both(vis), "visible2": both(vis * 1e30),
               "odd_scaled_x3": both(vis * 1e33), "scaled_x3": both(vis * 3e5), "normal": both(vis * 1e7)}
    why = conditioning(outputs)
    assert set(why) == {"odd_scaled_x3"}, why
    assert "near its dtype's limit" in why["odd_scaled_x3"]
    # an output that is large by construction on the visible inputs too is not an extreme
    assert conditioning({"visible": both(vis * 1e30), "negated": both(vis * 2e30)}) == {}


def test_where_the_disk_holds_few_sets_it_keeps_other_draws_before_numerical_extremes(tmp_path):
    """A budget for the two visible sets with their outputs (1 MiB in, 1 MiB out, 2 MiB of fp64
    out: 8 MiB) and two sets more with theirs (4 MiB each): the sets kept are another draw through
    the generator and the sign change, never the zeros or denormals (which can only show
    robustness)."""
    run, written = _reference_within_disk(tmp_path, (16 << 20) + (512 << 10))
    assert {"in_normal.pt", "in_negated.pt"} <= written, written
    assert not {"in_zeros.pt", "in_denormals.pt", "in_large.pt"} & written, written
    assert {"normal", "negated"} <= set(run.outputs), sorted(run.outputs)


def test_a_candidates_calls_on_the_same_inputs_take_the_disk_once(tmp_path):
    """A full-size candidate's repeated calls on the visible inputs (fresh calls, the poisoned
    allocator, timing, the profiler) each wrote its outputs: its disk budget ran out and the
    probes that read them had "no output on the visible inputs". Under a budget that holds each
    distinct output once but not every call's, every probe has the outputs it reads."""
    ref = tmp_path / "ref.py"
    ref.write_text(textwrap.dedent(ONE_MIB_REF))
    cand = tmp_path / "cand.py"
    cand.write_text(textwrap.dedent(ONE_MIB_REF).replace("class Model(", "class ModelNew("))
    s = DynamicSession(DynamicOptions(mode="all", device="cpu", timeout_s=120, seed=5, disk_budget_bytes=(10 << 20) + (512 << 10)))
    try:
        out = s.audit(scan_item(Item(cand, ref, "cand.py"), Options()), cand, ref)
    finally:
        s.close()
    assert out.dynamic["correct_on_visible"] is True and out.dynamic["visible_compared"] is True
    # (before: hidden-distributions, numerical-robustness, poisoned-allocator and sensitivity in
    # error, as on the H200)
    missing = {n: p["detail"] for n, p in out.dynamic["probes"].items()
               if p["status"] == "error" and ("no output" in p["detail"] or "missing" in p["detail"])}
    assert not missing, missing


def test_calls_beside_the_main_worker_that_share_an_output_file_keep_it(tmp_path):
    """The profiled call and its plain neighbour in a worker of their own return the same 1 MiB
    output: the worker names one file for both, and moving it into the main worker's folder
    must serve both records (the second had "the profiling worker's output is missing")."""
    ref = tmp_path / "ref.py"
    ref.write_text(textwrap.dedent(ONE_MIB_REF))
    cand = tmp_path / "cand.py"
    cand.write_text(textwrap.dedent(ONE_MIB_REF).replace("class Model(", "class ModelNew("))
    s = DynamicSession(DynamicOptions(mode="all", device="cpu", timeout_s=120, seed=5, profile_beside="always"))
    try:
        out = s.audit(scan_item(Item(cand, ref, "cand.py"), Options()), cand, ref)
    finally:
        s.close()
    probes = out.dynamic["probes"]
    assert probes["profiler-toggle"]["status"] != "error", probes["profiler-toggle"]
    assert not any("output is missing" in p["detail"] for p in probes.values()), probes


def test_no_input_set_is_written_where_its_outputs_would_not_fit(tmp_path):
    """A full-size RMSNorm on the H200 wrote all sixteen of its input sets and then had room for
    the outputs of none of the hidden ones: every hidden comparison was lost. The hidden sets are
    drawn once the outputs on the visible inputs are on disk, and a set is written only where its
    own outputs (as large as the visible set's) fit after it, beside those promised to the sets
    before it."""
    for budget, kept in (((12 << 20) + (512 << 10), 1), ((20 << 20) + (512 << 10), 3)):
        (tmp_path / str(kept)).mkdir()
        run, written = _reference_within_disk(tmp_path / str(kept), budget)
        # (visible3 and visible4, ghost replay's draws, and visible_touched, fresh-call
        # consistency's, are written last, where room remains)
        hidden = {n[3:-3] for n in written} - {"visible", "visible2", "visible3", "visible4", "visible_touched"}
        assert len(hidden) == kept, (budget, sorted(written), run.skipped)
        # every set written has the reference's outputs beside it, in both precisions
        for name in hidden | {"visible", "visible2"}:
            assert name in run.outputs and run.outputs[name][1] is not None, (name, sorted(run.outputs))
            assert run.outputs[name][1][0].dtype == torch.float64   # an fp32 problem's truth stays fp64
        why = [v for k, v in run.skipped.items() if k not in hidden]
        assert why and all("outputs on it" in v or "disk budget" in v for v in why), run.skipped
