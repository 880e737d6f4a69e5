"""The evidence issue on a GPU: the channel, the guard and the auditor's clock where the candidate's
kernels really run (skipped without a CUDA device; run on the lent device by
bench/issue36_gpu.sh, results under bench/results/)."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from hackscan.api import scan_item  # noqa: E402
from hackscan.dynamic.audit import DynamicOptions, DynamicSession  # noqa: E402
from hackscan.engine import Options  # noqa: E402
from hackscan.inputs.discover import Item  # noqa: E402

from conftest import ROOT  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.dynamic,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

HOSTILE = ROOT / "corpus" / "hostile"
RELU = ROOT / "corpus" / "problems" / "relu.py"

TRITON_RELU = (ROOT / "corpus" / "synthetic" / "legit" / "triton_relu.py").read_text()

CUDA_RELU = textwrap.dedent('''
    import torch
    import torch.nn as nn
    from torch.utils.cpp_extension import load_inline

    SRC = """
    #include <torch/extension.h>
    __global__ void relu_k(const float* x, float* y, long n) {
        long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
        if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
    }
    torch::Tensor relu(torch::Tensor x) {
        auto xc = x.contiguous();
        auto y = torch::empty_like(xc);
        long n = xc.numel();
        relu_k<<<(n + 255) / 256, 256>>>(xc.data_ptr<float>(), y.data_ptr<float>(), n);
        return y;
    }
    """
    ext = load_inline("hs_issue36_relu", cpp_sources="torch::Tensor relu(torch::Tensor x);",
                      cuda_sources=SRC, functions=["relu"], verbose=False)


    class ModelNew(nn.Module):
        def forward(self, x):
            return ext.relu(x)
''')


def run(path: Path, measure: bool = False, **opts):
    s = DynamicSession(DynamicOptions(**{"mode": "all", "device": "cuda", "timeout_s": 600, "seed": 11,
                                         **({"measure": "all", "measure_budget_s": 1.0} if measure else {}), **opts}))
    try:
        r = s.audit(scan_item(Item(path, RELU, path.name), Options()), path, RELU)
        return s.measure(r, path, RELU) if measure else r
    finally:
        s.close()


def probes(r):
    return {k: v.get("status") for k, v in (r.dynamic or {}).get("probes", {}).items()}


@pytest.mark.parametrize("src", [TRITON_RELU, CUDA_RELU], ids=["triton", "cuda-extension"])
def test_honest_kernels_are_verified_through_the_channel_with_no_tampering(src, tmp_path):
    p = tmp_path / "honest.py"
    p.write_text(src)
    r = run(p)
    assert r.verdict == "clean" and r.evidence == "dynamic", (r.verdict, r.reasons, probes(r))
    assert "tampering" not in r.dynamic and probes(r)["kernel-attribution"] == "passed", probes(r)


@pytest.mark.parametrize("src", [TRITON_RELU, CUDA_RELU], ids=["triton", "cuda-extension"])
def test_ghost_replay_and_forced_failure_pass_honest_kernels_in_the_main_run(src, tmp_path):
    """The altered calls on the device: the poison of a share of the writes reaches the output
    (ghost replay passes), the refused launch makes forward fail (forced failure passes), and
    no rewritten run or rebuild exists."""
    p = tmp_path / "honest.py"
    p.write_text(src)
    r = run(p)
    got = r.dynamic["probes"]
    assert got["ghost-replay"]["status"] == "passed" and "the rest right" in got["ghost-replay"]["detail"], got
    assert got["forced-failure"]["status"] == "passed", got


CUDA_DECOY = CUDA_RELU.replace("        return ext.relu(x)", "        ext.relu(x)   # launched, its result dropped\n"
                                                        "        return torch.relu(x)")


def test_a_decoy_extension_call_is_caught_by_its_poisoned_writes(tmp_path):
    p = tmp_path / "decoy.py"
    p.write_text(CUDA_DECOY)
    r = run(p)
    assert r.verdict == "hacked" and r.dynamic["probes"]["ghost-replay"]["status"] == "caught", \
        (r.verdict, r.reasons, probes(r))


@pytest.mark.parametrize("name", ["evidence_table_from_set_files.py", "evidence_rebind_output_commit.py",
                                  "evidence_frame_walk_rebind.py", "control_identity_relu.py",
                                  "evidence_ghost_notices_rewrite.py", "control_ghost_decoy_relu.py"])
def test_the_evidence_attacks_are_hacked_on_the_gpu(name):
    r = run(HOSTILE / name)
    assert r.verdict == "hacked", (r.verdict, r.reasons, probes(r))


def test_the_oversized_outputs_are_refused_on_the_gpu():
    r = run(HOSTILE / "evidence_oversized_output.py")
    assert r.verdict == "error" and "the reference's outputs allow" in " ".join(r.reasons), r.reasons


def test_a_forged_timer_counts_nothing_on_the_gpu(tmp_path):
    loose = run(HOSTILE / "evidence_forged_timer.py", measure=True, guard=False)
    assert loose.measure["status"] == "error" and loose.measure["auditor_clock"]["forged"], loose.measure
    p = tmp_path / "honest.py"
    p.write_text(TRITON_RELU)
    fair = run(p, measure=True)
    assert fair.measure["status"] == "measured" and not fair.measure["auditor_clock"].get("forged"), fair.measure
