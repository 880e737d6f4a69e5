"""Fair measurement (hackscan --measure): the timed calls, the clocks, the stopping rule, the
precision modes and the device's limits."""
from __future__ import annotations

import os
import random
import time

from .channel import OPEN
from .common import (_INPUTS, RefillMismatch, _await_device, _call, _changed_since, _leaves, _outputs_list, _plain, _refill,
                     _snapshot, _to_device, _tree_map)
from .evidence import _identities, _state
from .tensorfiles import _save_outputs

# one timed call in this many is a repeat of the call before it on the same inputs (fair loop)
REPEAT_EVERY = 4


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
            self.memory = _MemoryWatch(torch)

    def event(self):
        return self.Event(enable_timing=True)


class _MemoryWatch:
    """The memory reading's own references, taken before the candidate is imported, and a count
    of the allocator peak resets made while the measured forward runs: a candidate that resets
    the peak inside forward (torch.cuda.reset_peak_memory_stats or its primitive), or rebinds the
    functions that read it, would report a fraction of what it used. Every Python-level reset
    goes through the primitive `torch._C._cuda_resetPeakMemoryStats`, which is replaced by a
    counting wrapper; the harness resets through the original. Detection, not protection: code
    in the same process can find the original again."""

    READERS = ("max_memory_allocated", "memory_allocated", "max_memory_reserved", "memory_reserved",
               "reset_peak_memory_stats", "memory_stats", "mem_get_info")
    # the primitives every Python-level reset calls (torch.cuda's and torch.accelerator's)
    PRIMITIVES = ("_cuda_resetPeakMemoryStats", "_accelerator_resetPeakStats")

    def __init__(self, torch):
        self.torch = torch
        self.armed = False
        self.resets = 0
        self.ids = self._ids()
        self._orig = {n: getattr(torch._C, n) for n in self.PRIMITIVES if hasattr(torch._C, n)}
        self.reset_peak = self._orig.get("_cuda_resetPeakMemoryStats")
        self.max_allocated = torch.cuda.max_memory_allocated
        self.allocated = torch.cuda.memory_allocated
        self.max_reserved = torch.cuda.max_memory_reserved
        self.reserved = torch.cuda.memory_reserved
        self._wrappers = {}
        for name, orig in self._orig.items():
            def counted(*a, __orig=orig, **k):
                if self.armed:
                    self.resets += 1
                return __orig(*a, **k)
            self._wrappers[name] = counted
            setattr(torch._C, name, counted)

    def _ids(self) -> dict:
        torch = self.torch
        ids = {f"torch.cuda.{n}": id(getattr(torch.cuda, n, None)) for n in self.READERS}
        ids.update({f"torch.cuda.memory.{n}": id(getattr(torch.cuda.memory, n, None)) for n in self.READERS})
        return ids

    def tampering(self) -> list[str]:
        """What the candidate did to the memory reading: resets while armed, readers rebound."""
        out = [f"the allocator's peak was reset {self.resets} time(s) inside the measured forward"] if self.resets else []
        now = self._ids()
        out += [f"{k} rebound" for k in sorted(now) if now[k] != self.ids.get(k)]
        out += [f"torch._C.{n} rebound" for n, w in self._wrappers.items() if getattr(self.torch._C, n, None) is not w]
        return out


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


