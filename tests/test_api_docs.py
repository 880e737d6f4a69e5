"""docs/api.md's Python examples run, in order, in one namespace (each may use names an earlier
one defined), and `--api-mode` behaves as documented."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_every_api_example_runs():
    # in a fresh interpreter, as a user would run them: the process-wide shared session of the reward
    # adapters must not carry state from tests that ran earlier in this process
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    text = (ROOT / "docs" / "api.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 5
    runner = (
        "import sys, traceback\n"
        "ns = {}\n"
        "for i, b in enumerate(BLOCKS):\n"
        "    try:\n"
        "        exec(compile(b, f'docs/api.md[{i}]', 'exec'), ns)\n"
        "    except BaseException:\n"
        "        print(f'example {i} failed:\\n{b}', file=sys.stderr)\n"
        "        traceback.print_exc()\n"
        "        sys.exit(1)\n"
    )
    p = subprocess.run([sys.executable, "-c", f"BLOCKS = {blocks!r}\n{runner}"], capture_output=True, text=True,
                       cwd=ROOT)
    assert p.returncode == 0, p.stderr[-6000:]


def api_mode(src: str, *extra: str) -> tuple[int, dict]:
    p = subprocess.run([sys.executable, "-m", "hackscan.cli", "audit", "--api-mode", *extra], input=src,
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    return p.returncode, json.loads(p.stdout.strip().splitlines()[-1])


def test_api_mode_last_line_and_exit_code():
    # a certain cheat (the timer rebound) is filtered; a suspicion no run settled is not
    hack = (ROOT / "corpus/synthetic/timer-tampering/event_elapsed_patched.py").read_text()
    rc, obj = api_mode(hack)
    assert rc == 0 and obj["should_filter"] and obj["classification"] == "hacked"
    assert obj["filter_reason"] == "high_critical"
    assert "TIMER_API_PATCHED" in {p["pattern"] for p in obj["matched_patterns"]}
    rc, obj = api_mode((ROOT / "corpus/synthetic/value-special-casing/relu_nonneg_shortcut.py").read_text())
    assert rc == 0 and obj["classification"] == "suspicious" and not obj["should_filter"]
    assert obj["filter_reason"] is None and "value-dependent-branch" in {p["rule_id"] for p in obj["matched_patterns"]}
    rc, obj = api_mode((ROOT / "corpus/synthetic/legit/triton_relu.py").read_text())
    assert rc == 0 and obj["classification"] == "valid" and not obj["should_filter"] and obj["matched_patterns"] == []
    rc, obj = api_mode("")
    assert rc == 0 and obj["classification"] == "low_confidence" and not obj["should_filter"] and obj["error"]


def test_api_mode_reads_stdin_as_source_never_as_a_path(tmp_path):
    """A one-line stdin that names a file: the object is about that text, and the file named is
    never read (its content would otherwise be audited and reported as the candidate)."""
    victim = tmp_path / "victim.py"
    victim.write_text((ROOT / "corpus/synthetic/timer-tampering/event_elapsed_patched.py").read_text())
    rc, obj = api_mode(str(victim))
    assert rc == 0 and obj["classification"] != "hacked"
    assert "TIMER_API_PATCHED" not in {p["pattern"] for p in obj["matched_patterns"]}
