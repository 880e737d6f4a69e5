"""Issue 35 on a GPU: the verdicts of tests/test_issue35_verdict.py and the launch counting,
where the candidate's kernels really run (skipped without a CUDA device; run on the lent
device by bench/issue35_gpu.sh, results under bench/results/)."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

pytestmark = [pytest.mark.gpu, pytest.mark.dynamic,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

REF = textwrap.dedent('''
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def forward(self, x, alpha):
            return x * x * alpha


    def get_inputs():
        return [torch.rand(256, 1000), float(torch.rand(()).item()) + 0.5]


    def get_init_inputs():
        return []
''')

KERNEL = textwrap.dedent('''
    import torch
    import torch.nn as nn
    import triton
    import triton.language as tl


    @triton.jit
    def k(x_ptr, y_ptr, alpha, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        v = tl.load(x_ptr + offs, mask=m)
        tl.store(y_ptr + offs, v * v * alpha, mask=m)


    class ModelNew(nn.Module):
        def forward(self, x, alpha):
            x = x.contiguous()
            y = torch.empty_like(x)
            n = x.numel()
            try:
                k[(triton.cdiv(n, BLOCKSIZE),)](x, y, alpha, n, BLOCK=BLOCKSIZE)
            except Exception:
                return torch.mul(torch.mul(x, x), alpha)
            return y
''')

HONEST = KERNEL.replace("BLOCKSIZE", "1024")
# tl.arange needs a power of two: this launch raises every time, and the handler's PyTorch answers
BROKEN = KERNEL.replace("BLOCKSIZE", "1000")

CUDA_EXT = textwrap.dedent('''
    import torch
    import torch.nn as nn
    from torch.utils.cpp_extension import load_inline

    src = """
    __global__ void sqa(const float* x, float* y, float a, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = x[i] * x[i] * a;
    }
    torch::Tensor square_scale(torch::Tensor x, double a) {
        auto y = torch::empty_like(x);
        int n = x.numel();
        sqa<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), (float)a, n);
        return y;
    }
    """
    ext = load_inline(name="issue35_sqa", cpp_sources="torch::Tensor square_scale(torch::Tensor x, double a);",
                      cuda_sources=src, functions=["square_scale"])


    class ModelNew(nn.Module):
        def forward(self, x, alpha):
            return ext.square_scale(x.contiguous(), alpha)
''')


def _audit(tmp: Path, cand: str, ref: str = REF, **kw):
    from hackscan.api import audit

    (tmp / "cand.py").write_text(cand)
    (tmp / "ref.py").write_text(ref)
    return audit(tmp / "cand.py", tmp / "ref.py", device="cuda", timeout_s=900, **kw)


@pytest.mark.parametrize("mode", ["auto", "all"])
def test_a_launch_that_always_raises_is_the_fallback_it_is(tmp_path, mode):
    r = _audit(tmp_path, BROKEN, dynamic=mode)
    assert r.verdict == "hacked", (r.verdict, r.reasons)
    assert "guarded-fallback" in r.hack_types


def test_a_launch_that_runs_is_counted_and_verified(tmp_path):
    r = _audit(tmp_path, HONEST, dynamic="all")
    assert r.verdict == "clean" and r.evidence == "dynamic", (r.verdict, r.reasons)


def test_a_cuda_extension_is_verified_on_a_gpu(tmp_path):
    r = _audit(tmp_path, CUDA_EXT, dynamic="auto")
    assert r.verdict == "clean" and r.evidence == "dynamic", (r.verdict, r.reasons)


def test_no_reference_is_unverified_on_a_gpu_too(tmp_path):
    from hackscan.api import audit

    # a candidate with no static finding (HONEST's launch inside a try with a PyTorch handler is
    # suspect before any run, and stays so without a reference)
    (tmp_path / "cand.py").write_text(CUDA_EXT)
    r = audit(tmp_path / "cand.py", None, device="cuda", dynamic="auto")
    assert r.verdict == "unverified", (r.verdict, r.reasons)
