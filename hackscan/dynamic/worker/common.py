"""Helpers every part of the worker uses: walking nested inputs and outputs, moving them to the
device, calling the model, the bits of a tensor, the result file."""
from __future__ import annotations

import importlib.util
import json
import os
import sys
import threading
import time


def _emit(jobdir: str, result: dict) -> None:
    tmp = os.path.join(jobdir, "result.json.tmp")
    with open(tmp, "w") as fh:
        json.dump(result, fh)
    os.replace(tmp, os.path.join(jobdir, "result.json"))


def _same_bits(torch, a, b) -> bool:
    """Whether two tensors hold the same bits (NaN equals NaN; -0.0 differs from 0.0), on
    whatever devices they lie."""
    try:
        if not isinstance(b, torch.Tensor) or a.shape != b.shape or a.dtype != b.dtype:
            return False
        a, b = a.detach().contiguous(), b.detach().to(a.device).contiguous()
        if a.element_size() in (1, 2, 4, 8) and a.numel():
            ity = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
            return bool(torch.equal(a.view(ity), b.view(ity)))
        return bool(torch.equal(a, b))
    except Exception:  # noqa: BLE001 - a tensor we cannot read counts as changed
        return False


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


class RefillMismatch(ValueError):
    """An input set whose structure (containers, lengths, keys, tensor shapes and dtypes) is not
    the one it would be written into."""


def _refill(torch, dst, src, quiet: bool = False):
    """dst holding src's values, every input kind as src has it: each tensor of dst written in
    place with src's (the same storage, new values), each other leaf (a float, int, bool, None,
    string: immutable, so never refillable in place) src's own value, lists and dicts refilled
    in place (the same objects), tuples rebuilt around the same tensors. Returns the refilled
    set, to be passed instead of dst: a scalar kept from dst beside src's tensors is an input set
    nobody drew, and its output is compared with src's reference. Raises RefillMismatch where the
    structures differ (dst may then be partly written: pass a copy of src instead). `quiet`:
    tensors written through `.data`, which leaves their version counters as they were (what a
    harness that refills its buffers through another view, a DLPack import or a kernel of its
    own does): a cache keyed on the pointer and `_version` sees no change."""
    if isinstance(dst, torch.Tensor) or isinstance(src, torch.Tensor):
        if not (isinstance(dst, torch.Tensor) and isinstance(src, torch.Tensor)) or dst.shape != src.shape \
                or dst.dtype != src.dtype:
            raise RefillMismatch(f"{_kind(torch, src)} into {_kind(torch, dst)}")
        (dst.data if quiet else dst).copy_(src)
        return dst
    if isinstance(dst, list) and isinstance(src, (list, tuple)) and len(dst) == len(src):
        for i, v in enumerate(src):
            dst[i] = _refill(torch, dst[i], v, quiet)
        return dst
    if isinstance(dst, tuple) and isinstance(src, (list, tuple)) and len(dst) == len(src):
        vals = [_refill(torch, d, v, quiet) for d, v in zip(dst, src)]
        return type(dst)(*vals) if hasattr(dst, "_fields") else type(dst)(vals)
    if isinstance(dst, dict) and isinstance(src, dict) and list(dst) == list(src):
        for k, v in src.items():
            dst[k] = _refill(torch, dst[k], v, quiet)
        return dst
    if isinstance(dst, (list, tuple, dict)) or isinstance(src, (list, tuple, dict)):
        raise RefillMismatch(f"{_kind(torch, src)} into {_kind(torch, dst)}")
    return src


def _kind(torch, obj) -> str:
    if isinstance(obj, torch.Tensor):
        return f"tensor {tuple(obj.shape)} {str(obj.dtype).replace('torch.', '')}"
    if isinstance(obj, (list, tuple, dict)):
        return f"{type(obj).__name__} of {len(obj)}"
    return type(obj).__name__


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
    return threading.active_count()


# the worker's threads before the candidate's module is imported (set by the driver)
THREADS_AT_START = [0]
SETTLE_S = 0.5
WATCHED_CALLS = 4      # the calls watched so, the first ones with threads alive (each costs SETTLE_S)
_WATCHED = [0]


def _watch_after_return() -> bool:
    """Whether this call's outputs are watched after return (the first WATCHED_CALLS calls with
    threads of the candidate's alive)."""
    if threading.active_count() <= THREADS_AT_START[0] or _WATCHED[0] >= WATCHED_CALLS:
        return False
    _WATCHED[0] += 1
    return True


def _changed_while_threads_run(torch, snapshot, out) -> bool:
    """On the CPU, with threads alive that the worker did not start: whether an output changes
    after forward returned, watched for SETTLE_S (a thread still writing it shows as a change; an
    idle pool's threads change nothing)."""
    deadline = time.monotonic() + SETTLE_S
    while time.monotonic() < deadline:
        time.sleep(0.01)
        if _changed_since(torch, snapshot, out):
            return True
    return False


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


_GATE = {"granted": False}


def _await_device(jobdir: str, result: dict) -> None:
    """Ask the auditor for the device (`_gate.json` in this worker's folder) and wait for its
    word on stdin, once: what this process did before (import, input sets drawn on the CPU)
    ran beside another worker's timing, what follows runs alone on the device. Only a reference
    is ever asked to wait (hackscan.dynamic.pool.Prestarted.run): a candidate that ran before its
    turn could disturb another's timing."""
    if _GATE["granted"]:
        return
    import time

    t0 = time.perf_counter()
    tmp = os.path.join(jobdir, "_gate.tmp")
    with open(tmp, "w") as fh:
        fh.write("{}")
    os.replace(tmp, os.path.join(jobdir, "_gate.json"))
    line = sys.stdin.readline()
    result["gate_wait_s"] = round(time.perf_counter() - t0, 3)
    if line.strip() != "go":
        raise RuntimeError("no turn on the device came from the auditor")
    _GATE["granted"] = True
