"""Counting what the candidate launches: Triton launches, CUDA graph replays, calls into and builds
of torch extensions; and turning extension builds off for the forced-failure run."""
from __future__ import annotations

import threading


# launches that returned without raising: a launch is counted when it completes, never when it
# is attempted (a kernel that fails to compile or launch, inside a try whose handler returns
# PyTorch's answer, ran nothing of its own: counting its attempt read the fallback's calls as
# the kernel's)
_LAUNCHES = [0]
# launches that raised, and the last one's error ("Type: message"): evidence that the custom path
# was tried and failed where forward still returned (its handler computed the output)
_FAILED = [0]
_LAST_FAILURE = [""]
_DEPTH = threading.local()  # nesting of Triton calls, per thread


def _failed(e: BaseException) -> None:
    _FAILED[0] += 1
    _LAST_FAILURE[0] = f"{type(e).__name__}: {e}"[:300]


def _counted(fn, *a, **k):
    """fn(*a, **k), counted as one launch once it returns; one that raises counts as a failed
    launch and its exception goes on to the caller."""
    try:
        out = fn(*a, **k)
    except BaseException as e:
        _failed(e)
        raise
    _LAUNCHES[0] += 1
    return out


def _counting_run(orig):
    """A Triton `run` (what `kernel[grid](...)` calls) that counts top-level launches once they
    return: under the interpreter a kernel's @triton.jit helpers are calls too, and their number
    follows the data; a warm-up (`kernel.warmup(...)`: compile, no launch) is no launch."""
    def run(self, *a, **k):
        depth = getattr(_DEPTH, "n", 0)
        top = depth == 0 and not k.get("warmup")
        _DEPTH.n = depth + 1
        try:
            out = orig(self, *a, **k)
        except BaseException as e:
            if top:
                _failed(e)
            raise
        finally:
            _DEPTH.n = depth
        if top:
            _LAUNCHES[0] += 1
        return out
    return run


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
            return _counted(__orig, self, *a, **k)

        try:
            graph.replay = replay
            return
        except Exception:  # noqa: BLE001 - a class that takes no attribute: the next one
            continue


_WRAPPED: set = set()


def _wrap_extension(obj) -> bool:
    """Count calls to the functions of one compiled extension module (once per module), each
once it returns without raising."""
    if id(obj) in _WRAPPED:
        return True
    _WRAPPED.add(id(obj))
    found = False
    for name in dir(obj):
        fn = getattr(obj, name, None)
        if callable(fn) and not name.startswith("_") and type(fn).__name__ == "builtin_function_or_method":
            def wrapped(*a, __fn=fn, **k):
                # counted once it returns: a call that raises (a TORCH_CHECK, a launch error the
                # extension checks) launched nothing the output can come from
                return _counted(__fn, *a, **k)
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
