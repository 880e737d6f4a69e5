from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus" / "synthetic"
PROBLEMS = ROOT / "corpus" / "problems"


def run_cli(*args: str, cwd: Path | None = None, stdin: str | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the real CLI in a subprocess, as a user would. Audits are static unless the test
    asks for a dynamic mode (dynamic tests live in test_dynamic*.py)."""
    args = list(args)
    if args and args[0] == "audit" and not any(a.startswith("--dynamic") for a in args):
        args.insert(1, "--dynamic=off")
    return subprocess.run([sys.executable, "-m", "hackscan.cli", *args], cwd=cwd or ROOT, capture_output=True,
                          text=True, input=stdin, timeout=timeout)


@pytest.fixture
def cli():
    return run_cli
