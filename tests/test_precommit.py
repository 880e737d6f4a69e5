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