def _device_bytes(torch, objs) -> int:
    """Bytes of the distinct device storages under objs (nested input sets, tensors, None)."""
    seen = {}
    for t in _leaves(torch, list(objs)):
        if t.device.type != "cpu":
            st = t.untyped_storage()
            seen[st.data_ptr()] = st.nbytes()
    return sum(seen.values())


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
    # the sets lie in the reference's shared folder (read-only here) where the job names one
    src = _INPUTS["dir"] or jobdir
    names = sorted((n for n in os.listdir(src) if n.startswith("in_pool") and n.endswith(".pt")),
                   key=lambda n: int(n[len("in_pool"):-3] or 0))
    pool = [_to_device(torch, torch.load(os.path.join(src, n), weights_only=True), device) for n in names]
    if not pool:
        raise RuntimeError("no input sets to measure with")
    work = _tree_map(torch, pool[0], lambda t: t.clone())
    gen = torch.Generator(device=device)
    gen.manual_seed(int.from_bytes(os.urandom(7), "little"))  # drawn here, after the import

    def refill(k, noise, seed=None):
        # every input kind follows set k (its scalars too: a check compares with set k's reference);
        # a check's perturbation is drawn from the auditor's seed for set k (the reference's
        # check drew the same), a timed call's from this worker's own generator
        nonlocal work
        g = gen
        if seed is not None:
            g = torch.Generator(device=device)
            g.manual_seed(int(seed))
        try:
            work = _refill(torch, work, pool[k])
        except RefillMismatch:
            work = _tree_map(torch, pool[k], lambda t: t.clone())
        for w in _leaves(torch, work):
            if noise and w.is_floating_point() and w.numel():
                # fp8 tensors have no arithmetic kernels ("mul_cuda" not implemented for
                # Float8_e4m3fn stopped an fp8 GEMM's measurement on the H200): perturbed in
                # fp32 and rounded back
                narrow = w.element_size() == 1
                t = w.float() if narrow else w
                s = 1.0 + (float(torch.rand((), generator=g, device=device)) - 0.5) * 2 ** -5
                t.mul_(s)
                flat = t.view(-1) if t.is_contiguous() else None
                if flat is not None:
                    idx = torch.randint(0, flat.numel(), (min(1024, flat.numel()),), generator=g, device=device)
                    flat.index_add_(0, idx, torch.rand(idx.shape, generator=g, device=device, dtype=t.dtype) *
                                    flat[idx].abs().mean().clamp_min(1e-3) * 2 ** -4)
                if narrow:
                    w.copy_(t)

    flush = None
    if cuda and m.get("flush_l2", True):
        l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20) or (50 << 20)
        flush = torch.empty(2 * l2 // 4, dtype=torch.float32, device=device)

    rec: dict = {"mode": m.get("mode", "default"), "sets": len(pool)}
    if m.get("compile"):
        model = torch.compile(model)
        rec["compiled"] = True
        if job.get("device_gate"):
            # the compilation (seconds to minutes of CPU: tracing, code generation, Triton's
            # compiler) runs before this worker's turn, beside another's timing; its first call's
            # kernels are all it puts on the device then. The timed part waits for the turn.
            t_c = time.perf_counter()
            refill(0, False)
            _call(model, work)
            sync()
            rec["compile_s"] = round(time.perf_counter() - t_c, 3)
            _await_device(jobdir, result)
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
        mem = clock.memory
        if mem.reset_peak is not None:
            mem.reset_peak(torch.cuda.current_device())
        else:
            torch.cuda.reset_peak_memory_stats()
        base, res0 = mem.allocated(), mem.reserved()
        # what the model holds between calls (parameters, prepared weights, a CUDA graph's pool,
        # a static output): allocated before the call, less the harness's own tensors (the
        # input sets, the working buffers, the L2 flush). A graph replayed into buffers that
        # its capture allocated takes nothing during the call, and all of it here.
        harness = _device_bytes(torch, [work, *pool, flush])
        nvml = _NvmlProcess(torch)
        used0, free0 = nvml.used(), torch.cuda.mem_get_info()[0]
        mem.armed = True
        try:
            out = _call(model, work)
            sync()
        finally:
            mem.armed = False
        used1, free1 = nvml.used(), torch.cuda.mem_get_info()[0]
        grown = mem.reserved() - res0
        rec["memory"] = {"peak_allocated": mem.max_allocated() - base,
                         "peak_reserved": mem.max_reserved(), "baseline_allocated": base,
                         "resident": max(0, base - harness)}
        tampered = mem.tampering()
        if tampered:
            rec["memory"]["tampered"] = tampered
        if used0 is not None and used1 is not None:  # this process's device memory, as the driver counts it
            rec["memory"].update(outside_allocator=max(0, (used1 - used0) - grown), outside_source="nvml")
        elif m.get("device_shared"):
            # the device's free memory counts every process on it: with workers started beside
            # the timings (a CUDA context each) or a reference compiling before its turn, their
            # memory would be read as this call's, so nothing is read
            rec["memory"].update(outside_source=None, nvml=nvml.why,
                                 outside_unread="no per-process reading, and other workers share the device")
        else:  # the whole device's free memory: valid because measurements run one at a time
            rec["memory"].update(outside_allocator=max(0, (free0 - free1) - grown), outside_source="cudaMemGetInfo",
                                 nvml=nvml.why)
        del out

    check_every = m.get("check_every", 8)
    prefix = m.get("check_prefix", "chk")   # a second timing in the same worker writes beside the first
    fair, evt, checks = [], [], []
    rep, rep_evt = [], []    # repeats: the previous call's inputs again, not refilled
    every = max(2, int(m.get("repeat_every", REPEAT_EVERY)))
    saved: dict = {}
    i = 0
    t_loop = clock.perf()
    chan = OPEN["channel"]
    # which iterations are checks and which repeats: drawn here, after the import, one iteration at
    # a time (a fixed pattern, checks every 8th and repeats every 4th, let a candidate that spotted
    # the first repeat compute only on the checks); on average as often as before
    schedule = random.Random(int.from_bytes(os.urandom(8), "little"))
    n_checks, last = 0, None
    while True:
        check = schedule.random() < 1.0 / check_every
        # a repeat follows a timed call on fresh inputs and gives the same inputs again (same
        # values, same tensor versions), in the same loop (flush, synchronisation, events): the
        # only difference from a fresh call is that nothing changed, so speed that needs inputs
        # to repeat shows against the fresh calls, and launch or flush effects cancel
        repeat = not check and last == "fair" and schedule.random() < 1.0 / every
        # checks walk through the sets in turn (every set's outputs get compared)
        k = n_checks % len(pool) if check else i % len(pool)
        n_checks += check
        last = "check" if check else "repeat" if repeat else "fair"
        seed = None
        if chan is not None:
            # the auditor's clock: its windows between ticks bound what each iteration took; a
            # check's answer carries its set's perturbation seed (where the auditor gives one, the
            # check's inputs are perturbed as a timed call's are, and the reference's check had
            # the same: nothing tells a check from a timed call)
            seed = chan.tick(prefix, i, "check" if check else "repeat" if repeat else "fair",
                             k if check else None)
        if not repeat:
            refill(k, not check or seed is not None, seed)
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
                c["file"] = f"{prefix}_{k}"
                saved[k] = [_plain(torch, o) for o in outs]
            checks.append(c)
            del at_return
        elif repeat:
            rep.append(t_sync)
            rep_evt.append(t_ev)
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
    if chan is not None:
        chan.tick(prefix, i, "end")
    rec.update({"fair_ms": fair, "event_ms": evt, "repeat_ms": rep, "repeat_event_ms": rep_evt, "checks": checks,
                "iterations": i, "loop_s": clock.perf() - t_loop})
    names = {k: _save_outputs(torch, outs, os.path.join(jobdir, f"{prefix}_{k}")) for k, outs in saved.items()}
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
