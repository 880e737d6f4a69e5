"""Counting what the candidate launches: Triton launches, CUDA graph replays, calls into and builds
of torch extensions; and, for the one call the auditor's step asks it of, altering what those
launches do (KERNELS): their writes poisoned (ghost replay) or the launch refused (forced
failure). The candidate's source is never rewritten and its process is the main run's own: the
call that is altered is known only from the step the auditor hands over when it is made."""
from __future__ import annotations

import random
import threading
import weakref


# launches that returned without raising: a launch is counted when it completes, never when it
# is attempted (a kernel that fails to compile or launch, inside a try whose handler returns
# PyTorch's answer, ran nothing of its own: counting its attempt read the fallback's calls as
# the kernel's)
_LAUNCHES = [0]
# completed top-level launches by kernel (a Triton kernel's function name, an extension function's
# name): which kernels a call ran, compared between plain and altered calls
NAMES: dict = {}
# launches that raised, and the last one's error ("Type: message"): evidence that the custom path
# was tried and failed where forward still returned (its handler computed the output)
_FAILED = [0]
_LAST_FAILURE = [""]
_DEPTH = threading.local()  # nesting of Triton calls, per thread
# during the profiled call only: torch's record_function, opening a range named OWN + the kernel's
# or function's name around each top-level launch of the candidate's own code, so the profile
# ties every device kernel launched inside it to the candidate (kernel attribution by origin)
PROFILING: list = [None]
OWN = "hackscan::own::"


def _own_range(name):
    rf = PROFILING[0]
    if rf is None:
        return None
    try:
        return rf(OWN + str(name)[:80])
    except Exception:  # noqa: BLE001 - no range: the kernel is attributed by its name alone
        return None


def _failed(e: BaseException) -> None:
    _FAILED[0] += 1
    _LAST_FAILURE[0] = f"{type(e).__name__}: {e}"[:300]


# the current call's kernel mode (set by the step, for the fp32 call only): None, "poison_all"
# (every element a launch changed is overwritten with a value far from any answer), "poison_some"
# (a drawn share of them), "refuse" (the launch raises before running); and what it did
KERNELS: dict = {"mode": None, "rng": None, "poisoned": 0, "altered": 0, "unseen": 0}
# the share of changed elements "poison_some" overwrites: an elementwise kernel's output comes
# back with about this share wrong and the rest right
SOME = 1 / 16
REFUSED = "custom kernel launch refused for this call"


class kernel_mode:
    """Within the block, launches of the candidate's own kernels (Triton's `run`, calls into an
    extension module) are altered as `mode` says; `seed` draws the poisoned share. Where a mode is
    set, what it did goes into `record["kernels"]` as the block ends, raising or not: launches
    altered, elements poisoned, and launches whose writes no argument names."""

    def __init__(self, mode, seed=0, record: dict | None = None):
        self.mode, self.seed, self.record = mode, seed, record

    def __enter__(self):
        KERNELS.update(mode=self.mode, rng=random.Random(self.seed), poisoned=0, altered=0, unseen=0)
        return KERNELS

    def __exit__(self, *exc):
        KERNELS["mode"] = None
        if self.mode and self.record is not None:
            self.record["kernels"] = {k: KERNELS[k] for k in ("altered", "poisoned", "unseen")}
        return False


def _tensors(torch, obj, out: list, depth: int = 0) -> list:
    if isinstance(obj, torch.Tensor):
        out.append(obj)
    elif depth < 3 and isinstance(obj, (list, tuple)):
        for x in obj:
            _tensors(torch, x, out, depth + 1)
    elif depth < 3 and isinstance(obj, dict):
        for x in obj.values():
            _tensors(torch, x, out, depth + 1)
    return out


def _far(torch, t, mask, rng) -> None:
    """Overwrite t's elements under mask with values of random sign far from any answer (a
    thousand times the tensor's largest magnitude, within the dtype's range): finite, so that a
    kernel's own guard against NaN does not turn a poisoned write into a recomputation. Integer
    and boolean elements become zero (False): an index, an offset or a count that a later launch
    still reads within bounds. In place, on the tensor's device, a byte per element beside it."""
    if not t.is_floating_point():
        t.masked_fill_(mask, 0)
        return
    if t.element_size() == 1:
        # fp8 has no arithmetic kernels: poisoned in fp32 and rounded back
        wide = t.float()
        _far(torch, wide, mask, rng)
        t.copy_(wide.to(t.dtype))
        return
    top = float(t.detach().abs().amax()) if t.numel() else 1.0   # inf or NaN: the dtype's bound below
    big = min(torch.finfo(t.dtype).max / 16, 1e3 * (1.0 + top))
    coin = torch.randint(0, 2, t.shape, dtype=torch.uint8, device=t.device, generator=_generator(torch, t, rng))
    t.masked_fill_(mask, big)
    t.masked_fill_(mask & coin.bool(), -big)


