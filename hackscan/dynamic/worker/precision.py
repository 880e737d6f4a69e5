"""The math-precision flags a candidate may flip inside a call and restore before it returns (TF32
for torch's matmuls and convolutions, reduced-precision reductions, fp16 accumulation): the
before/after snapshot of process state cannot see such a flip. Every setter of those flags that
PyTorch's Python reaches (`torch._C`'s setters, looked up at call time, and the descriptors of
`torch.backends.*` that hold their own references) is wrapped before the candidate is imported;
a write that changes the flags opens, during the profiled call, a zero-length profiler range
named STATE + the flags' values, so the profile orders each flip against the aten ops that ran
under it (`relaxed_ops`). What it decides from is what torch's matmul and convolution ops ran
with, on any device: the flags' values are the same facts on a CPU as on a GPU.

Evidence only, never a protection: a candidate may call libtorch's setter from its own C++ (its
flip is then unseen here, though a lasting one is still in the before/after snapshot) or undo
the wrappers."""
from __future__ import annotations

from bisect import bisect_right

from .instrumentation import PROFILING, _disguised

STATE = "hackscan::state::"

FP32 = ("float",)
HALF = ("c10::Half",)
BF16 = ("c10::BFloat16",)

# key -> (getter, values that relax the math, the op family it governs, the input dtypes it
# acts on); the getter is a name in torch._C, or (name, *args)
FLAGS = {
    "cuda.matmul.allow_tf32": ("_get_cublas_allow_tf32", ("True",), "matmul", FP32),
    "float32_matmul_precision": ("_get_float32_matmul_precision", ("high", "medium"), "matmul", FP32),
    "fp32_precision.cuda.matmul": (("_get_fp32_precision_getter", "cuda", "matmul"), ("tf32",), "matmul", FP32),
    "fp32_precision.mkldnn.matmul": (("_get_fp32_precision_getter", "mkldnn", "matmul"), ("tf32", "bf16"),
                                     "matmul", FP32),
    "onednn.allow_tf32": ("_get_onednn_allow_tf32", ("True",), "matmul", FP32),
    "cudnn.allow_tf32": ("_get_cudnn_allow_tf32", ("True",), "conv", FP32),
    "fp32_precision.cuda.conv": (("_get_fp32_precision_getter", "cuda", "conv"), ("tf32",), "conv", FP32),
    "fp32_precision.mkldnn.conv": (("_get_fp32_precision_getter", "mkldnn", "conv"), ("tf32", "bf16"), "conv", FP32),
    "cuda.matmul.allow_fp16_reduced_precision_reduction": (
        "_get_cublas_allow_fp16_reduced_precision_reduction", ("True", "(True, True)", "(True, False)"), "matmul", HALF),
    "cuda.matmul.allow_bf16_reduced_precision_reduction": (
        "_get_cublas_allow_bf16_reduced_precision_reduction", ("True", "(True, True)", "(True, False)"), "matmul", BF16),
    "cuda.matmul.allow_fp16_accumulation": ("_get_cublas_allow_fp16_accumulation", ("True",), "matmul", HALF),
    "cpu.allow_fp16_reduced_precision_reduction": (
        "_get_cpu_allow_fp16_reduced_precision_reduction", ("True",), "matmul", HALF),
}

# the aten ops each family's flags act on (what a GEMM or a convolution reaches through)
FAMILIES = {
    "matmul": frozenset(f"aten::{n}" for n in (
        "mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "linear", "_addmm_activation", "addmv", "mv",
        "einsum", "tensordot", "chain_matmul", "_scaled_dot_product_attention_math")),
    "conv": frozenset(f"aten::{n}" for n in (
        "convolution", "_convolution", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
        "conv_transpose3d", "cudnn_convolution", "cudnn_convolution_transpose", "mkldnn_convolution",
        "_convolution_mode", "convolution_overrideable", "_slow_conv2d_forward", "slow_conv3d_forward")),
}

# the setters of torch._C that change a flag above
SETTERS = ("_set_cublas_allow_tf32", "_set_float32_matmul_precision", "_set_fp32_precision_setter",
           "_set_onednn_allow_tf32", "_set_cudnn_allow_tf32", "_set_cublas_allow_fp16_reduced_precision_reduction",
           "_set_cublas_allow_bf16_reduced_precision_reduction", "_set_cublas_allow_fp16_accumulation",
           "_set_cpu_allow_fp16_reduced_precision_reduction")

_TORCH: list = [None]
LAST: dict = {}          # the flags' values after the last write seen
WRITES = [0]             # writes that changed a flag, over the whole run


