"""hackscan.naive's check runs each pair in a process of its own: on the CPU a child forked from
a server that imported torch and Triton. What a fresh interpreter gave (a raise, an exit, a hang,
the check's environment, a fresh process per pair) each child still gives."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.dynamic    # runs candidates in child processes

from hackscan.naive import naive_check  # noqa: E402

REFERENCE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.rand(4, 64) - 0.5]

def get_init_inputs():
    return []
"""


def _pair(tmp_path: Path, candidate: str) -> tuple[Path, Path]:
    ref = tmp_path / "reference.py"
    ref.write_text(textwrap.dedent(REFERENCE))
    cand = tmp_path / "candidate.py"
    cand.write_text(textwrap.dedent(candidate))
    return cand, ref


def test_an_honest_pair_passes_every_trial_and_a_wrong_one_fails_them(tmp_path):
    cand, ref = _pair(tmp_path, """
        import torch, torch.nn as nn
        class ModelNew(nn.Module):
            def forward(self, x):
                return x.clamp(min=0)
        """)
    assert naive_check(cand, ref) == {"trials": [True] * 5, "notes": [""] * 5}
    cand.write_text("import torch.nn as nn\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n")
    r = naive_check(cand, ref, seed=(42, 7))
    assert r["trials"] == [False] * 10 and all(n.startswith("max |diff|") for n in r["notes"]), r


def test_a_candidate_that_raises_exits_or_hangs_is_an_error_that_says_which(tmp_path):
    cand, ref = _pair(tmp_path, """
        import torch.nn as nn
        class ModelNew(nn.Module):
            def forward(self, x):
                raise ValueError("no kernel for this shape")
        """)
    r = naive_check(cand, ref)
    assert "ValueError: no kernel for this shape" in r["error"], r
    cand.write_text("import os\nos._exit(3)\n")
    assert naive_check(cand, ref)["error"].startswith("exit 3"), naive_check(cand, ref)
    cand.write_text("import time\nwhile True:\n    time.sleep(1)\n")
    assert naive_check(cand, ref, timeout=3) == {"error": "no result within 3 s"}


def test_each_pair_gets_a_fresh_process_with_the_checks_environment(tmp_path):
    """State a candidate leaves in its process (a module global, torch's flags) never reaches the
    next pair's, and every child sees the CPU check's environment and its own folder first on the
    import path (a sibling helper imports as it does under `python -c`)."""
    (tmp_path / "helper_mod.py").write_text("VALUE = 1\n")
    cand, ref = _pair(tmp_path, """
        import os, sys, torch, torch.nn as nn
        import helper_mod
        assert os.environ["TRITON_INTERPRET"] == "1" and os.environ["CUDA_VISIBLE_DEVICES"] == ""
        assert os.getcwd() == os.path.dirname(os.path.abspath(__file__))
        FIRST = not hasattr(torch, "_hackscan_naive_mark")
        torch._hackscan_naive_mark = True
        torch.backends.cuda.matmul.allow_tf32 = True
        class ModelNew(nn.Module):
            def forward(self, x):
                # right only in a process no other pair ran in
                return torch.relu(x) if FIRST and helper_mod.VALUE == 1 else x
        """)
    for _ in range(2):
        assert naive_check(cand, ref)["trials"] == [True] * 5
