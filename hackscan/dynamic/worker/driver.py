"""The worker's driver: read the job, take the evidence before and after the audited code's import,
build the model, run the plan's steps, write the result."""
from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback

from .common import (_CAST, _INPUTS, THREADS_AT_START, _await_device, _context_lost, _emit, _infile, _load_module, _not_run,
                     _thread_count)
from .evidence import BUILD_VARIABLES, _identities, _isolation, _state
from .inputs import _prepare
from .precision import watch as _watch_precision
from .instrumentation import _count_extension_builds, _count_extension_calls, _count_graph_replays, _count_triton_launches
from .measurement import _Clock, _measure, _set_precision
from .models import _construct, _high_precision, _load_params, _load_state, _low_precision, _model_tensors, _reinit, _save_state
from .steps import HIGH_KEPT_AS, _run_step
from .channel import OPEN, Channel
from .guard import hide as _hide_worker, install as _install_guard
from .prestart import handoff, prestart
from .tensorfiles import _DISK, SINK, _FedSets, _LazySets


CHANNEL = {"open": None}    # the auditor's channel (worker.channel), where the job has one


def entry(argv: list[str]) -> None:
    """The worker from its command line to its exit: `_worker.py JOBDIR [--wait DEVICE [flags]]`."""
    pre = None
    if argv[2:3] == ["--wait"]:   # started ahead of its job (hackscan.dynamic.pool)
        pre = prestart(argv[3] if len(argv) > 3 else "cpu", profile="noprofile" not in argv[4:],
                       meta="meta" in argv[4:])
        if not handoff(pre):
            sys.exit(0)
    rc = main(argv[1], prestart=pre)
    _exit_now_if_alone(rc)
    sys.exit(rc)


