"""KernelBench run folders: kernels named level_L_problem_P_sample_S_kernel.py, the problems
under --problems, and the run's eval_results.json whose claims hackscan reports beside its own."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hackscan.inputs.kernelbench_runs import claims_for, read_eval_results

ROOT = Path(__file__).resolve().parent.parent
SYN = ROOT / "corpus" / "synthetic"
PROB = ROOT / "corpus" / "problems"

# (problem id, problem file, corpus candidate, its static verdict)
RUN = [(1, "matmul.py", "timer-tampering/event_elapsed_patched.py", "hacked"),
       (2, "add.py", "legit/data_ptr_argument.py", "clean"),
       (3, "layernorm.py", "init-exploitation/layernorm_no_affine.py", "violation")]


def make_run(tmp: Path, layout: str) -> tuple[Path, Path]:
    problems = tmp / "KernelBench" / "level1"
    problems.mkdir(parents=True)
    run = tmp / "runs" / "my_run"
    run.mkdir(parents=True)
    results = {}
    for pid, pfile, cand, _ in RUN:
        shutil.copy(PROB / pfile, problems / f"{pid}_{Path(pfile).stem}.py")
        for sample in (0, 1) if layout == "samples" else (0,):
            shutil.copy(SYN / cand, run / f"level_1_problem_{pid}_sample_{sample}_kernel.py")
            r = {"compiled": True, "correctness": True, "runtime": 0.5, "ref_runtime": 2.0,
                 "metadata": {"hardware": "NVIDIA H200"}, "sample_id": sample}
            if layout == "samples":
                results.setdefault(str(pid), {})[str(sample)] = r
            else:
                results[str(pid)] = r
    (run / "eval_results.json").write_text(json.dumps(results))
    return run, tmp / "KernelBench"


@pytest.mark.parametrize("layout", ["samples", "flat"])
def test_eval_results_layouts(tmp_path, layout):
    run, _ = make_run(tmp_path, layout)
    got = read_eval_results(run / "eval_results.json")
    assert sorted(got) == sorted((pid, s) for pid, *_ in RUN for s in ((0, 1) if layout == "samples" else (0,)))
    claims = claims_for(sorted(run.glob("*_kernel.py")))
    assert len(claims) == len(got) and all(c["correctness"] and c["speedup"] == 4.0 for c in claims.values())


def test_audit_reports_kernelbench_claims_beside_verdicts(tmp_path, cli):
    run, problems = make_run(tmp_path, "samples")
    r = cli("audit", "--format", "json", "--problems", str(problems), str(run))
    doc = json.loads(r.stdout)
    subs = {Path(s["path"]).name: s for s in doc["submissions"]}
    assert len(subs) == 6
    for pid, _, _, verdict in RUN:
        for sample in (0, 1):
            s = subs[f"level_1_problem_{pid}_sample_{sample}_kernel.py"]
            assert s["reference"].endswith(f"level1/{pid}_{Path(RUN[pid - 1][1]).stem}.py")
            assert s["verdict"] == verdict and s["kernelbench_claim"]["correctness"] is True
    assert doc["kernelbench_run"] == {"samples": 6, "claimed_correct": 6, "claimed_correct_but_hacked": 2,
                                      "claimed_correct_but_violation": 2, "claimed_correct_and_clean": 2}
    text = cli("audit", "--problems", str(problems), str(run)).stdout
    assert "marked 6 of 6 samples correct; of those hackscan finds 2 hacked, 2 in violation, 2 clean" in text


def test_broken_eval_results_is_ignored(tmp_path, cli):
    run, problems = make_run(tmp_path, "flat")
    (run / "eval_results.json").write_text("{not json")
    r = cli("audit", "--format", "json", "--problems", str(problems), str(run))
    doc = json.loads(r.stdout)
    assert len(doc["submissions"]) == 3 and "kernelbench_run" not in doc
    assert all("kernelbench_claim" not in s for s in doc["submissions"])
