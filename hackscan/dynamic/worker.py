"""The worker: runs ONE model (the candidate or the reference) in its own fresh interpreter.

This file is executed as a script (`python -I worker.py JOBDIR`) inside a scratch directory. It
imports nothing from hackscan, so the audited code never shares an interpreter with the auditor,
and it reads its instructions from JOBDIR/job.json and writes tensors and JOBDIR/result.json.

Everything it reports is, for a candidate, untrusted: the candidate can patch anything in this
process. The auditor therefore only trusts what it can check itself (output tensors loaded with
`weights_only=True` and compared against a reference computed in another process); in-process
observations (checksums, state snapshots, types) are evidence, captured before the candidate is
imported where that matters.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
import threading
import time
import traceback


def _emit(jobdir: str, result: dict) -> None:
    tmp = os.path.join(jobdir, "result.json.tmp")
    with open(tmp, "w") as fh:
        json.dump(result, fh)
    os.replace(tmp, os.path.join(jobdir, "result.json"))


def _same_bits(torch, a, b) -> bool:
    """Whether two tensors hold the same bits (NaN equals NaN; -0.0 differs from 0.0)."""
    try:
        if not isinstance(b, torch.Tensor) or a.shape != b.shape or a.dtype != b.dtype:
            return False
        a, b = a.detach().contiguous(), b.detach().contiguous()
        if a.element_size() in (1, 2, 4, 8) and a.numel():
            ity = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
            return bool(torch.equal(a.view(ity), b.view(ity)))
        return bool(torch.equal(a, b))
    except Exception:  # noqa: BLE001 - a tensor we cannot read counts as changed
        return False


def _profiled_forward(torch, model, inputs, device):
    """One forward under torch.profiler: every device kernel with its device time, stream and
    the outermost aten op that launched it (None for kernels the candidate launched itself:
    Triton, its own CUDA kernels, a library called from its own C++). A profiler that cannot
    start or a profile that cannot be read leaves the call unprofiled (`error` says why); only
    the model's own exceptions propagate."""
    from torch.profiler import ProfilerActivity, profile, record_function

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    if device == "cuda":
        torch.cuda.synchronize()
    try:
        prof = profile(activities=acts)
        prof.__enter__()
    except Exception as e:  # noqa: BLE001
        return _call(model, inputs), {"error": f"profiler unavailable: {type(e).__name__}: {e}"[:300]}
    try:
        if device == "cuda":
            with record_function("hackscan::marker"):  # a fill kernel on the caller's stream
                torch.zeros(1, device="cuda")
        with record_function("hackscan::forward"):
            out = _call(model, inputs)
        if device == "cuda":
            torch.cuda.synchronize()
    finally:
        try:
            prof.__exit__(None, None, None)
        except Exception:  # noqa: BLE001 - reading it below says what is missing
            pass
    try:
        info = _read_profile(prof)
    except Exception as e:  # noqa: BLE001
        info = {"error": f"profile unreadable: {type(e).__name__}: {e}"[:300]}
    del prof
    return out, info


def _read_profile(prof) -> dict:
    """From kineto's raw events, with nothing newer than torch 2.x's stable accessors assumed:
    runtime/driver calls are the CPU events named cuda*/cu*, GPU copies of record_function
    ranges are the device events named like a CPU range."""
    import re

    from torch.autograd import DeviceType

    api_name = re.compile(r"^(cuda|cu)[A-Z]\w*")
    raw = list(prof.profiler.kineto_results.events())
    cpu = [e for e in raw if e.device_type() == DeviceType.CPU]
    api = [e for e in cpu if api_name.match(e.name())]
    ranges = [e for e in cpu if not api_name.match(e.name())]
    range_names = {e.name() for e in ranges}
    # kineto links a device event two ways: its correlation id is that of the runtime/driver call
    # that launched it, its linked correlation id that of the innermost op or range active then
    api_by_corr = {e.correlation_id(): e for e in api}
    range_by_corr = {e.correlation_id(): e for e in ranges}
    by_thread: dict = {}
    for e in ranges:
        by_thread.setdefault(e.start_thread_id(), []).append(e)
    fwd = next(((e.start_ns(), e.end_ns()) for e in ranges if e.name() == "hackscan::forward"), None)

    def enclosing(ev):
        t = ev.start_ns()
        return [e for e in by_thread.get(ev.start_thread_id(), ()) if e.start_ns() <= t <= e.end_ns()]

    def origin(e):
        """(the launching API call, the ranges enclosing the launch, outermost first)"""
        call = api_by_corr.get(e.correlation_id())
        op = range_by_corr.get(e.linked_correlation_id())
        if op is None:  # an older scheme: the linked id names the API call
            call = call or api_by_corr.get(e.linked_correlation_id())
            op = range_by_corr.get(call.linked_correlation_id()) if call is not None else None
        chain = enclosing(op) if op is not None else (enclosing(call) if call is not None else [])
        return call or op, sorted(chain, key=lambda c: (c.start_ns(), -c.end_ns()))

    def stream_of(e):
        try:
            return int(e.device_resource_id())
        except Exception:  # noqa: BLE001 - an older kineto event without it
            return -1

    # kineto does not always tie a replayed graph's kernels to the cudaGraphLaunch call: any
    # kernel that no other launch call explains, starting after a graph launch, is the graph's
    graph_launch = min((e.start_ns() for e in api if "GraphLaunch" in e.name()), default=None)
    kernels, marker_streams = [], set()
    for e in raw:
        if e.device_type() != DeviceType.CUDA or e.name() in range_names:
            continue
        launch, chain = origin(e)
        names = [c.name() for c in chain]
        owner = next((n for n in names if n.startswith("aten::")), None)  # the outermost aten op
        stream = stream_of(e)
        if "hackscan::marker" in names:
            marker_streams.add(stream)
            continue
        lt = launch.start_ns() if launch is not None else None
        kernels.append({"name": e.name()[:400], "us": round(e.duration_ns() / 1e3, 3), "stream": stream,
                        "owner": owner, "launch_us": lt / 1e3 if lt else None,
                        # a graph's kernels run on streams of the graph's own, ordered on the stream it
                        # was launched into, which waits for every one of them
                        "graph": bool(launch is not None and "GraphLaunch" in launch.name()) or bool(
                            graph_launch is not None and (launch is None or not api_name.match(launch.name()))
                            and e.start_ns() >= graph_launch),
                        "in_forward": bool(fwd and lt and fwd[0] <= lt <= fwd[1])})
    waits = [{"name": e.name(), "us": e.start_ns() / 1e3} for e in api
             if fwd and fwd[0] <= e.start_ns() <= fwd[1] and any(w in e.name() for w in ("StreamWaitEvent", "Synchronize"))]
    ops = sorted({e.name() for e in ranges if e.name().startswith("aten::")})
    graph_calls = sorted({e.name() for e in api if fwd and fwd[0] <= e.start_ns() <= fwd[1]
                          and ("Graph" in e.name() or "Capture" in e.name())})
    return {"kernels": kernels[:2000], "aten_ops": ops[:200], "graph_calls": graph_calls[:20],
            "caller_streams": sorted(s for s in marker_streams if s >= 0),
            "forward_us": [fwd[0] / 1e3, fwd[1] / 1e3] if fwd else None, "waits": waits[:200]}


def _timed_forward(torch, model, inputs, device, repeat):
    """Back-to-back calls timed two ways: CUDA events on the caller's stream (what a benchmark's
    timer sees) and the host clock up to a device-wide synchronisation (all the work)."""
    if device != "cuda":
        out = _call(model, inputs)
        return out, {"repeat": 1, "device": device}
    out = _call(model, inputs)  # warm-up
    ev, host = [], []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        start.record()
        out = _call(model, inputs)
        end.record()
        end.synchronize()
        torch.cuda.synchronize()
        host.append((time.perf_counter() - t0) * 1e3)
        ev.append(start.elapsed_time(end))
    ev.sort()
    host.sort()
    return out, {"repeat": repeat, "event_ms": ev[len(ev) // 2], "sync_ms": host[len(host) // 2],
                 "event_all_ms": ev, "sync_all_ms": host}


def _state(torch) -> dict:
    """Process-wide state a candidate may tamper with, captured as plain strings."""
    b = torch.backends
    out = {
        "default_dtype": str(torch.get_default_dtype()),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "cudnn.allow_tf32": str(b.cudnn.allow_tf32),
        "cudnn.benchmark": str(b.cudnn.benchmark),
        "cudnn.deterministic": str(b.cudnn.deterministic),
        "cudnn.enabled": str(b.cudnn.enabled),
        "cuda.matmul.allow_tf32": str(b.cuda.matmul.allow_tf32),
        "deterministic_algorithms": str(torch.are_deterministic_algorithms_enabled()),
        "grad_enabled": str(torch.is_grad_enabled()),
        "num_threads": str(torch.get_num_threads()),
        "flush_denormal": str(float(torch.tensor([1e-40], dtype=torch.float32) * 1.0) == 0.0),
        # torch sets its own cache variables lazily (TORCHINDUCTOR_CACHE_DIR on importing dynamo);
        # build variables (compiler, paths, target architectures) change how an extension is
        # built, never what the process computes: the candidate may set them
        "env": hashlib.sha256(json.dumps(sorted((k, v) for k, v in os.environ.items()
                                                if not _build_variable(k))).encode()).hexdigest()[:16],
        "env_names": ",".join(sorted(k for k in os.environ if not _build_variable(k))),
    }
    return out


def _identities(torch) -> dict:
    """ids of the functions a harness relies on: checker, timers, synchronisation."""
    import time as _time

    names = {
        "torch.allclose": torch.allclose, "torch.isclose": torch.isclose, "torch.equal": torch.equal,
        "torch.testing.assert_close": torch.testing.assert_close, "torch.manual_seed": torch.manual_seed,
        "torch.rand": torch.rand, "torch.randn": torch.randn,
        "torch.Tensor.__eq__": torch.Tensor.__eq__, "torch.Tensor.__sub__": torch.Tensor.__sub__,
        "torch.cuda.synchronize": torch.cuda.synchronize, "torch.cuda.Event": torch.cuda.Event,
        "torch.cuda.Event.elapsed_time": torch.cuda.Event.elapsed_time,
        "torch.cuda.Event.record": torch.cuda.Event.record,
        "time.perf_counter": _time.perf_counter, "time.time": _time.time, "time.monotonic": _time.monotonic,
    }
    import inspect

    # torch._dynamo wraps some of these (functools.wraps) when imported: unwrap to the original
    return {k: str(id(inspect.unwrap(v))) for k, v in names.items()}


OWN_FILES = {"_worker.py", "candidate_module.py", "reference_module.py"}


def _load_module(path: str, name: str):
    # helper modules the auditor copied beside the source (a GPU MODE problem's task.py and
    # utils.py) are importable; the folder is this worker's own scratch folder
    folder = os.path.dirname(os.path.abspath(path))
    if folder not in sys.path and any(f.endswith(".py") and f not in OWN_FILES for f in os.listdir(folder)):
        sys.path.append(folder)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _to_device(torch, obj, device, dtype64=False):
    """obj on the device; dtype64 True (fp64) or a torch dtype converts every floating tensor."""
    if isinstance(obj, torch.Tensor):
        t = obj.to(device)
        if dtype64 and t.is_floating_point():
            t = t.double() if dtype64 is True else t.to(dtype64)
        return t
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_device(torch, o, device, dtype64) for o in obj)
    if isinstance(obj, dict):
        return {k: _to_device(torch, v, device, dtype64) for k, v in obj.items()}
    return obj


