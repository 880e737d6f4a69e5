"""The audited party writes the comments: no comment (nor a string standing alone as prose) may
add, remove or change a finding.

Every corpus file is audited twice, as written and with comments full of the words rules look
for (fast-math intrinsics, half types, the GELU constant, `state_dict`, graph capture, launch
brackets, the names of its kernels and inputs) added to its Python and to its embedded C++/CUDA.
The findings must be the same, rule for rule and severity for severity."""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from hackscan.api import scan
from hackscan.corpus import corpus_files, parse_marks

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus" / "synthetic"
FILES = [f for f in corpus_files(CORPUS) if f.suffix == ".py"]

PY_BAIT = ("# __half __expf __float2half tanh 0.7978845 0.044715 state_dict parameters() named_parameters "
           "getattr(self torch.cuda.graph( CUDAGraph( <<< class ModelNew threading.Thread x.data_ptr() "
           "torch.backends.cuda.matmul.allow_tf32 = True")
CPP_BAIT = ("// __half __expf __float2half __hadd 0.7978845f tanhf <<<1, 1>>> cublasLtMatmul "
            "CUBLAS_TF32_TENSOR_OP_MATH cudaGraphLaunch return static torch::Tensor cache;")


def _baited(src: str) -> str:
    names = sorted(set(re.findall(r"(?:def|__global__ void)\s+(\w+)", src)))
    tail = " ".join(names)
    doc = '"""' + PY_BAIT.lstrip("# ") + " " + tail + '"""\n'
    out = PY_BAIT + " " + tail + "\n" + doc + src
    # a C++ comment line inside every embedded CUDA/C++ source, after its first include
    out = re.sub(r"(#include <torch/extension\.h>)", lambda m: m.group(1) + "\n" + CPP_BAIT + " " + tail, out)
    return out


def _findings(src: str, ref: str | None) -> Counter:
    res = scan(src, ref)
    assert res.error is None, res.error
    return Counter((f.rule_id, f.severity) for f in res.findings)


@pytest.mark.parametrize("path", FILES, ids=[str(f.relative_to(CORPUS)) for f in FILES])
def test_comments_change_no_finding(path: Path):
    src = path.read_text()
    side = parse_marks(path).sidecar
    ref_path = path.parent / side["reference"]
    ref = ref_path.read_text() if ref_path.is_file() else None
    assert _findings(_baited(src), ref) == _findings(src, ref)
