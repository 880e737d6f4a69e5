"""GPU MODE submissions (`custom_kernel(data)` beside a problem folder with `reference.py`,
`task.yml`, `task.py`, `utils.py`): discovery, static and dynamic audits, the KernelGuard mode."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hackscan.inputs import gpumode
from hackscan.inputs.discover import discover

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = ROOT / "corpus" / "gpumode" / "matrix_add"

WRITES_ITS_INPUT = '''
import torch
import triton
import triton.language as tl

from task import input_t, output_t


@triton.jit
def add_into_a(a_ptr, b_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(a_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


def custom_kernel(data: input_t) -> output_t:
    a, b, out = data
    add_into_a[(triton.cdiv(a.numel(), 1024),)](a, b, a.numel(), BLOCK=1024)
    return a          # right values, but the caller's `a` is overwritten and `out` never written
'''


def test_discovery_pairs_only_submissions_with_the_reference():
    items = discover([PROBLEM], sidecars=True)
    assert sorted(i.path.name for i in items) == ["submission.py", "submission_pointer_cache.py",
                                                   "submission_torch.py"]   # not task.py, utils.py
    assert all(i.reference == PROBLEM / "reference.py" for i in items)


def test_task_yml_sizes_with_and_without_yaml():
    specs = gpumode.task_specs(PROBLEM)
    assert specs["tests"][0] == {"size": 127, "seed": 4242} and specs["benchmarks"] == [{"size": 4096, "seed": 9817}]
    text = (PROBLEM / "task.yml").read_text()
    assert {k: gpumode._flow_specs(text, k) for k in ("tests", "benchmarks")} == specs
    assert gpumode.problem_args(PROBLEM / "reference.py", "cpu") == {"size": 127, "seed": 4242}
    assert gpumode.problem_args(PROBLEM / "reference.py", "cuda") == {"size": 4096, "seed": 9817}


def test_static_verdicts_and_lines_in_the_users_file(cli):
    r = cli("audit", "--format", "json", str(PROBLEM))
    subs = {Path(s["path"]).name: s for s in json.loads(r.stdout)["submissions"]}
    assert subs["submission.py"]["verdict"] == "clean", subs["submission.py"]
    assert subs["submission_pointer_cache.py"]["verdict"] == "suspect"
    assert "result-caching" in subs["submission_pointer_cache.py"]["hack_types"]
    assert subs["submission_torch.py"]["verdict"] == "violation"
    assert subs["submission_torch.py"]["hack_types"] == ["torch-fallback"]
    for name, s in subs.items():
        n = len((PROBLEM / name).read_text().splitlines())
        assert all(1 <= f["location"]["line"] <= n for f in s["findings"]), (name, s["findings"])


def test_materialized_pair_keeps_the_reference_away_from_the_candidate(tmp_path):
    c, r = gpumode.materialize(PROBLEM / "submission.py", PROBLEM / "reference.py", tmp_path)
    assert sorted(p.name for p in c.parent.glob("*.py")) == ["submission.py", "task.py", "utils.py"]
    assert not (c.parent / "reference.py").exists()
    text = c.read_text()
    assert text.startswith((PROBLEM / "submission.py").read_text().rstrip("\n")) and "class ModelNew" in text
    assert "def get_inputs" in r.read_text() and "_hackscan_arg_size = 127" in r.read_text()


@pytest.mark.dynamic
def test_dynamic_on_cpu(tmp_path, cli):
    prob = tmp_path / "matrix_add"
    shutil.copytree(PROBLEM, prob)
    (prob / "submission_writes_input.py").write_text(WRITES_ITS_INPUT)
    r = cli("audit", "--dynamic", "all", "--device", "cpu", "--format", "json", "--jobs", "2", str(prob), timeout=900)
    subs = {Path(s["path"]).name: s for s in json.loads(r.stdout)["submissions"]}
    honest = subs["submission.py"]
    assert honest["verdict"] == "clean" and honest["dynamic"]["status"] == "ran"
    assert honest["dynamic"]["correct_on_visible"]
    # it writes `out`, which the reference writes too: not an input mutation
    assert honest["dynamic"]["probes"]["input-integrity"]["status"] == "passed"
    assert honest["dynamic"]["probes"]["other-shapes"]["status"] == "passed"
    cache = subs["submission_pointer_cache.py"]
    assert cache["verdict"] == "hacked" and cache["dynamic"]["probes"]["fresh-call-consistency"]["status"] == "caught"
    assert subs["submission_torch.py"]["verdict"] == "violation"
    writes = subs["submission_writes_input.py"]
    assert writes["dynamic"]["probes"]["input-integrity"]["status"] == "caught", writes["dynamic"]["probes"]


def test_kernelguard_mode_takes_a_gpumode_submission(cli):
    # the PyTorch-only submission is a contract violation: filtered under KernelGuard's strict
    # profile, suspicious (never filtered) under its default one
    for name, profile, want in (("submission.py", "default", False), ("submission_torch.py", "default", False),
                                ("submission_torch.py", "strict", True)):
        r = cli("audit", "--api-mode", "--profile", profile, stdin=(PROBLEM / name).read_text())
        assert r.returncode == 0
        out = json.loads(r.stdout.strip().splitlines()[-1])
        assert out["verdict"] != "error" and out["should_filter"] is want, out
        assert out["classification"] == ("hacked" if want else "valid" if name == "submission.py" else "suspicious")