def _call(model, inputs):
    """forward on one input set: keyword arguments where get_inputs() returned a dict,
    positional ones otherwise."""
    if isinstance(inputs, dict):
        return model(**inputs)
    return model(*inputs)


def _leaves(torch, obj) -> list:
    """The tensors of a (nested) input set or output, in a fixed order."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _leaves(torch, o)]
    if isinstance(obj, dict):
        return [t for k in obj for t in _leaves(torch, obj[k])]
    return []


def _tree_map(torch, obj, fn):
    """A copy of a (nested) input set with fn applied to every tensor."""
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_tree_map(torch, o, fn) for o in obj)
    if isinstance(obj, dict):
        return {k: _tree_map(torch, v, fn) for k, v in obj.items()}
    return obj


def _as_set(vals):
    """What get_inputs() returned, as an input set: a dict stays a dict (keyword arguments), a
    single tensor or scalar becomes a one-element list, any other iterable a list; floating
    tensors cast to the job's dtype where it names one (_cast)."""
    return _cast(_as_set_uncast(vals))


def _as_set_uncast(vals):
    if isinstance(vals, dict):
        return dict(vals)
    if isinstance(vals, (list, tuple)):
        return list(vals)
    try:
        import torch

        if isinstance(vals, torch.Tensor):
            return [vals]
    except Exception:  # noqa: BLE001
        pass
    try:
        return list(vals)
    except TypeError:
        return [vals]


def _cast(vals):
    """An input set with its floating-point tensors in the dtype the job names (`cast_dtype`,
    KernelBench's `precision`): both models are cast to it as they are built, so the problem
    runs in that precision. Integer and boolean tensors (indices, labels, masks) keep theirs."""
    name = _CAST["dtype"]
    if name is None:
        return vals
    import torch

    dt = getattr(torch, name)

    def one(t):
        return t.to(dt) if isinstance(t, torch.Tensor) and t.is_floating_point() else t
    return _tree_map(torch, vals, one)


def _outputs_list(torch, out):
    if isinstance(out, (list, tuple)):
        return list(out)
    return [out]


def _snapshot(torch, out) -> list:
    """Private copies of forward's outputs, taken on the caller's stream."""
    return [o.detach().clone() if isinstance(o, torch.Tensor) else o for o in _outputs_list(torch, out)]


def _changed_since(torch, snapshot, out) -> bool:
    """Whether any output differs from its snapshot: work still running when forward returned."""
    return any(isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape
               and not torch.equal(a.nan_to_num(), b.detach().nan_to_num())
               for a, b in zip(snapshot, _outputs_list(torch, out)))


def _plain(torch, t):
    """A plain tensor copy in memory the worker owns (a subclass is reported, then unwrapped)."""
    if not isinstance(t, torch.Tensor):
        return t
    base = t.as_subclass(torch.Tensor) if type(t) is not torch.Tensor else t
    return base.detach().clone().cpu()


def main(jobdir: str) -> int:
    job = json.load(open(os.path.join(jobdir, "job.json")))
    result: dict = {"ok": False, "role": job["role"], "steps": [], "events": []}
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
    _CAST["dtype"] = job.get("cast_dtype")
    BUILD_VARIABLES.update(job.get("build_variables", ()))
    device = job.get("device", "cpu")
    try:
        torch.set_grad_enabled(False)
        state0 = _state(torch)
        ids0 = _identities(torch)
        threads0 = _thread_count()
        if job.get("disable_extensions"):
            _disable_extensions()
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
        built_traced = False
        if counting and not job.get("disable_extensions"):
            with open(os.path.join(jobdir, job["source"]), "rb") as fh:
                if b"cpp_extension" in fh.read():
                    built_traced = _count_extension_builds()
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
        if job.get("prepare"):
            t0 = time.perf_counter()
            _prepare(torch, mod, job, jobdir, result)
            result["prepare_s"] = time.perf_counter() - t0
        init = torch.load(_infile(jobdir, job["init_file"]), weights_only=True) if job.get("init_file") else []
        model = _construct(torch, entry, init, job["init_seed"], device, job.get("eval", False),
                           job.get("perturb_seed") if job.get("construct_perturbed") else None, result)
        # how many floating tensors (parameters, buffers, tensor attributes) the model holds once
        # built: one that holds none cannot follow the reference's parameters (parameter-reinit)
        result["model_tensors"] = sum(1 for t in _model_tensors(torch, model) if t.is_floating_point())
        if job.get("param_file"):
            _load_params(torch, model, _infile(jobdir, job["param_file"]), result)
        if clock is not None:
            _measure(torch, model, job, jobdir, result, clock)
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
            if hi:
                variants.append(("fp64", hi))
            else:
                result["events"].append("no high-precision copy of the model could be made")
        t_calls = time.perf_counter()
        sets = _LazySets(torch, jobdir, job.get("host_cache_bytes"))  # each set loaded right before its first use
        slots: dict = {}
        lost = None    # a device fault that left the CUDA context unusable: every later call is lost with it
        for step in job["plan"]:
            if lost is not None:
                _not_run(result, step, lost)
                continue
            if step["op"] == "load_params":
                _load_params(torch, variants[0][1], _infile(jobdir, step["file"]), result)
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
            for label, call in (("reinit", 300), ("reinit_post", 301)):
                result["steps"].append({"set": label, "variant": "fp32", "call": call, "error": lost})
        else:
            lost = _after_plan(torch, job, entry, init, device, variants, sets, jobdir, result, slots)
        result["calls_s"] = time.perf_counter() - t_calls
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


