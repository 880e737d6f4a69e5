"""The profiled call: which kernels ran, on which streams, under which PyTorch op (kernel
attribution, stream joins, graph replays)."""
from __future__ import annotations


import os
import sys

from .common import _call
from .precision import _TORCH as _PRECISION_WATCHED, precision_state, relaxed_ops
from .instrumentation import OWN, PROFILING


def kineto_profile(torch, device: str):
    """The kineto session torch.profiler.profile runs (CPU events, and the device's where it is a
    GPU), made through torch.autograd.profiler directly: torch.profiler's first start asks
    `hasattr(torch, "_inductor")`, which imports inductor and dynamo only to read whether
    inductor's CUDA graphs are on (1.2-1.5 s of CPU in every worker's first profiled call, more
    than a CPU audit's other calls together). That question is asked here of an inductor the
    candidate has already imported, and answered as torch.profiler does: CUPTI kept up between
    sessions. Used as a context manager; `kineto_results` holds the events after it ends."""
    from torch.autograd.profiler import profile

    cfg = sys.modules.get("torch._inductor.config")
    if device == "cuda" and cfg is not None and getattr(getattr(cfg, "triton", None), "cudagraphs", False):
        os.environ["DISABLE_CUPTI_LAZY_REINIT"] = "1"
        os.environ["TEARDOWN_CUPTI"] = "0"
    # input shapes and FLOPs of each op: the work each aten op did (kernel attribution by work)
    return profile(use_cpu=True, use_device="cuda" if device == "cuda" else None, use_kineto=True,
                   record_shapes=True, with_flops=True)


def _profiled_forward(torch, model, inputs, device):
    """One forward under torch.profiler: every device kernel with its device time, stream and
    the outermost aten op that launched it (None for kernels the candidate launched itself:
    Triton, its own CUDA kernels, a library called from its own C++). A profiler that cannot
    start or a profile that cannot be read leaves the call unprofiled (`error` says why); only
    the model's own exceptions propagate."""
    from torch.autograd.profiler import record_function

    if device == "cuda":
        torch.cuda.synchronize()
    # the precision flags at the call's start, where the candidate's flips are watched (its own)
    start = precision_state(torch) if _PRECISION_WATCHED[0] is not None else None
    try:
        prof = kineto_profile(torch, device)
        prof.__enter__()
    except Exception as e:  # noqa: BLE001
        return _call(model, inputs), {"error": f"profiler unavailable: {type(e).__name__}: {e}"[:300]}
    try:
        if device == "cuda":
            with record_function("hackscan::marker"):  # a fill kernel on the caller's stream
                torch.zeros(1, device="cuda")
        PROFILING[0] = record_function   # the candidate's own launches open ranges of their own
        try:
            with record_function("hackscan::forward"):
                out = _call(model, inputs)
        finally:
            PROFILING[0] = None
        if device == "cuda":
            torch.cuda.synchronize()
    finally:
        try:
            prof.__exit__(None, None, None)
        except Exception:  # noqa: BLE001 - reading it below says what is missing
            pass
    try:
        info = _read_profile(prof, start)
    except Exception as e:  # noqa: BLE001
        info = {"error": f"profile unreadable: {type(e).__name__}: {e}"[:300]}
    del prof
    return out, info


def _read_profile(prof, precision_start: dict | None = None) -> dict:
    """From kineto's raw events, with nothing newer than torch 2.x's stable accessors assumed:
    runtime/driver calls are the CPU events named cuda*/cu*, GPU copies of record_function
    ranges are the device events named like a CPU range."""
    import re

    from torch.autograd import DeviceType

    api_name = re.compile(r"^(cuda|cu)[A-Z]\w*")
    raw = list(prof.kineto_results.events())
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
        own = next((n[len(OWN):] for n in names if n.startswith(OWN)), None)  # launched inside the candidate's
        stream = stream_of(e)
        if "hackscan::marker" in names:
            marker_streams.add(stream)
            continue
        lt = launch.start_ns() if launch is not None else None
        kernels.append({"name": e.name()[:400], "us": round(e.duration_ns() / 1e3, 3), "stream": stream,
                        "owner": owner, "own": own, "launch_us": lt / 1e3 if lt else None,
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
            "op_work": op_work(ranges, fwd),
            "precision_in_call": relaxed_ops(ranges, fwd, precision_start),
            "caller_streams": sorted(s for s in marker_streams if s >= 0),
            "forward_us": [fwd[0] / 1e3, fwd[1] / 1e3] if fwd else None, "waits": waits[:200]}


# bytes of one element, by the dtype names the profiler records
_DTYPE_BYTES = {"double": 8, "long int": 8, "c10::complex<double>": 16, "c10::complex<float>": 8,
                "float": 4, "int": 4, "unsigned int": 4, "c10::Half": 2, "c10::BFloat16": 2, "short int": 2,
                "unsigned short": 2, "bool": 1, "signed char": 1, "unsigned char": 1}


def _elem_bytes(dtype: str) -> int:
    if dtype in _DTYPE_BYTES:
        return _DTYPE_BYTES[dtype]
    return 1 if "Float8" in dtype or "Float4" in dtype else 0


def op_work(ranges, fwd) -> dict:
    """The work of each top-level aten op (one no other aten op encloses) that began during the
    forward, on any thread, by op name: [calls, FLOPs, bytes]. FLOPs: the largest count the
    profiler gives any op inside it (an `aten::linear` counts through its `aten::addmm`; nested
    counts of one convolution are not added up); bytes: its tensor inputs'. What the reference's
    forward does against what the candidate left to PyTorch: kernel attribution by work."""
    if not fwd:
        return {}
    aten = [e for e in ranges if e.name().startswith("aten::") and fwd[0] <= e.start_ns() <= fwd[1]]
    by_thread: dict = {}
    for e in aten:
        by_thread.setdefault(e.start_thread_id(), []).append(e)
    out: dict = {}
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e.start_ns(), -e.end_ns()))
        top, end, flops = None, -1, 0
        for e in evs + [None]:
            if e is not None and top is not None and e.start_ns() <= end:
                flops = max(flops, _flops(e))
                continue
            if top is not None:
                rec = out.setdefault(top.name(), [0, 0, 0])
                rec[0] += 1
                rec[1] += flops
                rec[2] += _input_bytes(top)
            if e is None:
                break
            top, end, flops = e, e.end_ns(), _flops(e)
    return dict(sorted(out.items(), key=lambda kv: -(kv[1][1] + kv[1][2]))[:100])


def _flops(e) -> int:
    try:
        return int(e.flops() or 0)
    except Exception:  # noqa: BLE001 - an event without a count
        return 0


def _input_bytes(e) -> int:
    try:
        shapes, dtypes = e.shapes(), e.dtypes()
    except Exception:  # noqa: BLE001 - recorded without shapes
        return 0
    total = 0
    for shape, dtype in zip(shapes, dtypes):
        if not shape or not isinstance(shape, (list, tuple)) or not all(isinstance(d, int) for d in shape):
            continue
        n = 1
        for d in shape:
            n *= d
        total += n * _elem_bytes(str(dtype))
    return total
