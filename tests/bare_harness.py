"""An unprotected evaluator: a candidate run the way a benchmark's own harness runs it, in the
harness's process, with nothing in the way (no sandbox, no guard, no channel, no limits beyond
those the test gives the process). tests/test_hostile_bare.py runs every hostile case under it to
see the attack reach its target when nothing stands in its way: a hostile case that does nothing
here proves nothing when hackscan contains it.

    python bare_harness.py CANDIDATE REFERENCE JOBDIR

Like KernelBench's eval, it seeds, builds both models, draws the problem's inputs, computes the
reference's output, imports the candidate and checks its output with `torch.allclose` (atol =
rtol = 1e-2), then times a few calls with `time.perf_counter`; its report goes to
JOBDIR/result.json through `_emit`, a function of this module as a harness's would be. It also
keeps what the test reads and the candidate must not reach: the functions it checks and times
with, taken before the candidate's import, and a second draw the candidate is called on while the
first draw's reference output is still in the harness's frame. Its stage is written to
JOBDIR/stage before each step (a hang is then placed)."""
from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from pathlib import Path

import torch

ATOL = RTOL = 1e-2
DEVICE = os.environ.get("BARE_DEVICE", "cpu")
TIMED_CALLS = 3

# the harness's own functions, as they are before the candidate is imported
CAPTURED = {
    "torch.allclose": torch.allclose,
    "torch.testing.assert_close": torch.testing.assert_close,
    "time.perf_counter": time.perf_counter,
    "time.time": time.time,
    "torch.cuda.synchronize": torch.cuda.synchronize,
    "torch.cuda.Event.elapsed_time": torch.cuda.Event.elapsed_time,
}
REAL_ALLCLOSE = torch.allclose
REAL_CLOCK = time.perf_counter


def _resolve(name: str):
    obj = {"torch": torch, "time": time}[name.split(".")[0]]
    for part in name.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def _emit(jobdir, result) -> None:
    """The harness's report (a module-level function, as a harness's own would be)."""
    Path(jobdir, "result.json").write_text(json.dumps(result))


def _stage(jobdir: str, what: str) -> None:
    Path(jobdir, "stage").write_text(what)


def _load(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _really_close(out, ref) -> bool:
    try:
        return (isinstance(out, torch.Tensor) and out.shape == ref.shape
                and bool(REAL_ALLCLOSE(torch.Tensor.as_subclass(out, torch.Tensor), ref, atol=ATOL, rtol=RTOL)))
    except Exception:  # noqa: BLE001 - whatever the candidate returned, it is not the answer
        return False


def main(cand_path: str, ref_path: str, jobdir: str) -> None:
    result: dict = {"harness": "bare", "steps": []}
    _stage(jobdir, "reference")
    R = _load("reference_module", ref_path)
    torch.manual_seed(42)
    init = R.get_init_inputs()
    torch.manual_seed(42)
    model = R.Model(*init).to(DEVICE)
    torch.manual_seed(42)
    inputs = [t.to(DEVICE) if isinstance(t, torch.Tensor) else t for t in R.get_inputs()]
    ref_out = model(*inputs)
    _stage(jobdir, "candidate import")
    try:
        C = _load("candidate_module", cand_path)
        torch.manual_seed(42)
        cand = C.ModelNew(*init).to(DEVICE)
    except Exception as e:  # noqa: BLE001 - as a benchmark's harness does: recorded, the run goes on
        result["raised"] = f"import: {type(e).__name__}: {e}"
        _emit(jobdir, result)
        return
    _stage(jobdir, "candidate forward")
    try:
        out = cand(*inputs)
    except Exception as e:  # noqa: BLE001 - as above
        result["raised"] = f"forward: {type(e).__name__}: {e}"
        _emit(jobdir, result)
        return
    result["steps"].append({"set": "visible"})
    # the benchmark's check, with the functions as they are now (after the candidate's import)
    try:
        result["claimed_correct"] = bool(out.shape == ref_out.shape and torch.allclose(out, ref_out, atol=ATOL, rtol=RTOL))
    except Exception:  # noqa: BLE001 - the benchmark records a failed check and goes on
        result["claimed_correct"] = False
    try:   # the check itself, after the import, on an answer 1.0 off everywhere
        result["check_accepts_wrong"] = bool(torch.allclose(ref_out + 1.0, ref_out, atol=ATOL, rtol=RTOL))
    except Exception:  # noqa: BLE001 - a check that raises accepts nothing
        result["check_accepts_wrong"] = False
    result["output_bytes"] = [int(out.numel() * out.element_size()) if isinstance(out, torch.Tensor) else None,
                              int(ref_out.numel() * ref_out.element_size())]
    result["correct"] = _really_close(out, ref_out)
    result["plain_tensor"] = type(out) is torch.Tensor
    # a second draw, called while the first draw's reference output is in this frame
    torch.manual_seed(43)
    fresh = [t.to(DEVICE) if isinstance(t, torch.Tensor) else t for t in R.get_inputs()]
    _stage(jobdir, "candidate forward")
    try:
        fresh_out = cand(*fresh)
        result["correct_on_fresh"] = _really_close(fresh_out, model(*fresh))
    except Exception as e:  # noqa: BLE001 - as above
        result["correct_on_fresh"] = False
        result["raised"] = f"forward: {type(e).__name__}: {e}"
    result["steps"].append({"set": "fresh"})
    # the benchmark's timing, with the clock as it is now; the harness's own clock around it
    real0 = REAL_CLOCK()
    t0 = time.perf_counter()
    for _ in range(TIMED_CALLS):
        cand(*inputs)
        result["steps"].append({"set": "timing"})
    t1 = time.perf_counter()
    result["timed_s"], result["real_s"] = t1 - t0, REAL_CLOCK() - real0
    result["rebound"] = sorted(n for n, f in CAPTURED.items() if _resolve(n) is not f)
    _stage(jobdir, "done")
    _emit(jobdir, result)
    print(json.dumps({"harness": "bare", "correct": result["claimed_correct"]}), flush=True)   # to its caller


if __name__ == "__main__":
    main(*sys.argv[1:4])