def precision_state(torch=None) -> dict:
    """Each flag's value, as a string ("?" where its getter is missing or raises: the legacy and
    new precision APIs mixed make torch's own getter raise)."""
    torch = torch or _TORCH[0]
    out = {}
    for key, (getter, _relaxed, _family, _dtypes) in FLAGS.items():
        name, args = (getter, ()) if isinstance(getter, str) else (getter[0], getter[1:])
        try:
            out[key] = str(getattr(torch._C, name)(*args))
        except Exception:  # noqa: BLE001 - a torch without it, or a getter that refuses
            out[key] = "?"
    return out


def _after_write() -> None:
    try:
        now = precision_state()
    except Exception:  # noqa: BLE001
        return
    if now == LAST:
        return
    LAST.clear()
    LAST.update(now)
    WRITES[0] += 1
    rf = PROFILING[0]
    if rf is not None:
        try:
            with rf(STATE + encode(now)):
                pass
        except Exception:  # noqa: BLE001 - no range: the flip is unseen in the profile
            pass


def _watched(orig):
    def setter(*a, **k):
        try:
            return orig(*a, **k)
        finally:
            _after_write()
    return _disguised(setter, orig)


def watch(torch) -> bool:
    """Wrap the setters (once per process), before the candidate is imported."""
    if _TORCH[0] is not None:
        return True
    _TORCH[0] = torch
    LAST.update(precision_state(torch))
    for name in SETTERS:
        orig = getattr(torch._C, name, None)
        if orig is None:
            continue
        try:
            setattr(torch._C, name, _watched(orig))
        except Exception:  # noqa: BLE001
            continue
    # descriptors that hold a setter of their own (torch.backends.cudnn.allow_tf32 holds the
    # builtin it was given at torch's import; torch.backends.mkldnn's fp32_precision a closure)
    try:
        import torch.backends as tb
        from torch.backends import ContextProp
    except Exception:  # noqa: BLE001
        return True
    for modname in ("cudnn", "mkldnn", "cuda", "mha", "opt_einsum"):
        mod = getattr(tb, modname, None)
        if mod is None:
            continue
        for prop in list(vars(type(mod)).values()):
            if isinstance(prop, ContextProp) and callable(getattr(prop, "setter", None)):
                try:
                    prop.setter = _watched(prop.setter)
                except Exception:  # noqa: BLE001
                    pass
    return True


def encode(state: dict) -> str:
    return ";".join(f"{k}={v}" for k, v in sorted(state.items()))


def decode(text: str) -> dict:
    out = {}
    for part in text.split(";"):
        k, _, v = part.partition("=")
        if k:
            out[k] = v
    return out


def relaxed(state: dict, start: dict, family: str, dtypes: tuple) -> list[str]:
    """The flags relaxed in `state` and not at the call's start that act on an op of `family`
    with an input of one of `dtypes` ("key=value")."""
    out = []
    for key, (_g, loose, fam, acts_on) in FLAGS.items():
        if fam != family or not set(acts_on) & set(dtypes):
            continue
        v = state.get(key)
        if v in loose and start.get(key) not in loose:
            out.append(f"{key}={v}")
    return out


def relaxed_ops(ranges, fwd, start: dict | None) -> dict:
    """From the profiled call's CPU events: how often the precision flags changed during the
    forward, and each matmul or convolution aten op that ran under a flag the forward itself had
    relaxed ({"writes": n, "ops": [{"op", "dtypes", "relaxed", "calls"}]}). An op's flags are
    those of the last state range that began before it, else the call's start."""
    if not fwd or start is None:
        return {}
    marks = sorted(((e.start_ns(), decode(e.name()[len(STATE):])) for e in ranges
                    if e.name().startswith(STATE) and fwd[0] <= e.start_ns() <= fwd[1]), key=lambda m: m[0])
    if not marks:
        return {"writes": 0, "ops": []}
    times = [m[0] for m in marks]
    found: dict = {}
    for e in ranges:
        name = e.name()
        t = e.start_ns()
        if not (fwd[0] <= t <= fwd[1]):
            continue
        family = next((f for f, ops in FAMILIES.items() if name in ops), None)
        if family is None:
            continue
        i = bisect_right(times, t)
        state = marks[i - 1][1] if i else start
        try:
            dtypes = tuple(str(d) for d in e.dtypes() if d)
        except Exception:  # noqa: BLE001 - recorded without dtypes: an fp32 problem's are float
            dtypes = FP32
        flags = relaxed(state, start, family, dtypes)
        if flags:
            rec = found.setdefault((name, tuple(flags)), {"op": name, "dtypes": sorted(set(dtypes))[:4],
                                                           "relaxed": flags, "calls": 0})
            rec["calls"] += 1
    return {"writes": len(marks), "ops": list(found.values())[:20]}
