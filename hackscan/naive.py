"""KernelBench's correctness check, as a program run in a process of its own over one corpus pair
(the corpus's own claim: a hack passes the benchmark it was written against, a look-alike is
right). The steps are those of KernelBench's src/eval.py (eval_kernel_against_ref and
run_and_check_correctness), written here:

- the seed set before the init inputs and before each model is built; no `.eval()` (both models
  stay in training mode, as KernelBench leaves them);
- the trials' seeds drawn from the base seed; each trial seeds, draws `get_inputs()`, seeds before
  each model is moved to the device, runs the reference and then the candidate on the same inputs
  with no seed between them, while the reference's output is still held; on a GPU the inputs and
  the models go to it with `.cuda()` and each forward is followed by a synchronize;
- a shape mismatch fails; `torch.allclose` with atol = rtol = 1e-2 (KernelBench v0 and v0.1's
  check, under which the published hacks were found).

A hack aimed at another harness names it in its sidecar (`naive_order`):

- `candidate-first`: the candidate runs before the reference (harnesses that time or check the
  candidate first);
- `reference-on-host`: the reference's output is copied to the host and its device copy released
  before the candidate runs (harnesses that keep the expected answers on the host, comparing
  there); on a GPU the caching allocator may hand that freed block to the candidate.

The candidate is code under audit: it runs only in the child process this module starts."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

ORDERS = ("reference-first", "candidate-first", "reference-on-host")
TRIALS = 5
TOLERANCE = 1e-2

PROGRAM = r'''
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
ORDER = sys.argv[4]
SEEDS = [int(x) for x in sys.argv[5].split(",")]
TRIALS = int(sys.argv[6])
TOL = float(sys.argv[7])
GPU = sys.argv[8] == "cuda"

def set_seed(s):
    torch.manual_seed(s)
    if torch.cuda.is_available():
        torch.cuda.manual_seed(s)

def to_dev(xs):
    return [x.cuda() if GPU and isinstance(x, torch.Tensor) else x for x in xs]

def sync():
    if GPU:
        torch.cuda.synchronize()

def check(SEED):
    set_seed(SEED)
    init = to_dev(ref.get_init_inputs())
    with torch.no_grad():
        set_seed(SEED)
        model = ref.Model(*init)
        set_seed(SEED)
        new = entry(*init)
    torch.manual_seed(SEED)
    seeds = [torch.randint(0, 2**32 - 1, (1,)).item() for _ in range(TRIALS)]
    results, notes = [], []
    with torch.no_grad():
        for trial, seed in enumerate(seeds):
            set_seed(seed)
            inputs = to_dev(ref.get_inputs())
            set_seed(seed)
            if GPU:
                model = model.cuda()
            set_seed(seed)
            if GPU:
                new = new.cuda()
            # KernelBench's names: the reference's answer is `output`, the candidate's `output_new`
            if ORDER == "candidate-first":
                output_new = new(*inputs)
                sync()
                output = model(*inputs)
                sync()
            else:
                output = model(*inputs)
                sync()
                if ORDER == "reference-on-host":
                    output = [o.cpu() if isinstance(o, torch.Tensor) else o
                              for o in (output if isinstance(output, (list, tuple)) else [output])]
                output_new = new(*inputs)
                sync()
            exp = output if isinstance(output, (list, tuple)) else [output]
            out = output_new if isinstance(output_new, (list, tuple)) else [output_new]
            ok, note = len(exp) == len(out), ""
            for e, g in zip(exp, out):
                if not (isinstance(e, torch.Tensor) and isinstance(g, torch.Tensor)):
                    ok = ok and e == g
                    continue
                if e.shape != g.shape:
                    ok, note = False, f"shape {tuple(g.shape)} != {tuple(e.shape)}"
                    continue
                if ORDER == "reference-on-host":
                    g = g.cpu()
                elif g.device != e.device:
                    ok, note = False, f"output on {g.device}, the reference's on {e.device}"
                    continue
                tol = TOL if e.is_floating_point() else 0.0
                good = bool(torch.allclose(e, g, atol=tol, rtol=tol))
                if not good and e.is_floating_point():
                    note = f"max |diff| {(e.double() - g.double()).abs().max().item():.4g}"
                ok = ok and good
            results.append(bool(ok))
            notes.append(note)
    return results, notes

results, notes = [], []
for base in SEEDS:    # each base seed's check from the start: the init inputs, both models, the trials
    r, n = check(base)
    results += r
    notes += n
print(json.dumps({"trials": results, "notes": notes}))
'''


def naive_check(candidate: Path, reference: Path, entry: str = "ModelNew", order: str = "reference-first",
                seed: int | tuple[int, ...] = 42, trials: int = TRIALS, device: str = "cpu",
                timeout: float = 900) -> dict:
    """Run the check in a child process: {"trials": [bool, ...], "notes": [...]} on a run that
    ended, or {"error": text} where the pair raised or the process failed. Several base seeds
    run one after the other in the one process (each check from its start: the init inputs, both
    models, its trials), their trials in that order.

    On the CPU the child is forked from a server that has imported torch and Triton and nothing
    else (multiprocessing's forkserver): each pair still gets a process of its own, fresh from
    that import, without paying the import again (about 1.7 s of a 2.5 s check). On a GPU it is
    a fresh interpreter (a fork must not inherit a CUDA context)."""
    if order not in ORDERS:
        raise ValueError(f"unknown order {order!r}; one of {', '.join(ORDERS)}")
    argv = [str(reference), str(candidate), entry, order,
            ",".join(str(int(x)) for x in (seed if isinstance(seed, (tuple, list)) else (seed,))),
            str(trials), str(TOLERANCE), device]
    if device == "cpu":
        return _forked_check(argv, str(candidate.parent), timeout)
    env = dict(os.environ, PYTHONHASHSEED="0")
    try:
        p = subprocess.run([sys.executable, "-c", PROGRAM, *argv],
                           capture_output=True, text=True, timeout=timeout, env=env, cwd=candidate.parent)
    except subprocess.TimeoutExpired:
        return {"error": f"no result within {timeout:.0f} s"}
    if p.returncode != 0:
        return {"error": f"exit {p.returncode}: {p.stderr.strip()[-1500:]}"}
    return _result(p.stdout)


def _result(stdout: str) -> dict:
    lines = stdout.strip().splitlines()
    if not lines:
        return {"error": "no result printed"}
    try:
        return json.loads(lines[-1])
    except ValueError:
        return {"error": f"unreadable result: {lines[-1][:300]}"}


# the environment of a CPU check, set in the fork server as it starts and again in each child
CPU_ENV = {"PYTHONHASHSEED": "0", "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}
_SERVER_STARTED = False
_SERVER_LOCK = threading.Lock()    # checks run from threads (bench/corpus_naive.py --jobs)


def _forkserver():
    """multiprocessing's forkserver context, its server started (once per process) with torch and
    Triton imported and the CPU check's environment."""
    global _SERVER_STARTED
    import multiprocessing as mp
    from multiprocessing import forkserver
    ctx = mp.get_context("forkserver")
    with _SERVER_LOCK:    # the environment is patched while the server starts: one thread at a time
        if not _SERVER_STARTED:
            ctx.set_forkserver_preload(["torch", "triton"])
            saved = dict(os.environ)
            os.environ.update(CPU_ENV)
            try:
                forkserver.ensure_running()
            finally:
                os.environ.clear()
                os.environ.update(saved)
            _SERVER_STARTED = True
    return ctx


def _forked_check(argv: list[str], cwd: str, timeout: float) -> dict:
    ctx = _forkserver()
    recv, send = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_child, args=(send, argv, cwd))    # not daemonic: a candidate may start processes
    p.start()
    send.close()
    try:
        if not recv.poll(timeout):
            return {"error": f"no result within {timeout:.0f} s"}
        try:
            out = recv.recv()
        except EOFError:    # the child ended without a word (os._exit, a signal)
            p.join(10)
            return {"error": f"exit {p.exitcode}: no result"}
        return out if "error" in out else _result(out["stdout"])
    finally:
        recv.close()
        if p.is_alive():
            p.kill()
        p.join(10)


