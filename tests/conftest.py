from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus" / "synthetic"
PROBLEMS = ROOT / "corpus" / "problems"


def run_cli(*args: str, cwd: Path | None = None, stdin: str | None = None) -> subprocess.CompletedProcess:
    """Run the real CLI in a subprocess, as a user would."""
    return subprocess.run([sys.executable, "-m", "hackscan.cli", *args], cwd=cwd or ROOT, capture_output=True,
                          text=True, input=stdin, timeout=300)


@pytest.fixture
def cli():
    return run_cli