def main(jobdir: str, prestart: dict | None = None) -> int:
    job = json.load(open(os.path.join(jobdir, "job.json")))
    result: dict = {"ok": False, "role": job["role"], "steps": [], "events": []}
    if prestart is not None:
        result["prestart"] = prestart
    t_start = time.perf_counter()
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        result["error"] = f"torch is not importable in the worker: {e}"
        _emit(jobdir, result)
        return 3
    result["torch"] = torch.__version__
    _DISK["budget"] = job.get("disk_budget_bytes")
    _DISK["hard"] = bool(job.get("disk_budget_hard"))
    _INPUTS["dir"] = job.get("inputs_dir")
    if job.get("channel") is not None:
        CHANNEL["open"] = Channel(int(job["channel"]))
        SINK["channel"] = OPEN["channel"] = CHANNEL["open"]
    _CAST["dtype"] = job.get("cast_dtype")
    BUILD_VARIABLES.update(job.get("build_variables", ()))
    device = job.get("device", "cpu")
    try:
        torch.set_grad_enabled(False)
        state0 = _state(torch)
        ids0 = _identities(torch)
        threads0 = _thread_count()
        THREADS_AT_START[0] = threads0
        clock = None
        if job.get("measure"):
            # the timing harness and the precision mode are in place before the module is imported
            _set_precision(torch, job["measure"].get("mode", "default"))
            clock = _Clock(torch, device)
        # launch counting wraps every launch: evidence for the probes, never inside a timed loop
        counting = job.get("role") == "candidate" and not job.get("measure")
        traced = counting and _count_triton_launches()
        if counting:
            _count_graph_replays(torch)
            # precision flags flipped inside a call and restored before it returns
            _watch_precision(torch)
        built_traced = False
        if counting:
            with open(os.path.join(jobdir, job["source"]), "rb") as fh:
                if b"cpp_extension" in fh.read():
                    built_traced = _count_extension_builds()
        if job.get("role") == "candidate" and job.get("guard", True):
            # the worker's modules out of sight, and an audit hook reporting a walk to them
            _hide_worker()
            chan = CHANNEL["open"]
            _install_guard(chan.event if chan is not None else result.setdefault("tampering", []).append, jobdir)
        t0 = time.perf_counter()
        mod = _load_module(os.path.join(jobdir, job["source"]), job.get("module_name", "submission"))
        if counting:
            traced = _count_extension_calls(mod) or built_traced or traced
        result["launch_trace"] = bool(traced)
        result["import_s"] = time.perf_counter() - t0
        state1 = _state(torch)
        ids1 = _identities(torch)
        if job.get("import_only"):  # a build: importing compiles the candidate's extensions
            result["ok"] = True
            result["total_s"] = time.perf_counter() - t_start
            _emit(jobdir, result)
            return 0
        entry = getattr(mod, job["entry"], None)
        if entry is None:
            raise LookupError(f"no class {job['entry']} after import")
        hidden = None    # the hidden sets, drawn once the reference's outputs on the visible sets are on disk
        if job.get("prepare"):
            hidden = _preparing(torch, result, job, lambda: _prepare(torch, mod, job, jobdir, result))
        if job.get("device_gate") and not (job.get("measure") or {}).get("compile"):
            # the reference's measurement: its sets drawn and written (where they were drawn on
            # the CPU), it waits here for its turn on the device, which it then holds until it ends
            # (a compiled reference waits after its compilation: worker.measurement._measure)
            _await_device(jobdir, result)
        init = torch.load(_infile(jobdir, job["init_file"]), weights_only=True) if job.get("init_file") else []
        model = _construct(torch, entry, init, job["init_seed"], device, job.get("eval", False),
                           job.get("perturb_seed") if job.get("construct_perturbed") else None, result)
        # how many floating tensors (parameters, buffers, tensor attributes) the model holds once
        # built: one that holds none cannot follow the reference's parameters (parameter-reinit)
        result["model_tensors"] = sum(1 for t in _model_tensors(torch, model) if t.is_floating_point())
        if job.get("param_file"):
            _load_params(torch, model, _infile(jobdir, job["param_file"]), result)
        if clock is not None:
            # the measurement's model holds the parameters the audit judged: the reference's
            # state saved, and copied into the candidate by name and shape as in the audit
            # (a KernelBench-Hard GEMM draws its quantised weights in its own order: without the
            # copy its outputs in the timed loop were another model's)
            if job.get("role") == "reference" and job.get("save_state"):
                _save_state(torch, model, os.path.join(jobdir, "ref_state.pt"), result)
            elif job.get("ref_state"):
                result["state_loaded"] = _load_state(torch, model, _infile(jobdir, job["ref_state"]))
            _measure(torch, model, job, jobdir, result, clock)
            # the reference's other precision modes, timed in the same process after the first
            # (a fresh worker for each cost a process start, a CUDA context and the model again:
            # about a third of a small problem's measurement on the H200)
            for mode in job["measure"].get("then", ()):
                sub: dict = {}
                try:
                    _set_precision(torch, mode)
                    _measure(torch, model, dict(job, measure=dict(job["measure"], mode=mode, floor=False,
                                                                  calibrate=False, check_prefix=f"chk_{mode}")),
                             jobdir, sub, clock)
                    result.setdefault("measure_then", {})[mode] = sub["measure"]
                except Exception as e:  # noqa: BLE001 - the first timing stands; the auditor runs this one apart
                    result.setdefault("measure_then", {})[mode] = {"error": f"{type(e).__name__}: {e}"[:300]}
            result["ok"] = True
            result["total_s"] = time.perf_counter() - t_start
            _emit(jobdir, result)
            return 0
        if job.get("role") == "reference":
            result["param_dtypes"] = sorted({str(t.dtype).replace("torch.", "") for t in _model_tensors(torch, model)
                                             if t.is_floating_point()})
            if job.get("save_state"):
                _save_state(torch, model, os.path.join(jobdir, "ref_state.pt"), result)
        elif job.get("ref_state"):
            # as KernelBench-Hard's checker does: the reference's parameters and buffers copied into
            # the candidate by name where name and shape match
            key = "ref_state_perturbed" if job.get("construct_perturbed") else "ref_state"
            if job.get(key):
                result["state_loaded"] = _load_state(torch, model, _infile(jobdir, job[key]))
        variants = [("fp32", model)]
        if job.get("fp64"):
            native = {str(t.dtype).replace("torch.", "") for t in _model_tensors(torch, model)} | \
                {s.get("dtype", "") for s in result.get("input_spec", []) if "dtype" in s}
            hi = _high_precision(torch, model, native)
            HIGH_KEPT_AS["fp32"] = _low_precision(native)
            if hi:
                variants.append(("fp64", hi))
            else:
                result["events"].append("no high-precision copy of the model could be made")
        t_calls = time.perf_counter()
        chan = CHANNEL["open"]
        if chan is not None:
            # the plan and its sets come one step at a time from the auditor (worker.channel)
            sets = _FedSets(torch, jobdir, job.get("host_cache_bytes"), chan)
            plan = chan.steps()
        else:
            sets = _LazySets(torch, jobdir, job.get("host_cache_bytes"))  # each set loaded right before its first use
            plan = job["plan"]
        slots: dict = {}
        lost = None    # a device fault that left the CUDA context unusable: every later call is lost with it
        for step in plan:
            if hidden is not None and step.get("set") not in job.get("visible_seeds", {}):
                if lost is None:    # (a lost CUDA context draws nothing more: every later call is lost)
                    reserve = _outputs_bytes(jobdir, result)
                    if device == "cuda":
                        # the visible calls' cached blocks back to the device: a large set may be
                        # drawn there, beside the model, where it was drawn before the model existed
                        torch.cuda.empty_cache()
                    _preparing(torch, result, job, lambda: hidden(reserve))
                hidden = None
            if lost is not None:
                n0 = len(result["steps"])
                _not_run(result, step, lost)
                if chan is not None:
                    chan.done(result["steps"][n0:])
                continue
            n0 = len(result["steps"])
            try:
                _run_step(torch, step, sets, variants, device, jobdir, result, slots, job.get("poison_sizes", ()))
            except Exception as e:
                if device != "cuda" or not _context_lost(f"{type(e).__name__}: {e}"):
                    raise
                result["steps"].append({"set": step.get("slot") or step.get("as") or step.get("set"), "variant": "fp32",
                                        "call": step.get("call", 0), "error": f"{type(e).__name__}: {e}"[:1000]})
            errs = [r.get("error", "") for r in result["steps"][n0:]]
            if device == "cuda" and any(_context_lost(e) for e in errs):
                lost = f"not run: the CUDA context was lost to a fault on input set {step.get('set')!r}"
                result["events"].append(lost)
            if chan is not None:
                chan.done(result["steps"][n0:])
        if lost is None and device == "cuda":
            # a fault the last call left behind surfaces at the next use of the device: here,
            # not while the second model is built (which would lose every call already made)
            try:
                torch.cuda.synchronize()
            except Exception as e:
                if not _context_lost(f"{type(e).__name__}: {e}"):
                    raise
                lost = f"not run: the CUDA context was lost to a fault after the last call ({type(e).__name__}: {e})"[:500]
                result["events"].append(lost)
        if lost is not None:
            n0 = len(result["steps"])
            for label, call in (("reinit", 300), ("reinit_post", 301)):
                result["steps"].append({"set": label, "variant": "fp32", "call": call, "error": lost})
            if chan is not None:
                chan.done(result["steps"][n0:])
        else:
            n0 = len(result["steps"])
            lost = _after_plan(torch, job, entry, init, device, variants, sets, jobdir, result, slots,
                               visible=chan.visible if chan is not None else "visible")
            if chan is not None:
                chan.done(result["steps"][n0:])
        result["calls_s"] = time.perf_counter() - t_calls
        if device == "cuda":
            result["gpu"] = _gpu(torch)
        result["state"] = {"before": state0, "after_import": state1, "after_forward": _state(torch)}
        result["identities_changed"] = sorted(k for k in ids0 if ids0[k] != ids1.get(k) or
                                              ids0[k] != _identities(torch).get(k))
        result["threads"] = {"before": threads0, "after": _thread_count()}
        result["ok"] = True
    except BaseException as e:  # noqa: BLE001 - SystemExit and KeyboardInterrupt from the candidate too
        result["error"] = f"{type(e).__name__}: {e}"[:2000]
        result["traceback"] = traceback.format_exc()[-4000:]
    result["total_s"] = time.perf_counter() - t_start
    # checked after the audited code's import and calls, when anything it did to the walls is done
    result["isolation"] = _isolation()
    _emit(jobdir, result)
    return 0


