"""The plan's steps, one function each, looked up in STEPS by the step's `op`."""
from __future__ import annotations

import os
import time

from .common import (RefillMismatch, _call, _changed_since, _changed_while_threads_run, _infile, _leaves, _outputs_list,
                     _plain, _refill, _same_bits, _snapshot, _to_device, _tree_map, _watch_after_return)
from .instrumentation import _FAILED, _LAST_FAILURE, _LAUNCHES, NAMES, kernel_mode
from .measurement import _timed_forward
from .models import _load_params
from .profiler import _profiled_forward
from .tensorfiles import SINK, OutputsNotKept, _save_outputs


def _poison(torch, sizes, device) -> None:
    """Fill blocks of the outputs' sizes with NaN and free them (twice, for allocators that
    change strategy after the first free), so that an output allocated but never written comes
    back as NaN rather than as a result left behind by an earlier call."""
    for _ in range(2):
        blocks = [torch.full((max(1, n // 4),), float("nan"), device=device) for n in sizes]
        del blocks


class Run:
    """What every step reads and writes: the input sets, the model variants ("fp32": the model;
    "fp64": its high-precision copies, best first), the device, the job's folder, the result,
    the working slots (private copies of sets kept on the device) and the sizes to poison the
    allocator with before each call."""

    def __init__(self, torch, sets, variants, device, jobdir, result, slots, poison_sizes=()):
        self.torch, self.sets, self.variants, self.device = torch, sets, variants, device
        self.jobdir, self.result, self.slots, self.poison_sizes = jobdir, result, slots, poison_sizes


def step_poison(run: Run, step: dict) -> None:
    """Fill blocks of the sizes the step names with NaN and free them."""
    _poison(run.torch, step["sizes"], run.device)


def step_refill(run: Run, step: dict) -> None:
    """Write another set's values into a working slot's storage (same pointers, new values).
    Every input kind follows the new set: its tensors are written into the slot's, its other
    values (Python scalars, None, in any nesting) replace the slot's, so the next call's inputs
    are the new set's, whose reference it is compared with. A set of another structure takes
    the slot whole, in new storage (an event says so)."""
    torch, into, frm = run.torch, step["into"], step["from"]
    src = run.sets[frm]
    try:
        run.slots[into] = _refill(torch, run.slots[into], src, bool(step.get("quiet")))
    except RefillMismatch as e:
        run.slots[into] = _to_device(torch, _tree_map(torch, src, lambda t: t.clone()), run.device)
        run.result["events"].append(f"refill of {into!r} from {frm!r}: {e}; the slot takes the set in new storage"[:300])


def step_load_params(run: Run, step: dict) -> None:
    """Load re-initialised parameters (the auditor's file) into the model."""
    _load_params(run.torch, run.variants[0][1], _infile(run.jobdir, step["file"]), run.result)


def _plain_call(torch, model, inputs, device, step):
    return _call(model, inputs), None


def _profiled_call(torch, model, inputs, device, step):
    return _profiled_forward(torch, model, inputs, device)


def _timed_call(torch, model, inputs, device, step):
    return _timed_forward(torch, model, inputs, device, step.get("repeat", 10))


# how each calling step calls the model, and where its extra record goes
CALLS = {"forward": (_plain_call, None), "profile": (_profiled_call, "profile"), "timing": (_timed_call, "timing")}


def step_call(run: Run, step: dict) -> None:
    """forward, profile, timing: run every model variant on an input set, or on a working slot (a
    private copy of a set, kept on the device so that `refill` can write new values into the
    same storage), and record the call, the evidence around it and the outputs' file."""
    torch, sets, variants, device = run.torch, run.sets, run.variants, run.device
    jobdir, result, slots, poison_sizes = run.jobdir, run.result, run.slots, run.poison_sizes
    call_model, extra = CALLS[step["op"]]
    name = step["set"]
    slot = step.get("slot")
    if not sets.has(name):
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
                rec["file"] = _save_outputs(torch, [_kept_high(torch, _plain(torch, o)) for o in outs],
                                            os.path.join(jobdir, f"out_{label}_fp64_{step.get('call', 0)}"),
                                            required=_first_visible(label, "fp64", step))
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
        launches0, failed0, names0 = _LAUNCHES[0], _FAILED[0], dict(NAMES)
        if poison_sizes:
            _poison(torch, poison_sizes, device)
        t0 = time.perf_counter()
        # ghost replay and forced failure: this one call's launches of the candidate's own kernels
        # poisoned or refused (instrumentation.KERNELS); nothing else about the call differs
        altered = kernel_mode(step.get("kernels"), step.get("kernels_seed", 0), rec)
        try:
            with altered:
                out, detail = call_model(torch, model, inputs, device, step)
            if extra is not None:
                rec[extra] = detail
            if device == "cuda":
                # copy the outputs on the caller's stream before waiting for the device: work
                # left on another stream or thread shows up as a difference after the wait
                at_return = _snapshot(torch, out)
                torch.cuda.synchronize()
                rec["changed_after_return"] = _changed_since(torch, at_return, out)
            elif _watch_after_return():
                # threads the candidate started are alive: an output they still write changes
                # after return; an idle pool's outputs were complete when forward returned
                rec["changed_after_return"] = _changed_while_threads_run(torch, _snapshot(torch, out), out)
        except BaseException as e:
            rec["error"] = f"{type(e).__name__}: {e}"[:1000]
            result["steps"].append(rec)
            if isinstance(e, (SystemExit, KeyboardInterrupt)):
                raise
            continue
        rec["seconds"] = time.perf_counter() - t0
        # launches that returned (a launch that raised ran nothing of its own); those that raised
        # while forward still returned: its custom path failed and something else computed
        rec["custom_launches"] = _LAUNCHES[0] - launches0
        # which of its kernels ran (by name): ghost replay compares plain and altered calls
        rec["launched"] = {n: c - names0.get(n, 0) for n, c in NAMES.items() if c > names0.get(n, 0)}
        if _FAILED[0] > failed0:
            rec["launch_errors"] = _FAILED[0] - failed0
            rec["launch_error"] = _LAST_FAILURE[0]
        outs = _outputs_list(torch, out)
        rec["types"] = [f"{type(o).__module__}.{type(o).__qualname__}" for o in outs]
        rec["input_changed"] = [not _same_bits(torch, b, t) for b, t in zip(before, flat_in)]
        del before
        ptrs = {t.untyped_storage().data_ptr() for t in flat_in}
        rec["aliases_input"] = [isinstance(o, torch.Tensor) and o.untyped_storage().data_ptr() in ptrs for o in outs]
        try:
            fname = _save_outputs(torch, [_plain(torch, o) for o in outs],
                                  os.path.join(jobdir, f"out_{label}_{vname}_{step.get('call', 0)}"),
                                  required=_first_visible(label, vname, step))
        except OutputsNotKept as e:
            rec["not_kept"] = str(e)[:300]
            result["steps"].append(rec)
            native_ok = True
            continue
        rec["file"] = fname
        rec["step_s"] = time.perf_counter() - t0  # the call, the checks and writing the outputs
        result["steps"].append(rec)
        native_ok = True


# the high-precision reference's outputs of a problem in bf16, fp16 or fp8 are kept in fp32 (set
# by the driver): compared with a tolerance of 1e-2, an fp32 rounding of the truth (1e-7) changes
# no comparison, and fp64 outputs took four times a bf16 output's disk on every set
HIGH_KEPT_AS = {"fp32": False}


def _kept_high(torch, t):
    if HIGH_KEPT_AS["fp32"] and isinstance(t, torch.Tensor) and t.dtype == torch.float64:
        return t.float()
    return t


_VISIBLE_KEPT: set = set()    # variants whose outputs on the visible inputs this worker has kept


def _first_visible(label: str, vname: str, step: dict) -> bool:
    """Outputs on the visible inputs that every comparison starts from: the call labelled
    "visible", and this worker's first call on those inputs whatever its label (a candidate's
    first is a fresh-call probe's). They are kept past the disk budget, as the visible set
    itself is, where the disk has room above its floor."""
    if "required" in step or SINK["channel"] is not None:
        # the auditor's channel names no set: the auditor marks the calls it keeps (feeder.Feeder)
        return bool(step.get("required"))
    if step.get("set") != "visible":
        return False
    first = vname not in _VISIBLE_KEPT
    _VISIBLE_KEPT.add(vname)
    return first or (label == "visible" and step.get("call", 0) == 0)


# the plan's steps by op: a new kind of step is one function here
STEPS = {"poison": step_poison, "refill": step_refill, "load_params": step_load_params,
         "forward": step_call, "profile": step_call, "timing": step_call}


def _run_step(torch, step, sets, variants, device, jobdir, result, slots, poison_sizes=()) -> None:
    """One step of the plan, through STEPS. A step the worker does not know is recorded as an
    error of that call (an auditor newer than the worker), never skipped in silence."""
    fn = STEPS.get(step.get("op"))
    if fn is None:
        result["steps"].append({"set": step.get("slot") or step.get("as") or step.get("set"), "variant": "fp32",
                                "call": step.get("call", 0), "error": f"unknown step {step.get('op')!r}"})
        return
    fn(Run(torch, sets, variants, device, jobdir, result, slots, poison_sizes), step)