def _generator(torch, t, rng):
    g = torch.Generator(device=t.device)
    g.manual_seed(rng.randrange(1 << 62))
    return g


def _altered(fn, a, k):
    """fn(*a, **k) under the current kernel mode."""
    mode = KERNELS["mode"]
    if mode == "refuse":
        KERNELS["altered"] += 1
        raise RuntimeError(REFUSED)
    import sys

    torch = sys.modules.get("torch")
    if torch is None:
        return fn(*a, **k)
    # floating tensors, and integer or boolean ones (a float buffer written through an int32
    # view is work like any other); complex ones are left alone
    args = [t for t in _tensors(torch, (list(a), k), []) if not t.is_complex()]
    before = []
    for t in args:
        try:
            before.append(t.detach().clone())
        except Exception:  # noqa: BLE001 - a dtype that cannot be copied or compared: not poisoned
            before.append(None)
    out = fn(*a, **k)
    KERNELS["altered"] += 1
    if any(t.is_cuda for t in args) and torch.cuda.is_available():
        torch.cuda.synchronize()   # work the launch left on another stream writes first
    seen = set()
    targets = []
    for t, b in zip(args, before):
        if b is None:
            continue
        seen.add(t.untyped_storage().data_ptr())
        try:
            with torch.no_grad():
                if t.is_floating_point() and t.element_size() == 1:
                    # fp8 has no comparison kernels: its bytes are compared
                    changed = t.view(torch.uint8) != b.view(torch.uint8)
                else:
                    changed = t != b
                    if t.is_floating_point():
                        changed &= ~(torch.isnan(t) & torch.isnan(b))
        except Exception:  # noqa: BLE001 - a dtype without comparisons (fp8): not poisoned
            continue
        del b
        targets.append((t, changed))
    before.clear()
    for t in _tensors(torch, out, []):
        # what an extension returns, made in the call: every element is its work
        if not t.is_complex() and t.untyped_storage().data_ptr() not in seen:
            targets.append((t, torch.ones(t.shape, dtype=torch.bool, device=t.device)))
    rng = KERNELS["rng"]
    for t, changed in targets:
        n = int(changed.sum())
        if not n:
            continue
        if mode == "poison_some":
            draw = torch.randint(0, round(1 / SOME), changed.shape, dtype=torch.uint8, device=changed.device,
                                 generator=_generator(torch, changed, rng))
            pick = (draw == 0) & changed
            if not bool(pick.any()):
                # at least one element of every changed tensor
                flat = changed.reshape(-1).nonzero().reshape(-1)
                pick = torch.zeros_like(changed).reshape(-1)
                pick[flat[rng.randrange(flat.numel())]] = True
                pick = pick.reshape(changed.shape)
            changed = pick
        try:
            with torch.no_grad():
                _far(torch, t, changed, rng)
            KERNELS["poisoned"] += int(changed.sum())
        except Exception:  # noqa: BLE001 - a tensor that takes no assignment (a view of a constant)
            pass
    return out


def _launched(name) -> None:
    """One completed top-level launch, of the kernel (or extension function) `name`."""
    _LAUNCHES[0] += 1
    name = str(name)[:80]
    if len(NAMES) < 256 or name in NAMES:
        NAMES[name] = NAMES.get(name, 0) + 1


def _counted(fn, *a, **k):
    """fn(*a, **k), counted as one launch once it returns; one that raises counts as a failed
    launch and its exception goes on to the caller."""
    rng = _own_range(getattr(fn, "__name__", "?"))
    try:
        if rng is not None:
            rng.__enter__()
        try:
            out = fn(*a, **k) if KERNELS["mode"] is None else _altered(fn, a, k)
        finally:
            if rng is not None:
                rng.__exit__(None, None, None)
    except BaseException as e:
        if KERNELS["mode"] != "refuse":   # a launch the auditor refused did not fail of itself
            _failed(e)
        raise
    _launched(getattr(fn, "__name__", "?"))
    return out