def _preparing(torch, result: dict, job: dict, fn):
    """fn() (drawing, checking and writing input sets) with the threads the auditor lends: a
    full-size problem's fourteen sets are CPU work that every candidate of the problem waits
    for. Its time is added to prepare_s."""
    t0 = time.perf_counter()
    threads = torch.get_num_threads()
    result["prepare_threads"] = max(threads, int(job.get("prepare_threads") or 1))
    torch.set_num_threads(result["prepare_threads"])
    try:
        return fn()
    finally:
        torch.set_num_threads(threads)
        result["prepare_s"] = result.get("prepare_s", 0.0) + time.perf_counter() - t0


def _outputs_bytes(jobdir: str, result: dict) -> int:
    """The bytes the reference's outputs on the visible inputs took (every precision's file):
    what each hidden set will need beside its inputs."""
    files = {r["file"] for r in result["steps"] if r.get("set") == "visible" and r.get("call", 0) == 0 and r.get("file")}
    total = 0
    for f in files:
        try:
            total += os.path.getsize(os.path.join(jobdir, os.path.basename(f)))
        except OSError:
            pass
    return total


def _after_plan(torch, job, entry, init, device, variants, sets, jobdir, result, slots, visible="visible"):
    """The calls after the plan: the model built with parameters perturbed as they are made, and
    the model's own parameters re-initialised. A device fault here loses these two calls only
    (recorded as errors), never the plan's calls already made."""
    lost = None
    try:
        if job.get("perturb_seed") is not None and not job.get("construct_perturbed"):
            # a second model, its parameters perturbed as they were created (see _Perturb)
            pmodel = _construct(torch, entry, init, job["init_seed"], device, job.get("eval", False),
                                job["perturb_seed"], result)
            if job.get("role") == "reference" and job.get("save_state"):
                _save_state(torch, pmodel, os.path.join(jobdir, "ref_state_perturbed.pt"), result)
            elif job.get("ref_state_perturbed"):
                _load_state(torch, pmodel, _infile(jobdir, job["ref_state_perturbed"]))
            pvars = [("fp32", pmodel)]
            if job.get("fp64"):
                hi = _high_precision(torch, pmodel, {str(t.dtype).replace("torch.", "")
                                                     for t in _model_tensors(torch, pmodel)})
                if hi:
                    pvars.append(("fp64", hi))
            _run_step(torch, {"op": "forward", "set": visible, "as": "reinit", "call": 300}, sets, pvars, device,
                      jobdir, result, slots, job.get("poison_sizes", ()))
            del pmodel, pvars
        if job.get("reinit_seed") is not None:
            _reinit(torch, variants[0][1], job["reinit_seed"], os.path.join(jobdir, "params.pt"), result)
            _run_step(torch, {"op": "forward", "set": visible, "slot": "reinit_post", "call": 301}, sets,
                      variants[:1], device, jobdir, result, slots)
    except Exception as e:
        why = f"{type(e).__name__}: {e}"
        if device != "cuda" or not _context_lost(why):
            raise
        lost = f"not run: the CUDA context was lost to a fault after the plan ({why})"[:500]
        result["events"].append(lost)
        have = {r.get("call") for r in result["steps"] if r.get("set") in ("reinit", "reinit_post")}
        planned = [("reinit", 300)] if job.get("perturb_seed") is not None and not job.get("construct_perturbed") else []
        planned += [("reinit_post", 301)] if job.get("reinit_seed") is not None else []
        for label, call in planned:
            if call not in have:
                result["steps"].append({"set": label, "variant": "fp32", "call": call, "error": lost})
    return lost


def _exit_now_if_alone(code: int) -> None:
    """Once the result is written, skip the interpreter's teardown (CUDA context destruction
    among it, most of a second on a GPU) unless something of the candidate's is still running:
    then exit normally, so that a thread or child left behind keeps the process alive and the
    runner reports it (`left_running`)."""

    others = [t for t in threading.enumerate() if t is not threading.current_thread() and not t.daemon]
    try:
        import multiprocessing

        children = multiprocessing.active_children()
    except Exception:  # noqa: BLE001
        children = [None]
    if others or children:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _gpu(torch) -> dict:
    """Which GPU this worker ran on, as its process saw it (placement evidence, reported by the
    process the audited code shared: the auditor records its own assignment beside it)."""
    out = {"visible": os.environ.get("CUDA_VISIBLE_DEVICES")}
    try:
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        out.update(name=props.name, uuid=str(getattr(props, "uuid", "") or ""), bus_id=getattr(props, "pci_bus_id", None))
    except Exception as e:  # noqa: BLE001 - a lost context, no device
        out["error"] = f"{type(e).__name__}: {e}"[:200]
    return out

