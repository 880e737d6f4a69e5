"""The pre-commit hook's entry, run the way pre-commit runs it (the changed files appended)."""
from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def test_hook_entry_fails_on_a_hack_and_passes_a_legit_kernel():
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    entry = shlex.split(hooks["hackscan"]["entry"])
    assert entry[0] == "hackscan"
    cmd = [sys.executable, "-m", "hackscan.cli", *entry[1:]]
    hack = ROOT / "corpus/synthetic/value-special-casing/relu_nonneg_shortcut.py"
    legit = ROOT / "corpus/synthetic/legit/triton_relu.py"
    bad = subprocess.run(cmd + [str(hack), str(legit)], capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 1 and "relu_nonneg_shortcut" in bad.stdout
    good = subprocess.run(cmd + [str(legit)], capture_output=True, text=True, cwd=ROOT)
    assert good.returncode == 0, good.stdout + good.stderr


def test_hook_passes_ordinary_python_and_still_audits_kernels(tmp_path):
    """A repository's ordinary modules are changed files too: the hook skips them, not errors."""
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    cmd = [sys.executable, "-m", "hackscan.cli", *shlex.split(hooks["hackscan"]["entry"])[1:]]
    plain = tmp_path / "util.py"
    plain.write_text("import os\n\n\ndef here():\n    return os.getcwd()\n")
    r = subprocess.run(cmd + [str(plain)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    hack = ROOT / "corpus/synthetic/value-special-casing/relu_nonneg_shortcut.py"
    r = subprocess.run(cmd + [str(plain), str(hack)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 1 and "relu_nonneg_shortcut" in r.stdout and "util.py" not in r.stdout
    # a Triton file without the entry class is still a kernel file: an error, not a skip
    triton_only = tmp_path / "kernels.py"
    triton_only.write_text("import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
                           "def k(x_ptr, n, B: tl.constexpr):\n    pass\n")
    r = subprocess.run(cmd + [str(triton_only)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode != 0 and "no entry class" in r.stdout + r.stderr