def _disguised(wrapper, orig):
    """`wrapper` under `orig`'s names (name, qualified name, module, docstring), without the
    `__wrapped__` link `functools.wraps` would add: a candidate that reads the name of Triton's
    `run` (an outside red team's tell: "<locals>" only inside the worker) sees the library's.
    A raised bar, not a wall: the wrapper's type, code and signature still differ, and a
    candidate that tells the worker apart and is honest only there passes (docs/dynamic.md)."""
    for attr in ("__name__", "__qualname__", "__module__", "__doc__"):
        try:
            setattr(wrapper, attr, getattr(orig, attr))
        except (AttributeError, TypeError):
            pass
    return wrapper


def _counting_run(orig):
    """A Triton `run` (what `kernel[grid](...)` calls) that counts top-level launches once they
    return: under the interpreter a kernel's @triton.jit helpers are calls too, and their number
    follows the data; a warm-up (`kernel.warmup(...)`: compile, no launch) is no launch."""
    def run(self, *a, **k):
        depth = getattr(_DEPTH, "n", 0)
        top = depth == 0 and not k.get("warmup")
        _DEPTH.n = depth + 1
        rng = _own_range(getattr(getattr(self, "fn", None), "__name__", None) or "triton") if top else None
        if rng is not None:
            rng.__enter__()
        try:
            if top and KERNELS["mode"] is not None:
                out = _altered(lambda *a2, **k2: orig(self, *a2, **k2), a, k)
            else:
                out = orig(self, *a, **k)
        except BaseException as e:
            if top and KERNELS["mode"] != "refuse":
                _failed(e)
            raise
        finally:
            _DEPTH.n = depth
            if rng is not None:
                rng.__exit__(None, None, None)
        if top:
            _launched(getattr(getattr(self, "fn", None), "__name__", None) or getattr(self, "__name__", "?"))
        return out
    return _disguised(run, orig)


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
        cls.run = _counting_run(orig)
        done = True
    return done


def _count_graph_replays(torch) -> None:
    """A CUDA graph replay launches the kernels captured in it (the candidate's own among them):
    each replay counts as a launch, so a candidate that captures once and replays afterwards
    is seen running its kernels on every call. Counted on the C++ class's `replay`, which
    `torch.cuda.CUDAGraph.replay` reaches through super() and which a candidate may bind itself
    (`torch._C._CUDAGraph.replay.__get__(g)`, to save the Python wrapper's time: found on a real
    paged-attention kernel, whose replays then counted as calls with no kernel of its own); on
    the Python class only where the C++ one has none."""
    base = getattr(getattr(torch, "_C", None), "_CUDAGraph", None)
    for graph in (base, getattr(getattr(torch, "cuda", None), "CUDAGraph", None)):
        orig = getattr(graph, "replay", None)
        if orig is None:
            continue

        def replay(self, *a, __orig=orig, **k):
            if KERNELS["mode"] in ("poison_all", "poison_some"):
                # a replay writes buffers captured earlier, named by no argument: its work cannot
                # be poisoned, and a call that replays one proves nothing about its writes
                KERNELS["unseen"] += 1
                out = __orig(self, *a, **k)
                _launched(getattr(__orig, "__name__", "?"))
                return out
            return _counted(__orig, self, *a, **k)

        try:
            graph.replay = _disguised(replay, orig)
            return
        except Exception:  # noqa: BLE001 - a class that takes no attribute: the next one
            continue


# the modules already wrapped, held weakly: an id() alone outlives its module, and a later module
# given the same address would be taken as wrapped and its calls never counted
_WRAPPED = weakref.WeakSet()


def _wrap_extension(obj) -> bool:
    """Count calls to the functions of one compiled extension module (once per module), each
once it returns without raising."""
    if obj in _WRAPPED:
        return True
    _WRAPPED.add(obj)
    found = False
    for name in dir(obj):
        fn = getattr(obj, name, None)
        if callable(fn) and not name.startswith("_") and type(fn).__name__ == "builtin_function_or_method":
            def wrapped(*a, __fn=fn, **k):
                # counted once it returns: a call that raises (a TORCH_CHECK, a launch error the
                # extension checks) launched nothing the output can come from
                return _counted(__fn, *a, **k)
            setattr(obj, name, _disguised(wrapped, fn))
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
