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


@pytest.fixture(autouse=True)
def _fixed_seeds():
    """Every test draws the same numbers on every run: a property that holds only for most draws
    (an overflow that needs one value past 88) must not fail CI one time in five. The audited
    workers run in their own processes and draw their own seeds; this fixes only the test's."""
    import random
    random.seed(0)
    try:
        import numpy
        numpy.random.seed(0)
    except ImportError:
        pass
    try:
        import torch
    except ImportError:
        return
    torch.manual_seed(0)


@pytest.fixture
def cli():
    return run_cli


# modules whose every test starts audited workers (the `dynamic` tier); tests that do elsewhere
# carry @pytest.mark.dynamic themselves
DYNAMIC_MODULES = {"test_dynamic", "test_dynamic_corpus", "test_dynamic_domain", "test_hostile",
                   "test_kernelbench_dropin", "test_measure_run", "test_ray", "test_rl_reward", "test_sandbox",
                   "test_session", "test_api_docs", "test_corpus_claims", "test_ray_gpus", "test_hostile_bare"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.module.__name__ in DYNAMIC_MODULES:
            item.add_marker(pytest.mark.dynamic)


def standalone_worker(folder: Path):
    """The worker package loaded as the runner runs it: copied into `folder` as `_hsworker/`
    with its entry script beside it, imported from there and not from hackscan. Returns a
    namespace of every module's names (tests read the functions where they run)."""
    import importlib.util
    import shutil
    import types

    import hackscan.dynamic.runner as runner

    shutil.copytree(runner.WORKER, folder / "_hsworker", ignore=shutil.ignore_patterns("__pycache__", "_entry.py"),
                    dirs_exist_ok=True)
    shutil.copy(runner.WORKER / "_entry.py", folder / "_worker.py")
    spec = importlib.util.spec_from_file_location("hs_worker_entry", folder / "_worker.py")
    entry = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(entry)
    entry._package()
    names = {}
    for mod in ("common", "evidence", "profiler", "measurement", "instrumentation", "tensorfiles", "inputs",
                "models", "steps", "driver"):
        m = importlib.import_module(f"_hsworker.{mod}")
        names.update({k: v for k, v in vars(m).items() if not k.startswith("__")})
    return types.SimpleNamespace(**names)