def _child(conn, argv: list[str], cwd: str) -> None:
    """In the forked child: PROGRAM as `python -c PROGRAM argv...` in `cwd` would run it, its
    printed result sent back."""
    import contextlib
    import io
    import traceback
    os.environ.update(CPU_ENV)
    os.chdir(cwd)
    sys.path.insert(0, cwd)    # `python -c`'s first path entry: the working folder
    sys.argv = ["-c", *argv]
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            exec(compile(PROGRAM, "<hackscan.naive>", "exec"), {"__name__": "__main__"})
        msg = {"stdout": buf.getvalue()}
    except BaseException:  # noqa: BLE001 - SystemExit too: the pair's failure, reported as a failed process's
        msg = {"error": f"exit 1: {traceback.format_exc().strip()[-1500:]}"}
    conn.send(msg)
    conn.close()


def sidecar_check(path: Path, sidecar: dict, seed: int | tuple[int, ...] = 42, device: str = "cpu",
                  timeout: float = 900) -> dict:
    """The check a corpus pair's sidecar asks for (its reference, entry and harness order)."""
    ref = (path.parent / sidecar["reference"]).resolve()
    return naive_check(path, ref, sidecar.get("entry", "ModelNew"), sidecar.get("naive_order", "reference-first"),
                       seed=seed, device=device, timeout=timeout)
