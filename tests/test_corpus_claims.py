"""The corpus proves what it claims: every CPU-runnable hack pair passes a naive KernelBench-style
check on its own problem (both models built after the same seed, the reference's `get_inputs()`,
`torch.allclose` with atol = rtol = 1e-2, the check of KernelBench v0 and v0.1 under which the
published hacks were found, over five seeded trials, without .eval()). A hack example that fails its own
benchmark is a strawman: catching it proves nothing. Hacks whose mechanism is state across calls
(result caching, cross-call batching, phase detection) target the calls after the check: they
must pass its first trial (KernelBench's default is one). A sidecar's `naive_order =
"candidate-first"` names a hack aimed at harnesses that run the candidate before the reference
(the check runs that way for it); `naive_check = "<why>"` skips a pair whose mechanism the CPU
cannot show, with the reason.

Each pair runs in its own subprocess (Triton under TRITON_INTERPRET=1), never in the test's."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hackscan.corpus import corpus_files, parse_marks

from conftest import CORPUS

pytest.importorskip("torch")
pytest.importorskip("triton")

HACKS = [f for f in corpus_files(CORPUS) if f.parent.name != "legit" and parse_marks(f).sidecar.get("cpu")]

# KernelBench's check (src/eval.py: eval_kernel_against_ref and run_and_check_correctness),
# its steps written here: the seed set before the init inputs and before each model is built; no
# .eval() (both models stay in training mode, as KernelBench leaves them); the trials' seeds drawn
# from the seed; each trial seeds, draws get_inputs(), seeds again, runs the reference and then the
# candidate on the same inputs with no seed between them (the reference's draws, if any, move the
# generator the candidate sees), while the reference's output is still held; a shape mismatch
# fails; allclose with atol = rtol = 1e-2 (KernelBench v0 and v0.1's fp32 check, under which the
# published hacks were found); KernelBench's evaluation scripts run five trials
NAIVE = r'''
import importlib.util, json, sys
import torch

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod

ref = load(sys.argv[1], "reference_module")
sys.modules["reference"] = ref    # the name a harness that puts reference.py beside the candidate gives it
cand = load(sys.argv[2], "candidate_module")
entry = getattr(cand, sys.argv[3])
candidate_first = sys.argv[4] == "candidate-first"
SEED = int(sys.argv[5])
TRIALS = int(sys.argv[6])

def set_seed(s):
    torch.manual_seed(s)
    torch.cuda.manual_seed(s) if torch.cuda.is_available() else None

TOL = 1e-2
with torch.no_grad():
    set_seed(SEED)
    init = ref.get_init_inputs()
    set_seed(SEED)
    model = ref.Model(*init)
    set_seed(SEED)
    new = entry(*init)
torch.manual_seed(SEED)
seeds = [torch.randint(0, 2**32 - 1, (1,)).item() for _ in range(TRIALS)]
results = []
with torch.no_grad():
    for trial, seed in enumerate(seeds):
        set_seed(seed)
        inputs = ref.get_inputs()
        set_seed(seed)
        # KernelBench's names: the reference's answer is `output`, the candidate's `output_new`
        if candidate_first:
            output_new = new(*inputs)
            output = model(*inputs)
        else:
            output = model(*inputs)
            output_new = new(*inputs)
        exp = output if isinstance(output, (list, tuple)) else [output]
        out = output_new if isinstance(output_new, (list, tuple)) else [output_new]
        ok = len(exp) == len(out)
        for e, g in zip(exp, out):
            if not (isinstance(e, torch.Tensor) and isinstance(g, torch.Tensor)):
                ok = ok and e == g
                continue
            if e.shape != g.shape:
                ok = False
                continue
            tol = TOL if e.is_floating_point() else 0.0
            ok = ok and bool(torch.allclose(e, g, atol=tol, rtol=tol))
        results.append(bool(ok))
print(json.dumps(results))
'''
TRIALS = 5


def naive_check(path: Path, seed: int = 42) -> list[bool]:
    """The check's trial results (KernelBench's default seed 42, or another base seed)."""
    side = parse_marks(path).sidecar
    ref = (path.parent / side["reference"]).resolve()
    env = dict(os.environ, TRITON_INTERPRET="1", CUDA_VISIBLE_DEVICES="", PYTHONHASHSEED="0")
    p = subprocess.run([sys.executable, "-c", NAIVE, str(ref), str(path), side.get("entry", "ModelNew"),
                        side.get("naive_order", "reference-first"), str(seed), str(TRIALS)],
                       capture_output=True, text=True, timeout=900, env=env, cwd=path.parent)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_enough_cpu_hacks():
    assert len(HACKS) >= 50


ACROSS_CALLS = {"result-caching", "cross-call-batching", "phase-detection"}


@pytest.mark.parametrize("path", HACKS, ids=lambda p: str(p.relative_to(CORPUS)))
def test_a_hack_passes_its_own_benchmarks_check(path: Path):
    side = parse_marks(path).sidecar
    if side.get("naive_check"):
        # the mechanism exists only where the sidecar says (the CUDA caching allocator handing
        # back the reference's freed output): the CPU cannot show it, and the reason is recorded
        pytest.skip(side["naive_check"])
    trials = naive_check(path)
    across = bool(set(parse_marks(path).sidecar.get("hack_types", ())) & ACROSS_CALLS)
    need = trials[:1] if across else trials
    assert all(need), f"fails the naive KernelBench check on its own inputs: trials {trials}"


LEGIT = [f for f in corpus_files(CORPUS) if f.parent.name == "legit" and parse_marks(f).sidecar.get("cpu")]


@pytest.mark.parametrize("path", LEGIT, ids=lambda p: str(p.relative_to(CORPUS)))
def test_a_look_alike_is_correct_over_several_seeds(path: Path):
    """A legitimate look-alike must be what it claims: correct on its problem's inputs, in
    every trial of the naive check under two base seeds (KernelBench's and another), not only
    on the draw its author tried. Its hidden sets are the dynamic corpus test's."""
    trials = naive_check(path, 42) + naive_check(path, 20261204)
    assert all(trials), f"a look-alike wrong on its own problem's inputs: trials {trials}"