def _after_plan(torch, job, entry, init, device, variants, sets, jobdir, result, slots):
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
            _run_step(torch, {"op": "forward", "set": "visible", "as": "reinit", "call": 300}, sets, pvars, device,
                      jobdir, result, slots, job.get("poison_sizes", ()))
            del pmodel, pvars
        if job.get("reinit_seed") is not None:
            _reinit(torch, variants[0][1], job["reinit_seed"], os.path.join(jobdir, "params.pt"), result)
            _run_step(torch, {"op": "forward", "set": "visible", "slot": "reinit_post", "call": 301}, sets,
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


# --- fair measurement (hackscan --measure) ------------------------------------------------------

class _Clock:
    """The timing harness's own references to the timers, taken before the candidate is
    imported: a candidate that rebinds torch.cuda.Event, its methods, torch.cuda.synchronize or
    time.perf_counter changes what others see, not what this harness calls (and is reported)."""

    def __init__(self, torch, device):
        self.device = device
        self.perf = time.perf_counter
        self.ids = _timer_ids(torch)
        if device == "cuda":
            self.Event = torch.cuda.Event
            self.record = torch.cuda.Event.record
            self.elapsed = torch.cuda.Event.elapsed_time
            self.ev_sync = torch.cuda.Event.synchronize
            self.sync = torch.cuda.synchronize

    def event(self):
        return self.Event(enable_timing=True)


def _timer_ids(torch) -> dict:
    """_identities' timers and synchronisation, and two more the timed loop calls."""
    import inspect

    ids = {k: v for k, v in _identities(torch).items() if k.startswith(("torch.cuda.", "time.perf_counter"))}
    for k, f in (("torch.cuda.Event.synchronize", torch.cuda.Event.synchronize),
                 ("torch.cuda.current_stream", torch.cuda.current_stream)):
        ids[k] = str(id(inspect.unwrap(f)))
    return ids


def _set_precision(torch, mode: str) -> None:
    """strict: fp32 matmul and convolution in full fp32; tf32: what PyTorch users get with
    `set_float32_matmul_precision("high")` and cuDNN's TF32 on; default: left as they are."""
    if mode == "strict":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
    elif mode == "tf32":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        torch.set_float32_matmul_precision("high")


def _precise_enough(xs, rel, min_n, max_n) -> bool:
    """At least min_n samples and the median's 95% interval (order statistics) within +-rel of
    it, or max_n samples (the interval of hackscan.measure.stats.median_ci; the worker imports
    nothing from hackscan, so the rule is written here)."""
    n = len(xs)
    if n < min_n:
        return False
    if n >= max_n:
        return True
    s = sorted(xs)
    k = int((n - 1.96 * n ** 0.5) // 2)
    if k < 0 or n - 1 - k < k:
        return False
    med = _median(s)
    return med > 0 and (s[n - 1 - k] - s[k]) / 2 / med <= rel


def _median(xs):
    s = sorted(xs)
    n = len(s)
    return None if not n else (s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2)


def _measure(torch, model, job, jobdir, result, clock) -> None:
    """Time forward the way hackscan reports it, and the way a KernelBench-style loop does.

    Fair loop: the inputs live in fixed buffers (as a benchmark's do) refilled before every
    iteration from one of several input sets, with values changed every time (a random scale
    and a random sparse perturbation), so a result cached by pointer, shape or content never
    pays; L2 flushed; the device idle before the start event; a device-wide synchronisation
    before the end event, so work on any stream counts; warm-up excluded; repetitions until the
    median is known to `rel` or the budget ends. Every CHECK_EVERY-th iteration is a check,
    not timed: the input set exactly, the outputs copied at return and after synchronisation and
    saved for the auditor to compare with the reference's."""
    m = job["measure"]
    device = job["device"]
    cuda = device == "cuda"
    sync = clock.sync if cuda else (lambda: None)
    names = sorted(n for n in os.listdir(jobdir) if n.startswith("in_pool") and n.endswith(".pt"))
    pool = [_to_device(torch, torch.load(os.path.join(jobdir, n), weights_only=True), device) for n in names]
    if not pool:
        raise RuntimeError("no input sets to measure with")
    work = _tree_map(torch, pool[0], lambda t: t.clone())
    gen = torch.Generator(device=device)
    gen.manual_seed(int.from_bytes(os.urandom(7), "little"))  # drawn here, after the import

    def refill(k, noise):
        for w, p in zip(_leaves(torch, work), _leaves(torch, pool[k])):
            w.copy_(p)
            if noise and w.is_floating_point() and w.numel():
                s = 1.0 + (float(torch.rand((), generator=gen, device=device)) - 0.5) * 2 ** -5
                w.mul_(s)
                flat = w.view(-1) if w.is_contiguous() else None
                if flat is not None:
                    idx = torch.randint(0, flat.numel(), (min(1024, flat.numel()),), generator=gen, device=device)
                    flat.index_add_(0, idx, torch.rand(idx.shape, generator=gen, device=device, dtype=w.dtype) *
                                    flat[idx].abs().mean().clamp_min(1e-3) * 2 ** -4)

    flush = None
    if cuda and m.get("flush_l2", True):
        l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20) or (50 << 20)
        flush = torch.empty(2 * l2 // 4, dtype=torch.float32, device=device)

    rec: dict = {"mode": m.get("mode", "default"), "sets": len(pool)}
    if m.get("compile"):
        model = torch.compile(model)
        rec["compiled"] = True
    # warm-up: compilation, autotuning, caches, clocks
    t0 = clock.perf()
    warm = 0
    while warm < m.get("warmup", 3) or (clock.perf() - t0 < m.get("warmup_s", 0.25) and warm < 1000):
        refill(warm % len(pool), True)
        _call(model, work)
        sync()
        warm += 1
    rec["warmup"] = warm

    if cuda:
        # the harness's own overhead: an empty call through the same loop
        ev_e, sy_e = [], []
        for _ in range(20):
            sync()
            s, mid, e = clock.event(), clock.event(), clock.event()
            clock.record(s)
            clock.record(mid)
            sync()
            clock.record(e)
            clock.ev_sync(e)
            ev_e.append(clock.elapsed(s, mid))
            sy_e.append(clock.elapsed(s, e))
        rec["empty"] = {"event_ms": _median(ev_e), "sync_ms": _median(sy_e)}
        # memory: peak during one forward against a baseline after the same warm-up
        refill(0, False)
        sync()
        torch.cuda.reset_peak_memory_stats()
        base, res0 = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
        nvml = _NvmlProcess(torch)
        used0, free0 = nvml.used(), torch.cuda.mem_get_info()[0]
        out = _call(model, work)
        sync()
        used1, free1 = nvml.used(), torch.cuda.mem_get_info()[0]
        grown = torch.cuda.memory_reserved() - res0
        rec["memory"] = {"peak_allocated": torch.cuda.max_memory_allocated() - base,
                         "peak_reserved": torch.cuda.max_memory_reserved(), "baseline_allocated": base}
        if used0 is not None and used1 is not None:  # this process's device memory, as the driver counts it
            rec["memory"].update(outside_allocator=max(0, (used1 - used0) - grown), outside_source="nvml")
        else:  # the whole device's free memory: valid because measurements run one at a time
            rec["memory"].update(outside_allocator=max(0, (free0 - free1) - grown), outside_source="cudaMemGetInfo",
                                 nvml=nvml.why)
        del out

    check_every = m.get("check_every", 8)
    fair, evt, checks = [], [], []
    saved: dict = {}
    i = 0
    t_loop = clock.perf()
    while True:
        check = i % check_every == check_every - 1
        # checks walk through the sets in turn (every set's outputs get compared)
        k = (i // check_every) % len(pool) if check else i % len(pool)
        refill(k, not check)
        if flush is not None:
            flush.zero_()
        sync()
        if cuda:
            s, mid, e = clock.event(), clock.event(), clock.event()
            clock.record(s)
            out = _call(model, work)
            clock.record(mid)
            at_return = _snapshot(torch, out) if check else None
            sync()
            clock.record(e)
            clock.ev_sync(e)
            t_ev, t_sync = clock.elapsed(s, mid), clock.elapsed(s, e)
        else:
            ts = clock.perf()
            out = _call(model, work)
            t_ev = t_sync = (clock.perf() - ts) * 1e3
            at_return = _snapshot(torch, out) if check else None
        if check:
            outs = _outputs_list(torch, out)
            c = {"set": k, "iteration": i, "changed_after_return": _changed_since(torch, at_return, out)}
            if k not in saved:  # each set's outputs once: the auditor compares them with the reference's
                # copied to host memory now, written after the loop (a slow disk must not eat the budget)
                c["file"] = f"chk_{k}"
                saved[k] = [_plain(torch, o) for o in outs]
            checks.append(c)
            del at_return
        else:
            fair.append(t_sync)
            evt.append(t_ev)
        del out
        i += 1
        spent = clock.perf() - t_loop
        # precise enough, every set checked, and long enough to average over the device's clock
        # and power states (a run of 30 calls of 2 ms caught one slow phase on the H200)
        if (_precise_enough(fair, m.get("rel", 0.01), m.get("min_reps", 10), m.get("max_reps", 1000))
                and len(saved) == len(pool) and spent >= m.get("min_time_s", 1.0)) or spent > m.get("budget_s", 10.0):
            break
    rec.update({"fair_ms": fair, "event_ms": evt, "checks": checks, "iterations": i, "loop_s": clock.perf() - t_loop})
    names = {k: _save_outputs(torch, outs, os.path.join(jobdir, f"chk_{k}")) for k, outs in saved.items()}
    for c in checks:
        if "file" in c:
            c["file"] = names[c["set"]]
    saved.clear()

    # KernelBench-style: the same inputs every time, no flush, events on the caller's stream only
    refill(0, False)
    sync()
    naive = []
    for _ in range(m.get("naive_reps", min(100, max(10, len(fair))))):
        if cuda:
            s, e = clock.event(), clock.event()
            clock.record(s)
            _call(model, work)
            clock.record(e)
            sync()
            naive.append(clock.elapsed(s, e))
        else:
            ts = clock.perf()
            _call(model, work)
            naive.append((clock.perf() - ts) * 1e3)
    rec["naive_ms"] = naive

    if m.get("floor"):  # the reference: what the operation must move and compute
        refill(0, False)
        outs = _outputs_list(torch, _call(model, work))
        rec["bytes"] = sum(t.numel() * t.element_size() for t in list(work) + outs if isinstance(t, torch.Tensor))
        del outs
        try:
            rec["flops"] = _count_flops(model, work)
        except Exception as e:  # noqa: BLE001
            rec["flops"] = 0
            rec["flops_error"] = f"{type(e).__name__}: {e}"[:200]
    if m.get("calibrate") and cuda:
        rec["device_limits"] = _device_limits(torch, clock)
    rec["timers_rebound"] = sorted(k for k, v in _timer_ids(torch).items() if clock.ids.get(k) != v)
    rec["state_after"] = _state(torch)
    result["measure"] = rec


class _NvmlProcess:
    """This process's device memory as the driver reports it through NVML (pynvml), where the
    library and the driver's per-process accounting are available (not inside every container:
    the driver may not see our pid); `used()` is None otherwise and `why` says why."""

    def __init__(self, torch):
        self.why, self._h = None, None
        try:
            import pynvml

            pynvml.nvmlInit()
            uuid = str(getattr(torch.cuda.get_device_properties(0), "uuid", "") or "")
            if uuid:
                self._h = pynvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-") else "GPU-" + uuid)
            else:
                self._h = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
            self._nvml = pynvml
            if self.used() is None:
                self.why, self._h = "NVML does not list this process", None
        except Exception as e:  # noqa: BLE001 - no pynvml, no driver library, an old driver
            self.why, self._h = f"{type(e).__name__}: {e}"[:160], None

    def used(self):
        if self._h is None:
            return None
        try:
            for p in self._nvml.nvmlDeviceGetComputeRunningProcesses(self._h):
                if p.pid == os.getpid() and p.usedGpuMemory is not None:
                    return int(p.usedGpuMemory)
        except Exception:  # noqa: BLE001
            return None
        return None


def _count_flops(model, inputs) -> int:
    """FLOPs of one forward, counted by PyTorch's own dispatcher-level counter (works on the
    meta device too); 0 where it knows no formula (elementwise work: the bytes bound it)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as fc:
        _call(model, inputs)
    return int(fc.get_total_flops())


def _device_limits(torch, clock) -> dict:
    """Measured copy bandwidth (bytes read + written per second) and dense bf16 matmul rate, the
    most any candidate can reach on this device."""
    def best(fn, n=8):
        ts = []
        for _ in range(n):
            s, e = clock.event(), clock.event()
            clock.sync()
            clock.record(s)
            fn()
            clock.record(e)
            clock.ev_sync(e)
            ts.append(clock.elapsed(s, e) / 1e3)
        return min(ts)

    x = torch.empty(1 << 28, dtype=torch.float32, device="cuda")   # 1 GiB
    y = torch.empty_like(x)
    t_copy = best(lambda: y.copy_(x))
    a = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
    t_mm = best(lambda: a @ a)
    return {"bandwidth_bytes_s": 2 * (1 << 30) / t_copy, "peak_flops_s": 2 * 8192 ** 3 / t_mm,
            "gpu": torch.cuda.get_device_name()}


class _LazySets(dict):
    """Input sets loaded from disk right before their first use, and kept while they fit in
    `cap` bytes of host memory: the least recently used go first (a full-size problem's fifteen
    sets of 8 GiB each must not all stay in host memory; the one in use always does). A set
    dropped here is read again from disk when a later step names it."""

    def __init__(self, torch, jobdir, cap: int | None = None):
        super().__init__()
        self._torch, self._dir = torch, jobdir
        self._cap = host_cache_bytes() if cap is None else cap
        self._bytes: dict = {}
        self.reloads = 0
        self._loaded: set = set()

    def __getitem__(self, name):
        value = super().__getitem__(name)
        if name in self._bytes:    # most recently used last
            self._bytes[name] = self._bytes.pop(name)
        return value

    def __missing__(self, name):
        value = self._torch.load(_infile(self._dir, f"in_{name}.pt"), weights_only=True)
        if name in self._loaded:
            self.reloads += 1
        self._loaded.add(name)
        size = _tensor_bytes(self._torch, value)
        for old in list(self._bytes):
            if sum(self._bytes.values()) + size <= self._cap:
                break
            self.pop(old, None)
            self._bytes.pop(old)
        self[name] = value
        self._bytes[name] = size
        return value


def host_cache_bytes() -> int:
    """How much host memory a worker keeps loaded input sets in: an eighth of what the host has
    available when the worker starts (several audits run side by side), at least 256 MiB."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return max(256 << 20, int(line.split()[1]) * 1024 // 8)
    except OSError:
        pass
    return 1 << 30


_LAUNCHES = [0]
_DEPTH = threading.local()  # nesting of Triton calls, per thread


def _count_triton_launches() -> bool:
    """Count Triton kernel launches (compiled or interpreted), installed before the candidate
    is imported. Evidence only: the candidate could undo it."""
    try:
        import triton.runtime.jit as rj
    except Exception:  # noqa: BLE001 - no triton, nothing to count
        return False
    done = False
    classes = [rj.JITFunction]
    try:
        from triton.runtime.interpreter import InterpretedFunction

        classes.append(InterpretedFunction)
    except Exception:  # noqa: BLE001
        pass
    for cls in classes:
        orig = getattr(cls, "run", None)
        if orig is None:
            continue

        def run(self, *a, __orig=orig, **k):
            # top-level launches only: under the interpreter a kernel's @triton.jit helpers are
            # calls too, and their number follows the data
            depth = getattr(_DEPTH, "n", 0)
            if depth == 0:
                _LAUNCHES[0] += 1
            _DEPTH.n = depth + 1
            try:
                return __orig(self, *a, **k)
            finally:
                _DEPTH.n = depth

        cls.run = run
        done = True
    return done


def _count_graph_replays(torch) -> None:
    """A CUDA graph replay launches the kernels captured in it (the candidate's own among them):
    each replay counts as a launch, so a candidate that captures once and replays afterwards
    is seen running its kernels on every call."""
    graph = getattr(getattr(torch, "cuda", None), "CUDAGraph", None)
    orig = getattr(graph, "replay", None)
    if orig is None:
        return

    def replay(self, *a, __orig=orig, **k):
        _LAUNCHES[0] += 1
        return __orig(self, *a, **k)

    try:
        graph.replay = replay
    except Exception:  # noqa: BLE001 - a build without graphs
        pass


_WRAPPED: set = set()


def _wrap_extension(obj) -> bool:
    """Count calls to the functions of one compiled extension module (once per module)."""
    if id(obj) in _WRAPPED:
        return True
    _WRAPPED.add(id(obj))
    found = False
    for name in dir(obj):
        fn = getattr(obj, name, None)
        if callable(fn) and not name.startswith("_") and type(fn).__name__ == "builtin_function_or_method":
            def wrapped(*a, __fn=fn, **k):
                _LAUNCHES[0] += 1
                return __fn(*a, **k)
            setattr(obj, name, wrapped)
            found = True
    return found


def _is_extension(obj) -> bool:
    import types

    return isinstance(obj, types.ModuleType) and str(getattr(obj, "__file__", "")).endswith((".so", ".pyd"))


def _count_extension_calls(mod) -> bool:
    """Wrap the functions of compiled extension modules the candidate holds, to count calls."""
    found = False
    for obj in list(vars(mod).values()):
        if _is_extension(obj):
            found = _wrap_extension(obj) or found
    return found


def _count_extension_builds() -> bool:
    """Installed before the candidate is imported: a module that load_inline/load returns, at
    import or later (built lazily in __init__ or forward), has its calls counted."""
    import torch.utils.cpp_extension as ce

    for fname in ("load_inline", "load"):
        orig = getattr(ce, fname)

        def build(*a, __orig=orig, **k):
            m = __orig(*a, **k)
            if _is_extension(m):
                _wrap_extension(m)
            return m

        setattr(ce, fname, build)
    return True


def _disable_extensions() -> None:
    """Forced failure for C++/CUDA candidates: building any extension raises."""
    import torch.utils.cpp_extension as ce

    def refuse(*a, **k):
        raise RuntimeError("hackscan: extension builds disabled by a probe")

    ce.load_inline = refuse
    ce.load = refuse


def _isolation() -> dict:
    """What protections hold in this process, checked from inside after the audited code ran
    (corroboration only: the auditor reads the kernel's record of the worker from outside)."""
    out = {"fs_read_only_outside_scratch": not _writable("/") and not _writable(
        os.path.dirname(os.getcwd()) or "/")}
    try:
        import socket

        names = [n for _, n in socket.if_nameindex()]
        out["network_interfaces"] = names
        out["no_network"] = all(n == "lo" for n in names)
    except OSError:
        out["no_network"] = None
    return out


# environment variables that steer how an extension is built, never what the process computes:
# the auditor sends hackscan.hacktypes.BUILD_ENV_VARIABLES in the job (this file imports nothing
# from hackscan)
BUILD_VARIABLES: set = set()


def _build_variable(name: str) -> bool:
    return name in BUILD_VARIABLES or name.lstrip("_").startswith(("TORCHINDUCTOR_", "TRITON_"))


def _context_lost(error: str) -> bool:
    """Errors after which the process's CUDA context is unusable (sticky faults)."""
    return any(k in error for k in ("misaligned address", "illegal memory access", "illegal instruction",
                                    "unspecified launch failure", "device-side assert", "an illegal",
                                    "cudaErrorLaunchFailure", "hardware stack error"))


def _not_run(result, step, why) -> None:
    if step.get("op") in ("forward", "profile", "timing"):
        result["steps"].append({"set": step.get("slot") or step.get("as") or step.get("set"), "variant": "fp32",
                                "call": step.get("call", 0), "error": why})


def _writable(path: str) -> bool:
    """A real write attempt: os.access answers from permission bits, and a read-only mount
    over a folder its user owns still says writable."""
    import tempfile

    try:
        with tempfile.TemporaryFile(dir=path):
            return True
    except OSError:
        return False


def _thread_count() -> int:
    import threading

    return threading.active_count()


def _seed_all(seed: int) -> None:
    """Seed every random source a problem's generator may draw from."""
    import random

    import torch

    torch.manual_seed(seed)
    random.seed(seed)
    try:
        import numpy

        numpy.random.seed(seed % (2**32))
    except Exception:  # noqa: BLE001 - numpy is optional
        pass


def _prepare(torch, mod, job, jobdir, result) -> None:
    """Reference only: learn the inputs' shapes on the meta device, then materialise the
    visible input sets and the hidden ones from the auditor's seeds.

    Hidden sets come from the problem's own generator: get_inputs() runs again with its random
    sources replaced (hackscan's _Samplers), so every transform it applies afterwards (triu,
    softmax, abs, clamp, masks, casts, integer ranges) still holds on the hidden values. Each
    hidden set is then checked against the structure the visible sets share and dropped, with
    the reason, where it left the problem's domain."""
    get_inputs = mod.get_inputs
    get_init = getattr(mod, "get_init_inputs", lambda: [])
    try:
        with torch.device("meta"):
            meta = _as_set(get_inputs())
    except Exception as e:  # noqa: BLE001 - a generator that reads values (.item(), numpy) needs real tensors
        result["events"].append(f"shapes learnt from a real draw: get_inputs() fails on the meta device "
                                f"({type(e).__name__}: {str(e)[:120]})")
        _seed_all(job["visible_seeds"].get("visible", 0))
        meta = _as_set(get_inputs())
    spec = []
    for t in (meta.values() if isinstance(meta, dict) else meta):
        leaves = _leaves(torch, t)
        if isinstance(t, torch.Tensor) or leaves:
            for x in leaves:
                spec.append({"shape": list(x.shape), "dtype": str(x.dtype).replace("torch.", ""),
                             "bytes": x.numel() * x.element_size()})
        else:
            spec.append({"scalar": repr(t)[:50]})
    result["input_spec"] = spec
    result["input_kind"] = "keywords" if isinstance(meta, dict) else "positional"
    meta = None    # a real draw where the meta device failed: not kept while the sets are made
    budget = job.get("memory_budget_bytes")
    total = sum(s.get("bytes", 0) for s in spec)
    result["input_bytes"] = total
    if budget and total * job.get("memory_factor", 8) > budget:
        raise MemoryError(f"inputs take {total:,} bytes; {job.get('memory_factor', 8)}x that exceeds the "
                          f"{budget:,}-byte budget")
    _save_set(torch, list(get_init()), os.path.join(jobdir, "init.pt"), required=True)
    visible = {}
    not_written: dict = {}   # sets the disk this worker may use cannot hold (skipped, with the reason)
    result["hidden_sets"] = {"sources": {}, "dropped": {}, "not_written": not_written}
    for name, seed in job["visible_seeds"].items():
        _seed_all(seed)
        vals = _as_set(get_inputs())
        visible[name] = vals
        why = _save_set(torch, vals, os.path.join(jobdir, f"in_{name}.pt"), required=name == "visible")
        if why:
            not_written[name] = why
    if job.get("other_shapes"):
        result["other_shape"] = _other_shape(torch, mod, get_inputs, get_init, job, jobdir)
    from_set = job.get("variants_from")
    if not from_set:
        return
    base = visible[from_set]
    # what the visible sets share, summarised: the other visible sets need not stay in host
    # memory while twelve hidden sets are drawn (a full-size problem's set is 8 GiB)
    seen = _Domain(torch, [v for k, v in visible.items() if k.startswith("visible")] or [base])
    visible = {from_set: base}
    dropped, sources = {}, {}
    for i, v in enumerate(job.get("variants", [])):
        vals = None    # the last set is on disk: one hidden set in host memory at a time
        seed = job["variant_seed"] + 7919 * (i + 1)
        if v == "noncontiguous":
            g = torch.Generator().manual_seed(seed)
            vals = _tree_map(torch, base, lambda t: _variant(torch, t, v, g))
        else:
            vals, how = _generated_set(torch, get_inputs, v, seed, seen)
            sources[v] = how
            why = _leaves_domain(torch, seen, vals)
            if why:
                dropped[v] = why
                continue
        why = _save_set(torch, vals, os.path.join(jobdir, f"in_{v}.pt"))
        if why:
            not_written[v] = why
    result["hidden_sets"].update(sources=sources, dropped=dropped)


class _Samplers:
    """get_inputs() with its random sources replaced: every floating-point draw of torch's
    samplers (rand, randn, *_like, normal, uniform_, normal_, exponential_, ...), numpy's legacy
    samplers and Python's random module is redrawn under the auditor's seed and then changed by
    `mode` (negated, scaled, normal, heavy-tailed, zeros, denormals, large, half negated), so
    the generator's own transforms still apply on top. Integer and discrete samplers (randint,
    randperm, bernoulli, multinomial, random_) keep their range and only get another seed."""

    FLOAT_FUNCS = ("rand", "randn", "rand_like", "randn_like", "normal")
    FLOAT_METHODS = ("uniform_", "normal_", "exponential_", "cauchy_", "log_normal_")
    NP_FUNCS = ("rand", "randn", "random", "random_sample", "uniform", "normal", "standard_normal", "ranf",
                "sample")
    PY_FUNCS = ("random", "uniform", "gauss", "normalvariate")

    def __init__(self, torch, mode, seed, namespace=None):
        self.torch, self.mode = torch, mode
        self.namespace = namespace    # the generator's globals: `from torch import randn` binds there
        self.g = torch.Generator().manual_seed(seed)
        self.saved = []
        self.draws = 0
        self.busy = False

    def change(self, t):
        torch = self.torch
        if self.busy or not isinstance(t, torch.Tensor) or not t.is_floating_point() or t.is_meta or not t.numel():
            return t
        self.draws += 1
        self.busy = True    # the change itself draws from the (patched) samplers
        try:
            return _variant(torch, t, self.mode, self.g)
        finally:
            self.busy = False

    def __enter__(self):
        torch = self.torch
        for name in self.FLOAT_FUNCS:
            orig = getattr(torch, name, None)
            if orig is None:
                continue

            def fn(*a, __orig=orig, **k):
                return self.change(__orig(*a, **k))
            self.saved.append((torch, name, orig))
            setattr(torch, name, fn)
        for name in self.FLOAT_METHODS:
            orig = getattr(torch.Tensor, name, None)
            if orig is None:
                continue

            def meth(t, *a, __orig=orig, **k):
                out = __orig(t, *a, **k)
                if not self.busy and isinstance(out, torch.Tensor) and out.is_floating_point() and not out.is_meta \
                        and out.numel():
                    with torch.no_grad():
                        out.copy_(self.change(out.detach()))
                return out
            self.saved.append((torch.Tensor, name, orig))
            setattr(torch.Tensor, name, meth)
        try:
            import numpy

            for name in self.NP_FUNCS:
                orig = getattr(numpy.random, name, None)
                if orig is None:
                    continue

                def npf(*a, __orig=orig, **k):
                    out = __orig(*a, **k)
                    arr = numpy.asarray(out, dtype=numpy.float64)
                    new = self.change(torch.from_numpy(numpy.array(arr, dtype=numpy.float64))).numpy()
                    return new if numpy.ndim(out) else float(new)
                self.saved.append((numpy.random, name, orig))
                setattr(numpy.random, name, npf)
        except Exception:  # noqa: BLE001 - numpy is optional
            pass
        import random

        for name in self.PY_FUNCS:
            orig = getattr(random, name)

            def pyf(*a, __orig=orig, **k):
                return float(self.change(torch.tensor([__orig(*a, **k)], dtype=torch.float64))[0])
            self.saved.append((random, name, orig))
            setattr(random, name, pyf)
        if self.namespace is not None:
            # names the generator's module imported directly (`from torch import rand`)
            swaps = {id(orig): getattr(owner, name) for owner, name, orig in self.saved}
            for key, val in list(self.namespace.items()):
                new = swaps.get(id(val))
                if new is not None:
                    self.saved.append((self.namespace, key, val))
                    self.namespace[key] = new
        return self

    def __exit__(self, *exc):
        for owner, name, orig in reversed(self.saved):
            if isinstance(owner, dict):
                owner[name] = orig
            else:
                setattr(owner, name, orig)
        return False


def _generated_set(torch, get_inputs, mode, seed, seen):
    """One hidden input set drawn through the problem's own generator (see _Samplers). A tensor
    that no sampler produced (it is the same bits in every visible set) gets only changes that
    keep its zero pattern, signs and integer values: a positive factor per element, for values
    that are not already integers. `seen` is the visible sets' _Domain."""
    _seed_all(seed)
    with _Samplers(torch, mode, seed, getattr(get_inputs, "__globals__", None)) as smp:
        vals = _as_set(get_inputs())
    fixed = 0
    g = torch.Generator().manual_seed(seed + 1)
    for i, t in enumerate(_leaves(torch, vals)):
        # a leaf is fixed only where two or more visible sets held the same bits
        first = seen.leaves[i]["fixed"] if t.is_floating_point() and i < len(seen.leaves) else None
        if first is not None and _same_bits(torch, first, t):
            fixed += 1
            if mode in _ROBUSTNESS or not t.numel() or _integer_valued(torch, t):
                continue
            factor = torch.rand(t.shape, generator=g).to(t.device) + 0.5
            with torch.no_grad():
                t.copy_((t.float() * factor).to(t.dtype))
    return vals, {"sampler_draws": smp.draws, "fixed_tensors": fixed}


_ROBUSTNESS = ("zeros", "denormals", "large")
_CHUNK = 1 << 24    # elements per slice where a whole-tensor temporary would double a large set


def _integer_valued(torch, t) -> bool:
    """Whether every value of a floating tensor is an integer, a slice at a time."""
    flat = t.detach().reshape(-1)
    for k in range(0, flat.numel(), _CHUNK):
        x = flat[k:k + _CHUNK].float()
        if not bool((x == x.round()).all()):
            return False
    return True


class _Domain:
    """What every visible set of a problem shares, leaf by leaf, kept instead of the sets: the
    shape and dtype; the tensor itself where it is the same bits in every set (no sampler drew
    it); whether floating values are integers in all; the integer range the draws spanned; and
    a zero pattern common to all (at least 1% of the tensor, the same elements in each)."""

    def __init__(self, torch, sets: list):
        per_set = [_leaves(torch, s) for s in sets]
        self.lengths = [len(ls) for ls in per_set]
        self.leaves = []
        for i, r0 in enumerate(per_set[0]):
            refs = [ls[i] for ls in per_set if i < len(ls)]
            leaf = {"shape": tuple(r0.shape), "dtype": r0.dtype, "fixed": None, "integer": False,
                    "range": None, "zero": None}
            if len(refs) >= 2 and all(_same_bits(torch, r0, r) for r in refs[1:]):
                leaf["fixed"] = r0
            if r0.numel() and not r0.is_floating_point() and r0.dtype != torch.bool:
                leaf["range"] = (min(int(r.min()) for r in refs), max(int(r.max()) for r in refs))
            elif r0.numel() and r0.is_floating_point():
                leaf["integer"] = all(_integer_valued(torch, r) for r in refs)
                zero = r0 == 0
                nz = int(zero.sum())
                # a zero pattern the generator imposes (triu, masks by position) is the same in
                # every visible draw; zeros that move between draws (relu of a sample, random
                # masks) are values
                if nz and nz >= 0.01 * zero.numel() and len(refs) >= 2 and \
                        all(r.shape == r0.shape and torch.equal(zero, r == 0) for r in refs[1:]):
                    leaf["zero"] = zero
            self.leaves.append(leaf)


def _leaves_domain(torch, seen, vals):
    """Why a hidden set left the domain the visible sets share (None where it did not): the
    same kinds, shapes and dtypes; integer-valued floats stay integers; integer tensors stay in
    the range the visible draws spanned; exact zeros common to every visible draw stay zero
    where they make up a pattern. `seen` is the visible sets' _Domain."""
    new = _leaves(torch, vals)
    if any(n != len(new) for n in seen.lengths):
        return f"{len(new)} tensors, the visible sets hold {seen.lengths[0]}"
    for i, t in enumerate(new):
        leaf = seen.leaves[i]
        if tuple(t.shape) != leaf["shape"] or t.dtype != leaf["dtype"]:
            return f"tensor {i}: {tuple(t.shape)} {t.dtype}, visible {leaf['shape']} {leaf['dtype']}"
        if not t.numel():
            continue
        if not t.is_floating_point():
            if leaf["range"] is None:
                continue
            lo, hi = leaf["range"]
            if int(t.min()) < lo or int(t.max()) > hi:
                return f"tensor {i}: integer values [{int(t.min())}, {int(t.max())}] outside the visible range [{lo}, {hi}]"
            continue
        if leaf["integer"] and not _integer_valued(torch, t):
            return f"tensor {i}: integer-valued in every visible set, not here"
        zero = leaf["zero"]
        if zero is not None and bool((t[zero] != 0).any()):
            return f"tensor {i}: nonzero where every visible set is zero ({int(zero.sum())} elements, the same in each)"
    return None


def _other_shape(torch, mod, get_inputs, get_init, job, jobdir):
    """Inputs of another size: module-level integers read by get_inputs (and not by
    get_init_inputs, which shapes the parameters) are shrunk by one, off any tile multiple."""
    init_names = set(getattr(get_init, "__code__", None).co_names) if hasattr(get_init, "__code__") else set()
    names = [n for n in get_inputs.__code__.co_names
             if isinstance(getattr(mod, n, None), int) and not isinstance(getattr(mod, n), bool)
             and getattr(mod, n) > 2 and n not in init_names]
    if not names:
        return {"changed": {}}
    old = {n: getattr(mod, n) for n in names}
    try:
        for n, v in old.items():
            setattr(mod, n, v - 1)
        torch.manual_seed(job["visible_seeds"]["visible"] + 1)
        vals = list(get_inputs())
    finally:
        for n, v in old.items():
            setattr(mod, n, v)
    why = _save_set(torch, vals, os.path.join(jobdir, "in_other_shape.pt"))
    if why:
        return {"changed": {}, "error": why}
    return {"changed": {n: [v, v - 1] for n, v in old.items()}}


def _variant(torch, t, kind, g):
    """One tensor's values changed by `kind`. Computed in fp32 on the CPU (fp8 and bf16 have few
    CPU kernels; the generator is a CPU one) and cast back to the tensor's dtype and device."""
    if not isinstance(t, torch.Tensor) or not t.is_floating_point() or t.is_meta:
        return t
    dt, dev = t.dtype, t.device
    if kind == "noncontiguous":
        if t.dim() >= 2:
            return t.transpose(-1, -2).contiguous().transpose(-1, -2)
        return torch.stack([t, t], dim=-1)[..., 0]
    # fp64 keeps its own precision (an fp64 subnormal does not exist in fp32)
    wdt = torch.float64 if dt == torch.float64 else torch.float32
    x = t.detach().cpu().to(wdt)
    shape = t.shape
    if kind == "negated":
        y = -x
    elif kind == "scaled_x3":
        y = x * 3
    elif kind == "scaled_x0.01":
        y = x * 0.01
    elif kind == "normal":
        y = torch.randn(shape, generator=g, dtype=wdt)
    elif kind == "heavy_tailed":
        # a ratio of a normal to a uniform: Cauchy-like tails, clipped to stay finite
        y = (torch.randn(shape, generator=g, dtype=wdt) / torch.rand(shape, generator=g, dtype=wdt).clamp_min(0.05)).clamp(-1e3, 1e3)
    elif kind == "zeros":
        y = torch.zeros(shape, dtype=wdt)
    elif kind == "denormals":
        tiny = torch.finfo(dt).tiny
        y = torch.randn(shape, generator=g, dtype=wdt) * tiny * 0.5
    elif kind == "large":
        big = min(torch.finfo(dt).max ** 0.25, 1e4)
        y = torch.randn(shape, generator=g, dtype=wdt) * big
    elif kind in ("head_negated", "tail_negated"):
        flat = x.reshape(-1).clone()
        h = flat.numel() // 2
        if kind == "tail_negated":
            flat[h:] = -flat[h:]
        else:
            flat[:h] = -flat[:h]
        y = flat.reshape(shape)
    elif kind == "odd_negated":
        flat = x.reshape(-1).clone()
        flat[1::2] = -flat[1::2]
        y = flat.reshape(shape)
    elif kind == "fresh":
        y = torch.rand(shape, generator=g, dtype=wdt)
    else:
        raise ValueError(kind)
    return y.to(dev).to(dt)


class _Perturb:
    """Parameters perturbed as they are created, identically in the reference and the candidate:
    the k-th tensor of a given shape to be perturbed gets the same values in both processes
    (from the auditor's seed, the shape and k), so weights that __init__ transposes, packs or
    folds into buffers are prepared from the perturbed values. A Parameter that a module of the
    audited code registers is perturbed right then; a torch.nn module's parameters and floating
    buffers (running statistics) once it is attached to a parent (its own reset_parameters has
    run by then) or at the end of construction. Every value is away from 0 and 1 with signs drawn
    evenly, so identity-valued initialisations (unit scales, zero biases) are perturbed too;
    weights are scaled by 1/sqrt(fan-in) so deep networks stay finite.

    Code that registers an empty Parameter and then initialises it itself (nn.init.kaiming_uniform_,
    .uniform_(), .zero_(), as a hand-written nn.Linear does) would overwrite the perturbation
    before preparing its buffers from it: while construction runs, every initialiser applied to a
    perturbed tensor puts the same perturbed values back, so the candidate's weights still equal
    the reference's."""

    INIT_FUNCS = ("uniform_", "normal_", "constant_", "ones_", "zeros_", "eye_", "dirac_", "xavier_uniform_",
                  "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "trunc_normal_", "orthogonal_", "sparse_")
    TENSOR_INITS = ("uniform_", "normal_", "zero_", "fill_", "random_", "bernoulli_", "exponential_", "cauchy_",
                    "log_normal_", "geometric_")

    def __init__(self, torch, seed):
        self.torch, self.seed = torch, seed
        self.done: set = set()
        self.spots: dict = {}    # (data pointer, shape) -> (k, name) of each perturbed tensor
        self.counts: dict = {}
        self.shapes: list = []
        self.saved: list = []

    @staticmethod
    def _torch_owned(m) -> bool:
        return type(m).__module__.startswith("torch.")

    def apply(self, t, name: str = "") -> None:
        torch = self.torch
        if not isinstance(t, torch.Tensor) or id(t) in self.done or t.is_meta or not t.numel() \
                or not t.is_floating_point():
            return
        self.done.add(id(t))
        shape = tuple(int(d) for d in t.shape)
        k = self.counts.get(shape, 0)
        self.counts[shape] = k + 1
        self.spots[(t.data_ptr(), shape)] = (k, name)
        self._write(t, shape, k, name)
        self.shapes.append(list(shape))

    def redo(self, t) -> None:
        """An initialiser ran on a tensor perturbed before: its perturbed values again."""
        torch = self.torch
        if not isinstance(t, torch.Tensor) or t.is_meta or not t.numel():
            return
        shape = tuple(int(d) for d in t.shape)
        spot = self.spots.get((t.data_ptr(), shape))
        if spot is not None:
            self._write(t, shape, *spot)

    def _write(self, t, shape, k, name) -> None:
        torch = self.torch
        key = hashlib.sha256(f"{self.seed}:{shape}:{k}".encode()).digest()
        g = torch.Generator().manual_seed(int.from_bytes(key[:7], "little"))
        sign = torch.randint(0, 2, shape, generator=g).float() * 2 - 1
        mag = torch.rand(shape, generator=g) * 0.5
        if len(shape) >= 2:
            fan_in = 1
            for d in shape[1:]:
                fan_in *= d
            new = sign * (mag + 0.75) / max(1.0, fan_in) ** 0.5
        else:
            new = sign * (mag + 0.25)
        if "running_var" in name:
            new = new.abs() + 0.5
        with torch.no_grad():
            t.copy_(new.to(t.device).to(t.dtype))

    def attach(self, mod) -> None:
        """A module attached to a parent: its torch.nn submodules are fully built now."""
        torch = self.torch
        if not isinstance(mod, torch.nn.Module):
            return
        for m in mod.modules():
            if self._torch_owned(m):
                for n, p in m.named_parameters(recurse=False):
                    self.apply(p, n)
                for n, b in m.named_buffers(recurse=False):
                    self.apply(b, n)

    def finish(self, model) -> None:
        torch = self.torch
        if isinstance(model, torch.nn.Module):
            self.attach(model)
            for n, p in model.named_parameters():
                self.apply(p, n.rsplit(".", 1)[-1])

    def __enter__(self):
        nn = self.torch.nn
        M = nn.Module
        perturb = self
        orig_setattr, orig_add, orig_regp = M.__setattr__, M.add_module, M.register_parameter
        orig_regm = getattr(M, "register_module", None)

        def setattr_(mself, name, value):
            orig_setattr(mself, name, value)
            if isinstance(value, M):
                perturb.attach(value)

        def add_module(mself, name, module):
            orig_add(mself, name, module)
            perturb.attach(module)

        def register_parameter(mself, name, param):
            orig_regp(mself, name, param)
            if param is not None and not perturb._torch_owned(mself):
                perturb.apply(param, name)

        self.saved = [(M, "__setattr__", orig_setattr), (M, "add_module", orig_add),
                      (M, "register_parameter", orig_regp)]
        M.__setattr__, M.add_module, M.register_parameter = setattr_, add_module, register_parameter
        if orig_regm is not None:
            def register_module(mself, name, module):
                orig_regm(mself, name, module)
                perturb.attach(module)
            self.saved.append((M, "register_module", orig_regm))
            M.register_module = register_module

        def after(orig):
            def run(tensor, *a, **kw):
                out = orig(tensor, *a, **kw)
                perturb.redo(tensor)
                return out
            return run

        for owner, names in ((nn.init, self.INIT_FUNCS), (self.torch.Tensor, self.TENSOR_INITS)):
            for fname in names:
                orig = getattr(owner, fname, None)
                if orig is not None:
                    self.saved.append((owner, fname, orig))
                    setattr(owner, fname, after(orig))
        return self

    def __exit__(self, *exc):
        for owner, name, orig in reversed(self.saved):
            setattr(owner, name, orig)
        self.saved = []
        return False


def _construct(torch, entry, init, seed, device, eval_mode, perturb_seed=None, result=None):
    """The model as the harness builds it; with perturb_seed, its parameters perturbed as they
    are created (_Perturb), the shapes perturbed reported in result['perturbed_shapes']."""
    torch.manual_seed(seed)
    if perturb_seed is None:
        model = entry(*init)
    else:
        with _Perturb(torch, perturb_seed) as pert:
            model = entry(*init)
        pert.finish(model)
        if result is not None:
            result["perturbed_shapes"] = pert.shapes
    if hasattr(model, "to"):
        cast = _CAST["dtype"]
        model = model.to(device) if cast is None else model.to(device=device, dtype=getattr(torch, cast))
    if hasattr(model, "eval") and eval_mode:
        model.eval()
    return model


def _model_tensors(torch, model) -> list:
    """The model's parameters, buffers and plain tensor attributes."""
    if not isinstance(model, torch.nn.Module):
        return []
    out = list(model.parameters()) + list(model.buffers())
    for sub in model.modules():
        out += [v for v in vars(sub).values() if isinstance(v, torch.Tensor)]
    return out


def _high_precision(torch, model, native_dtypes):
    """The model for the high-precision reference: parameters, buffers and tensor attributes in
    fp64, or where that fails (fp8 matmuls, kernels without fp64) in fp32 when the problem is in
    a lower precision; None where neither applies."""
    import copy

    def convert(m, dt):
        m = copy.deepcopy(m)
        if hasattr(m, "to"):
            m = m.to(dt)
        if isinstance(m, torch.nn.Module):
            for sub in m.modules():
                for k, v in list(vars(sub).items()):
                    if isinstance(v, torch.Tensor) and v.is_floating_point() and not isinstance(v, torch.nn.Parameter):
                        object.__setattr__(sub, k, v.to(dt))
        return m

    out = [("fp64", torch.float64)]
    if any(d in ("bfloat16", "float16") or d.startswith("float8") for d in native_dtypes):
        out.append(("fp32up", torch.float32))
    models = []
    for name, dt in out:
        try:
            models.append((name, dt, convert(model, dt)))
        except Exception:  # noqa: BLE001
            continue
    return models


def _save_state(torch, model, path, result) -> None:
    """The reference's state_dict, for candidates that expect a harness to copy it in (up to
    4 GiB; larger models keep their own initialisation)."""
    if not isinstance(model, torch.nn.Module):
        return
    sd = model.state_dict()
    size = sum(v.numel() * v.element_size() for v in sd.values() if isinstance(v, torch.Tensor))
    if not sd or size > (4 << 30):
        return
    torch.save({k: v.detach().cpu() for k, v in sd.items() if isinstance(v, torch.Tensor)}, path)
    result["state_saved"] = len(sd)


def _load_state(torch, model, path) -> int:
    """Copy tensors by name into the model's state_dict where name and shape match (any dtype:
    quantised weights are integer buffers); the number copied."""
    if not os.path.exists(path) or not isinstance(model, torch.nn.Module):
        return 0
    values = torch.load(path, weights_only=True)
    sd = model.state_dict()
    n = 0
    with torch.no_grad():
        for name, v in values.items():
            t = sd.get(name)
            if isinstance(t, torch.Tensor) and tuple(t.shape) == tuple(v.shape) and \
                    (t.dtype == v.dtype or (t.is_floating_point() and v.is_floating_point())):
                t.copy_(v.to(t.device, t.dtype))
                n += 1
    return n


def _load_params(torch, model, path, result):
    """Load re-initialised parameters by name (and shape); report how many matched."""
    values = torch.load(path, weights_only=True)
    sd = model.state_dict() if hasattr(model, "state_dict") else {}
    loaded = 0
    with torch.no_grad():
        for name, v in values.items():
            if name in sd and tuple(sd[name].shape) == tuple(v.shape) and sd[name].is_floating_point():
                sd[name].copy_(v.to(sd[name].device, sd[name].dtype))
                loaded += 1
    result["params_loaded"] = loaded
    result["params_offered"] = len(values)


def _reinit(torch, model, seed, path, result):
    """Reference only: give every floating parameter and buffer non-trivial values (biases away
    from 0, scales away from 1) from the auditor's seed, save them for the candidate. Signs are
    drawn evenly: mostly positive weights make every activation of non-negative inputs positive,
    and a ReLU or clamp after them would then look irrelevant (ghost replay would call a real
    kernel decoration)."""
    g = torch.Generator().manual_seed(seed)
    values = {}
    sd = model.state_dict() if hasattr(model, "state_dict") else {}
    with torch.no_grad():
        for name, p in sd.items():
            if not p.is_floating_point() or p.numel() == 0:
                continue
            sign = torch.randint(0, 2, p.shape, generator=g) * 2 - 1
            new = (sign * (torch.rand(p.shape, generator=g) * 0.5 + 0.25)).to(p.dtype)
            if "running_var" in name:
                new = new.abs() + 0.5
            p.copy_(new.to(p.device))
            values[name] = new
    torch.save(values, path)
    result["params_reinitialised"] = len(values)


_RAW_DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool",
               "complex64", "complex128")


def _save_outputs(torch, outs, stem) -> str:
    """Outputs in the raw format hackscan/dynamic/tensorfile.py reads (a JSON header, then each
    tensor's bytes, 64-byte aligned), faster to write and read than torch.save's zip archive with
    its checksum. Outputs it cannot hold (nested containers, strings, other dtypes) go through
    torch.save."""
    need = sum(o.numel() * o.element_size() for o in outs if isinstance(o, torch.Tensor))
    _disk_guard(os.path.dirname(stem), need)
    header, blobs, off = [], [], 0
    for o in outs:
        if isinstance(o, torch.Tensor) and str(o.dtype).replace("torch.", "") in _RAW_DTYPES:
            t = o.detach().contiguous().cpu()
            raw = t.reshape(-1).view(torch.uint8).numpy() if t.numel() else b""
            n = t.numel() * t.element_size()
            header.append({"t": str(t.dtype).replace("torch.", ""), "shape": list(t.shape), "offset": off, "nbytes": n})
            blobs.append((raw, n))
            off += -(-n // 64) * 64
        elif o is None or isinstance(o, (bool, int, float)) and not isinstance(o, torch.Tensor):
            header.append({"v": o})
        else:
            torch.save(outs, stem + ".pt")
            return os.path.basename(stem) + ".pt"
    head = json.dumps(header).encode()
    magic = b"HSRAW1\n"
    start = len(magic) + 8 + len(head)
    with open(stem + ".raw", "wb") as fh:
        fh.write(magic + len(head).to_bytes(8, "little") + head + b"\0" * (-(-start // 64) * 64 - start))
        for raw, n in blobs:
            if n:
                fh.write(memoryview(raw))
            fh.write(b"\0" * (-(-n // 64) * 64 - n))
    return os.path.basename(stem) + ".raw"


_DISK = {"budget": None, "used": 0, "hard": False}
_INPUTS = {"dir": None}
_CAST = {"dtype": None}   # floating inputs and both models cast to it (KernelBench's precision)


def _infile(jobdir: str, name: str) -> str:
    """A file the auditor gives this worker (input sets, init inputs, parameters, the
    reference's state): in the reference's folder of shared inputs where the job names one
    (mounted read-only in a candidate's sandbox, so that a problem's full-size input sets are
    on disk once, not once per candidate), else in the worker's own folder."""
    return os.path.join(_INPUTS["dir"] or jobdir, name)


def _tensor_bytes(torch, obj) -> int:
    return sum(t.numel() * t.element_size() for t in _leaves(torch, obj))


def _save_set(torch, vals, path: str, required: bool = False) -> str | None:
    """Write one input set (reference only) within this worker's disk budget: a set that would
    take the worker past it, or leave the disk under its floor, is not written and the reason
    is returned (the auditor skips the set with it). A required set (the visible inputs, the
    init inputs) is written wherever the disk has room for it above its floor, past a budget
    the session worked out as a share of the free disk (the budget bounds the optional sets;
    an 8 GiB visible set beside a dozen other audits must not lose the whole reference run), and
    within one the user set; one that cannot be written is an error of the reference run, said
    plainly, never a torch.save cut short."""
    vals = _cast(vals)
    try:
        _disk_guard(os.path.dirname(path), _tensor_bytes(torch, vals), "an input set",
                    budgeted=not required or _DISK["hard"])
    except OutputsNotKept as e:
        why = f"not written: {e}"
        if required:
            raise MemoryError(why) from None
        return why
    torch.save(vals, path)
    return None


class OutputsNotKept(Exception):
    """Outputs too large for the disk this worker may use: the call ran, its outputs are not
    kept (the auditor counts the step as absent, never as a wrong answer)."""


def _disk_guard(folder: str, nbytes: int, what: str = "outputs", budgeted: bool = True) -> None:
    """Refuse a write that would take this worker past its disk budget (from the job; where
    `budgeted`) or leave the disk nearly full: many full-size outputs (fourteen input sets, two
    precisions) do not fit a machine's disk, and a full disk fails every audit beside this one."""
    import shutil

    if budgeted and _DISK["budget"] is not None and _DISK["used"] + nbytes > _DISK["budget"]:
        raise OutputsNotKept(f"{what} of {nbytes:,} bytes would exceed this worker's disk budget "
                             f"({_DISK['budget']:,} bytes, {_DISK['used']:,} used)")
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        free = None
    # the floor: 4 GiB, or a quarter of what is free on a small disk (a few kilobytes of outputs
    # are always written where there is room for them)
    if free is not None and free - nbytes < min(4 << 30, free // 4):
        raise OutputsNotKept(f"{what} of {nbytes:,} bytes would leave the disk nearly full ({free:,} bytes free)")
    _DISK["used"] += nbytes


def _poison(torch, sizes, device) -> None:
    """Fill blocks of the outputs' sizes with NaN and free them (twice, for allocators that
    change strategy after the first free), so that an output allocated but never written comes
    back as NaN rather than as a result left behind by an earlier call."""
    for _ in range(2):
        blocks = [torch.full((max(1, n // 4),), float("nan"), device=device) for n in sizes]
        del blocks


def _run_step(torch, step, sets, variants, device, jobdir, result, slots, poison_sizes=()) -> None:
    """forward: run every model variant on an input set, or on a working slot (a private copy of
    a set, kept on the device so that `refill` can write new values into the same storage)."""
    op = step["op"]
    if op == "poison":
        _poison(torch, step["sizes"], device)
        return
    if op == "refill":
        for dst, src in zip(_leaves(torch, slots[step["into"]]), _leaves(torch, sets[step["from"]])):
            dst.copy_(src)
        return
    name = step["set"]
    slot = step.get("slot")
    if name not in sets and not os.path.exists(_infile(jobdir, f"in_{name}.pt")):
        # e.g. other_shape where get_inputs reads no module-level size to change
        result["steps"].append({"set": slot or name, "variant": "fp32", "call": step.get("call", 0),
                                "error": f"no input set {name!r}"})
        return
    if slot is not None and slot not in slots:
        slots[slot] = _to_device(torch, _tree_map(torch, sets[name], lambda t: t.clone()), device)
    native_ok = False
    for vname, model in variants:
        if vname == "fp64" and not step.get("fp64", True):
            continue
        if slot is not None:
            if vname != "fp32":
                continue
            inputs = slots[slot]
        elif vname == "fp64":
            # the high-precision copies, best first: one that raises where the native model did
            # not is dropped for good (fp8 matmuls have no fp64 kernel), and the next one tried
            while model:
                hname, hdt, hmodel = model[0]
                try:
                    hin = _to_device(torch, sets[name], device, hdt)
                    hout = _call(hmodel, hin)
                    if device == "cuda":
                        torch.cuda.synchronize()
                    break
                except Exception as e:  # noqa: BLE001
                    if not native_ok:
                        model = []
                        break
                    result["events"].append(f"{hname} reference failed on {name}: {type(e).__name__}: {e}"[:300])
                    model.pop(0)
            if not model:
                continue
            label = step.get("as") or name
            rec = {"set": label, "variant": "fp64", "call": step.get("call", 0), "precision": hname}
            outs = _outputs_list(torch, hout)
            try:
                rec["file"] = _save_outputs(torch, [_plain(torch, o) for o in outs],
                                            os.path.join(jobdir, f"out_{label}_fp64_{step.get('call', 0)}"))
            except OutputsNotKept as e:
                rec["not_kept"] = str(e)[:300]
            result["steps"].append(rec)
            del hin, hout, outs
            continue
        else:
            inputs = _to_device(torch, sets[name], device)
        label = slot or step.get("as") or name
        rec = {"set": label, "variant": vname, "call": step.get("call", 0)}
        # a private copy of each input, compared bit for bit after the call (on the device: a
        # hash of Level-1-sized inputs on one CPU thread would take seconds per call)
        flat_in = _leaves(torch, inputs)
        before = [t.clone() for t in flat_in]
        launches0 = _LAUNCHES[0]
        if poison_sizes:
            _poison(torch, poison_sizes, device)
        t0 = time.perf_counter()
        try:
            if op == "profile":
                out, rec["profile"] = _profiled_forward(torch, model, inputs, device)
            elif op == "timing":
                out, rec["timing"] = _timed_forward(torch, model, inputs, device, step.get("repeat", 10))
            else:
                out = _call(model, inputs)
            if device == "cuda":
                # copy the outputs on the caller's stream before waiting for the device: work
                # left on another stream or thread shows up as a difference after the wait
                at_return = _snapshot(torch, out)
                torch.cuda.synchronize()
                rec["changed_after_return"] = _changed_since(torch, at_return, out)
        except BaseException as e:
            rec["error"] = f"{type(e).__name__}: {e}"[:1000]
            result["steps"].append(rec)
            if isinstance(e, (SystemExit, KeyboardInterrupt)):
                raise
            continue
        rec["seconds"] = time.perf_counter() - t0
        rec["custom_launches"] = _LAUNCHES[0] - launches0
        outs = _outputs_list(torch, out)
        rec["types"] = [f"{type(o).__module__}.{type(o).__qualname__}" for o in outs]
        rec["input_changed"] = [not _same_bits(torch, b, t) for b, t in zip(before, flat_in)]
        del before
        ptrs = {t.untyped_storage().data_ptr() for t in flat_in}
        rec["aliases_input"] = [isinstance(o, torch.Tensor) and o.untyped_storage().data_ptr() in ptrs for o in outs]
        try:
            fname = _save_outputs(torch, [_plain(torch, o) for o in outs],
                                  os.path.join(jobdir, f"out_{label}_{vname}_{step.get('call', 0)}"))
        except OutputsNotKept as e:
            rec["not_kept"] = str(e)[:300]
            result["steps"].append(rec)
            native_ok = True
            continue
        rec["file"] = fname
        rec["step_s"] = time.perf_counter() - t0  # the call, the checks and writing the outputs
        result["steps"].append(rec)
        native_ok = True


def _exit_now_if_alone(code: int) -> None:
    """Once the result is written, skip the interpreter's teardown (CUDA context destruction
    among it, most of a second on a GPU) unless something of the candidate's is still running:
    then exit normally, so that a thread or child left behind keeps the process alive and the
    runner reports it (`left_running`)."""
    import threading

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


if __name__ == "__main__":
    rc = main(sys.argv[1])
    _exit_now_if_alone(rc)
    sys.exit(rc)
