"""Every install hint names something pip installs: the place this copy was installed from (pip's
PEP 610 record), the source tree it runs from, or the distribution's name as a last resort."""
from __future__ import annotations

import importlib.metadata as md
import json
import subprocess
import sys

from hackscan import install

from conftest import ROOT


class _Dist:
    def __init__(self, direct_url):
        self.raw = None if direct_url is None else json.dumps(direct_url)

    def read_text(self, name):
        return self.raw if name == "direct_url.json" else None


def test_the_hint_names_the_checkout_or_url_this_copy_came_from(monkeypatch):
    monkeypatch.setattr(md, "distribution", lambda name: _Dist({"url": "file:///home/u/src/hack%20scan",
                                                                "dir_info": {"editable": True}}))
    assert install.hint("ray") == "pip install '/home/u/src/hack scan[ray]'"
    monkeypatch.setattr(md, "distribution", lambda name: _Dist({"url": "https://example.org/h.git",
                                                                "vcs_info": {"vcs": "git", "commit_id": "ab"}}))
    assert install.hint("parquet") == "pip install 'hackscan-gpu[parquet] @ git+https://example.org/h.git'"


def test_without_a_record_the_source_tree_then_the_name(monkeypatch):
    def missing(name):
        raise md.PackageNotFoundError(name)

    monkeypatch.setattr(md, "distribution", missing)
    assert install.hint("ray") == f"pip install '{ROOT}[ray]'"
    monkeypatch.setattr(install, "__file__", "/nowhere/hackscan/install.py")
    assert install.hint("ray") == "pip install 'hackscan-gpu[ray]'"


def test_the_dynamic_hint_says_how_to_keep_torch_cpu_only():
    h = install.hint("dynamic")
    assert "[dynamic]" in h and "--index-url https://download.pytorch.org/whl/cpu" in h


def test_the_cli_names_an_installable_place_when_torch_is_missing(tmp_path):
    """The message a user without PyTorch sees names this checkout, not an unpublished name."""
    cand = tmp_path / "k.py"
    cand.write_text("import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n")
    code = ("import sys, builtins\n"
            "real = builtins.__import__\n"
            "def no_torch(name, *a, **k):\n"
            "    if name == 'torch' or name.startswith('torch.'):\n"
            "        raise ImportError(name)\n"
            "    return real(name, *a, **k)\n"
            "builtins.__import__ = no_torch\n"
            "from hackscan.cli import main\n"
            f"sys.exit(main(['audit', {str(cand)!r}, '--dynamic', 'all']))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert "needs PyTorch" in p.stderr, p.stderr[-800:]
    assert "[dynamic]" in p.stderr and "pip install 'hackscan-gpu[dynamic]'" not in p.stderr, p.stderr[-800:]


def test_a_candidate_that_cannot_import_triton_here_says_how_to_install_it(monkeypatch):
    """The dynamic extra installs Triton (a Triton candidate runs in the auditor's Python, in its
    interpreter on a CPU); where it is missing, the error says so and how to add it, and says
    nothing where the auditor has Triton (the candidate's own import failed)."""
    import configparser
    import importlib.util

    from hackscan.dynamic.candidates import _missing_triton_hint

    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    assert any(line.strip().startswith("triton") for line in cfg["options.extras_require"]["dynamic"].splitlines())
    err = "ModuleNotFoundError: No module named 'triton'"
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "triton" else real(name, *a))
    hint = _missing_triton_hint(err)
    assert hint and "[dynamic]" in hint and "Triton is not installed" in hint
    assert _missing_triton_hint("ModuleNotFoundError: No module named 'cupy'") is None
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())
    assert _missing_triton_hint(err) is None
