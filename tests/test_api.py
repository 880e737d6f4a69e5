"""The library entry point and the security properties of the static pass."""
from __future__ import annotations

import subprocess
import sys

from hackscan import scan

from conftest import CORPUS, PROBLEMS, ROOT


def test_scan_in_memory():
    cand = (CORPUS / "value-special-casing" / "relu_nonneg_shortcut.py").read_text()
    ref = (PROBLEMS / "relu.py").read_text()
    res = scan(cand, ref)
    assert res.verdict == "violation"
    assert "value-special-casing" in res.hack_types
    assert any(f.rule_id == "value-dependent-branch" for f in res.findings)
    d = res.to_json()
    assert d["findings"][0]["dynamic"] == {"status": "not-run", "probe": None, "detail": None}


def test_scan_raw_cuda():
    res = scan((CORPUS / "side-stream" / "cuda_stream_create.cu").read_text(), language="cuda")
    assert res.verdict == "suspect" and "side-stream" in res.hack_types


def test_static_pass_never_imports_torch():
    code = ("import sys, hackscan; from pathlib import Path; "
            "r = hackscan.scan_paths([Path('corpus/synthetic')]); "
            "assert len(r) >= 90; assert 'torch' not in sys.modules, 'torch was imported'")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=300)


def test_suppression_comments_are_not_honoured():
    src = (CORPUS / "obfuscation" / "suppressed_shortcut.py").read_text()
    res = scan(src)
    ids = [f.rule_id for f in res.findings]
    assert "value-dependent-branch" in ids, "the suppressed finding is still reported"
    assert "suppression-comment" in ids, "the suppression attempt itself is reported"


def test_candidate_is_never_executed(tmp_path):
    marker = tmp_path / "ran"
    src = f"open({str(marker)!r}, 'w').write('x')\nclass ModelNew:\n    pass\n"
    scan(src)
    assert not marker.exists()
