"""Every kind of unreadable input gives that file an `error` verdict with a one-line reason,
and the audit carries on with the other files."""
from __future__ import annotations

import json

import pytest

from conftest import CORPUS, run_cli

CASES = {
    "syntax.py": (b"class ModelNew(:\n    pass\n", "syntax error at line 1"),
    "undecodable.py": (b"class ModelNew:\n    x = '\xff\xfe'\n", "not UTF-8"),
    "binary.py": (b"\x7fELF\x00\x00\x01\x02" * 64, "binary"),
    "empty.py": (b"   \n\n", "empty"),
    "no_entry.py": (b"import torch\n\nclass Model2(torch.nn.Module):\n    pass\n", "no entry class 'ModelNew'"),
    "huge.py": (b"class ModelNew:\n    pass\n" + b"# padding\n" * 120_000, "over the"),
    "bad.cu": (b"\x00\x01binary cuda", "binary"),
}


@pytest.fixture
def bad_dir(tmp_path):
    for name, (data, _) in CASES.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "good.py").write_bytes((CORPUS / "legit" / "triton_relu.py").read_bytes())
    (tmp_path / "hack.py").write_bytes((CORPUS / "constant-output" / "mean_difference_returns_zero.py").read_bytes())
    return tmp_path


def test_each_bad_file_gets_an_error_and_the_audit_goes_on(bad_dir):
    r = run_cli("audit", "--format", "json", str(bad_dir))
    assert r.returncode == 1
    subs = {s["path"].rsplit("/", 1)[-1]: s for s in json.loads(r.stdout)["submissions"]}
    for name, (_, reason) in CASES.items():
        assert subs[name]["verdict"] == "error", name
        assert reason in subs[name]["error"], (name, subs[name]["error"])
        assert "\n" not in subs[name]["error"]
    assert subs["good.py"]["verdict"] == "clean"
    assert subs["hack.py"]["verdict"] == "suspect"


def test_grammar_error_node(tmp_path):
    # a character neither Python nor the grammar accepts: an ERROR node, reported per file
    p = tmp_path / "grammar.py"
    p.write_text("class ModelNew:\n    def forward(self, x):\n        return x $ 2\n")
    sub = json.loads(run_cli("audit", "--format", "json", str(p)).stdout)["submissions"][0]
    assert sub["verdict"] == "error"


def test_missing_path_is_an_error_item(tmp_path):
    r = run_cli("audit", "--format", "json", str(tmp_path / "nope.py"), str(CORPUS / "legit" / "triton_relu.py"))
    subs = json.loads(r.stdout)["submissions"]
    assert subs[0]["verdict"] == "error" and "no such file" in subs[0]["error"]
    assert subs[1]["verdict"] == "clean"


def test_grammar_error_without_syntax_error(monkeypatch):
    """When tree-sitter reports ERROR nodes but Python parses the file, the reason names the
    grammar, not a syntax error."""
    from hackscan.inputs import load as loader

    class FakeTree:
        class root_node:
            has_error = True
            type = "module"
            is_missing = False
            children = []
            start_point = (4, 0)

    monkeypatch.setattr(loader, "parse_python", lambda src: FakeTree)
    with pytest.raises(loader.BadInput, match="grammar ERROR node"):
        loader.parse_py("x.py", "class ModelNew:\n    pass\n", "file")


def test_a_kernel_built_for_another_gpu_reads_as_such(tmp_path):
    """Four honest bf16/fp8 kernels of a public run, built with sm_100a/sm_120a flags, raised
    "no kernel image is available" on the H200: the error names the architectures their source
    builds for, so that it reads as a kernel for another GPU, not a broken one. An explanation of
    the error only; any other error, or one on a CPU, gets none."""
    from hackscan.dynamic.candidates import _architecture_hint

    cand = tmp_path / "cand.py"
    cand.write_text('import os\nos.environ["TORCH_CUDA_ARCH_LIST"] = "12.0a"\n'
                    'FLAGS = ["-gencode=arch=compute_100a,code=sm_100a", "-O3"]\n')
    err = "forward raised on every call: AcceleratorError: CUDA error: no kernel image is available for execution on the device"
    hint = _architecture_hint(err, cand, "cuda")
    assert hint and "sm_100a" in hint and "sm_120a" in hint and "another GPU" in hint, hint
    assert _architecture_hint("forward raised on every call: RuntimeError: shape mismatch", cand, "cuda") is None
    assert _architecture_hint(err, cand, "cpu") is None
    plain = tmp_path / "plain.py"
    plain.write_text("import torch\n")
    assert _architecture_hint(err, plain, "cuda") is None
