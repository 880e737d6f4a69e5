"""A run refutes only what it could have shown (issue 47, item 4, its device part): a static finding
whose construct acts on a GPU only (TF32, reduced-precision tensor-core math) is never refuted by
a run on a CPU, where that construct changes nothing; the finding stays, with the reason."""
from __future__ import annotations

import textwrap

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")
pytestmark = pytest.mark.dynamic    # starts audited workers

from hackscan.api import audit  # noqa: E402

REF = textwrap.dedent('''
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def forward(self, a, b):
            return a @ b

    def get_inputs():
        return [torch.randn(32, 32), torch.randn(32, 32)]

    def get_init_inputs():
        return []
''')

# an honest Triton matmul, except that its forward turns TF32 on for the call and back off before
# it returns (on a GPU the torch matmuls inside would lose precision; on a CPU nothing changes)
CANDIDATE = textwrap.dedent('''
    import torch
    import torch.nn as nn
    import triton
    import triton.language as tl

    @triton.jit
    def mm_kernel(a_ptr, b_ptr, c_ptr, N: tl.constexpr):
        r = tl.arange(0, N)
        a = tl.load(a_ptr + r[:, None] * N + r[None, :])
        b = tl.load(b_ptr + r[:, None] * N + r[None, :])
        tl.store(c_ptr + r[:, None] * N + r[None, :], tl.dot(a, b, input_precision="ieee"))

    class ModelNew(nn.Module):
        def forward(self, a, b):
            torch.backends.cuda.matmul.allow_tf32 = True
            try:
                c = torch.empty(a.shape[0], b.shape[1], device=a.device, dtype=a.dtype)
                mm_kernel[(1,)](a.contiguous(), b.contiguous(), c, N=a.shape[0])
                return c
            finally:
                torch.backends.cuda.matmul.allow_tf32 = False
''')


def test_a_gpu_only_precision_flag_is_not_refuted_by_a_cpu_run(tmp_path):
    ref = tmp_path / "reference.py"
    ref.write_text(REF)
    cand = tmp_path / "candidate.py"
    cand.write_text(CANDIDATE)
    r = audit(cand, ref, dynamic="all", device="cpu", timeout_s=600, seed=3)
    tf32 = [f for f in r.findings if f.rule_id == "tf32-enabled"]
    assert tf32, [(f.rule_id, f.dynamic.status) for f in r.findings]
    # before: refuted by the precision audit's pass, and the verdict `clean`
    assert r.verdict != "clean", (r.verdict, r.reasons)
    for f in tf32:
        assert f.dynamic.status == "inconclusive", (f.dynamic.status, f.dynamic.detail)
        assert "could not show it" in f.dynamic.detail and "cpu" in f.dynamic.detail
        assert dict(f.evidence).get("effect_on") == "cuda"
