"""From the measure workers' raw records to what hackscan reports: speedups against the strict
fp32 and the TF32 reference (median and spread), the peak-memory ratio, the physical floor, the
KernelBench fields, and the flags (memory regression, time below the floor, side-stream evasion,
speed that only exists because inputs repeat, timers rebound, outputs wrong or unfinished in the
timed loop). Pure functions over plain dictionaries, so CI tests them with recorded-shaped fakes."""
from __future__ import annotations

from hackscan.measure.floor import Floor, below_floor
from hackscan.measure.stats import kernelbench_stats, summarize

# event-only time this far under the device-synchronised one, beyond the harness's own gap
# (an empty call through the same loop), means work finished after the caller's stream did
SIDE_STREAM_SHARE = 0.25
SIDE_STREAM_MIN_MS = 0.02
# repeated identical inputs this much faster (relative to the reference's own ratio) means the
# candidate's speed depends on seeing the same inputs again
REPEAT_RATIO = 0.5
REPEAT_MIN = 3       # repeats each side before their ratio is read
MEMORY_SLACK = 1.0   # a peak above the reference's (ratio > 1) is a regression
SHORT_FACTOR = 3     # medians under this many empty calls are mostly harness latency


def timing(rec: dict) -> dict | None:
    """Median, spread and the rest of one worker's fair and naive timings (milliseconds)."""
    if not rec or not rec.get("fair_ms"):
        return None
    fair = summarize(rec["fair_ms"])
    out = {"median_ms": fair.median, "iqr_ms": fair.iqr, "spread": fair.iqr / fair.median if fair.median else None,
           "ci_ms": list(fair.median_ci), "mean_ms": fair.mean, "std_ms": fair.std, "min_ms": fair.min,
           "max_ms": fair.max, "n": fair.n, "rel_precision": fair.rel_precision}
    if rec.get("event_ms"):
        out["event_median_ms"] = summarize(rec["event_ms"]).median
    if (rec.get("empty") or {}).get("sync_ms") is not None:
        out["harness_overhead_ms"] = rec["empty"]["sync_ms"]
    if rec.get("naive_ms"):
        naive = summarize(rec["naive_ms"])
        out["naive_median_ms"], out["naive_mean_ms"] = naive.median, naive.mean
    return out


def side_stream_gap(rec: dict) -> tuple[float, float] | None:
    """(unexplained gap, synchronised median) in ms: how much of the device-synchronised time the
    caller's stream did not see, beyond the harness's own gap on an empty call."""
    t = timing(rec)
    if not t or "event_median_ms" not in t:
        return None
    empty = rec.get("empty") or {}
    own_gap = max(0.0, (empty.get("sync_ms") or 0.0) - (empty.get("event_ms") or 0.0))
    return max(0.0, t["median_ms"] - t["event_median_ms"] - own_gap), t["median_ms"]


# flags that void a speedup (the measurement's record says `counted: false`)
VOIDING_FLAGS = ("below-physical-floor", "side-stream-evasion", "repeat-only-speed", "timers-rebound",
                 "unfinished-at-return", "wrong-in-timed-loop")


def assess(cand: dict, strict: dict, tf32: dict | None = None, compiled: dict | None = None,
           limits: dict | None = None, checks_ok: bool | None = None, checks_detail: str = "",
           hardware: str = "", device: str = "") -> dict:
    """Everything `--measure` reports for one candidate, from the worker records."""
    tc, ts = timing(cand), timing(strict)
    tt, tco = timing(tf32) if tf32 else None, timing(compiled) if compiled else None
    out: dict = {"candidate": tc, "reference_strict": ts, "reference_tf32": tt, "flags": []}
    if tco:
        out["reference_compiled"] = tco
    flags = out["flags"]
    if not tc or not ts:
        out["error"] = "no timings" + ("" if tc else " for the candidate") + ("" if ts else " for the reference")
        return out
    fair_base = tt or ts
    out["speedup"] = {
        "vs_strict": ts["median_ms"] / tc["median_ms"],
        "vs_tf32": tt["median_ms"] / tc["median_ms"] if tt else None,
        "vs_compiled": tco["median_ms"] / tc["median_ms"] if tco else None,
        # what a KernelBench-style loop would have reported: same inputs, no flush, event timing
        "naive": (ts.get("naive_mean_ms") or 0) / tc["naive_mean_ms"] if tc.get("naive_mean_ms") else None,
    }
    out["speedup"]["fair"] = fair_base["median_ms"] / tc["median_ms"]
    # the interval of the fair speedup from the two medians' intervals
    out["speedup"]["fair_ci"] = [fair_base["ci_ms"][0] / tc["ci_ms"][1], fair_base["ci_ms"][1] / tc["ci_ms"][0]]

    # KernelBench's fields (its runtime is a mean in ms), from the fair loops; the baseline is TF32
    out["kernelbench"] = {"runtime": round(tc["mean_ms"], 6),
                          "runtime_stats": kernelbench_stats(cand["fair_ms"], device, hardware),
                          "ref_runtime": round(fair_base["mean_ms"], 6),
                          "ref_runtime_stats": kernelbench_stats((tf32 or strict)["fair_ms"], device, hardware)}

    cm, rm = cand.get("memory"), (strict.get("memory") or (tf32 or {}).get("memory"))
    if cm and cm.get("tampered"):
        # the candidate reset the allocator's peak inside forward, or rebound what reads it:
        # its number is a fraction of what it used, and no ratio is given
        flags.append({"flag": "memory-reading-tampered", "detail": "; ".join(cm["tampered"])})
        out["memory"] = {"candidate_peak_bytes": None, "reference_peak_bytes": (rm or {}).get("peak_allocated"),
                         "ratio": None, "tampered": list(cm["tampered"])}
    elif cm and rm:
        # footprint: what the model holds between calls (parameters, prepared weights, a CUDA
        # graph's pool, a static output) plus the call's own peak above that. The call's peak
        # alone reads a graph replayed into buffers allocated at capture as taking nothing.
        held = "resident" in cm and "resident" in rm
        c_use = cm["peak_allocated"] + (cm["resident"] if held else 0)
        r_use = rm["peak_allocated"] + (rm["resident"] if held else 0)
        ratio = c_use / r_use if r_use > 0 else None
        out["memory"] = {"candidate_peak_bytes": cm["peak_allocated"], "reference_peak_bytes": rm["peak_allocated"],
                         "candidate_resident_bytes": cm.get("resident"), "reference_resident_bytes": rm.get("resident"),
                         "candidate_footprint_bytes": c_use, "reference_footprint_bytes": r_use,
                         "basis": "held between calls + the call's peak" if held else "the call's peak",
                         "ratio": ratio, "candidate_reserved_bytes": cm["peak_reserved"],
                         "reference_reserved_bytes": rm["peak_reserved"],
                         "candidate_outside_allocator_bytes": cm.get("outside_allocator", 0),
                         "outside_allocator_source": cm.get("outside_source")}
        if cm.get("outside_unread"):
            out["memory"]["outside_allocator_unread"] = cm["outside_unread"]
        if ratio is not None and ratio > MEMORY_SLACK:
            what = "held between calls plus the call's peak" if held else "above the same baseline"
            flags.append({"flag": "memory-regression",
                          "detail": f"peak memory {ratio:.2f}x the reference's ({c_use:,} vs {r_use:,} bytes, {what})"})
        if cm.get("outside_allocator", 0) > max(1 << 20, 0.05 * rm["peak_allocated"]):
            flags.append({"flag": "memory-outside-allocator",
                          "detail": f"{cm['outside_allocator']:,} bytes of device memory taken during forward "
                                    "outside PyTorch's allocator (cudaMalloc or a library of its own; "
                                    f"seen through {cm.get('outside_source') or 'the device memory info'})"})

    notes = []
    lim = limits or strict.get("device_limits")
    if lim and (strict.get("bytes") or strict.get("flops")):
        # the physical floor is the bytes that must move (each input read once, each output
        # written once); the reference's FLOPs are its formulation's, not the problem's: a
        # diagonal matmul written as a dense one, or a GEMM in fp8 (twice the bf16 rate the
        # device was calibrated with), is honestly faster than they allow. They are a note.
        mem = Floor(int(strict.get("bytes", 0)), 0, lim["bandwidth_bytes_s"], lim["peak_flops_s"])
        math_s = Floor(0, int(strict.get("flops", 0)), 0.0, lim["peak_flops_s"]).seconds
        out["floor"] = {"seconds": mem.seconds, "bound": "memory", "bytes": mem.bytes_moved,
                        "flops": int(strict.get("flops", 0)), "reference_flops_seconds": math_s,
                        "bandwidth_bytes_s": mem.bandwidth_bytes_s, "peak_flops_s": mem.peak_flops_s}
        t = tc["median_ms"] / 1e3
        if below_floor(t, mem):
            flags.append({"flag": "below-physical-floor",
                          "detail": f"median {t * 1e6:.1f} us, the operation needs at least "
                                    f"{mem.seconds * 1e6:.1f} us on this device to read its inputs and write its "
                                    f"outputs ({mem.bytes_moved:,} bytes at "
                                    f"{mem.bandwidth_bytes_s / 1e9:,.0f} GB/s measured)"})
        elif math_s and t < 0.9 * math_s:
            notes.append(f"median {t * 1e6:.1f} us is under the {math_s * 1e6:.1f} us that the reference's "
                         f"{int(strict['flops']):,} FLOPs take at this device's measured bf16 matmul rate: fewer "
                         "FLOPs than the reference's formulation (an algebraic shortcut) or a faster number format "
                         "(fp8, int8); not a flag")

    gap = side_stream_gap(cand)
    if gap:
        g, total = gap
        rgap = side_stream_gap(strict)
        ref_share = rgap[0] / rgap[1] if rgap and rgap[1] else 0.0
        if g > SIDE_STREAM_MIN_MS and g / total > max(SIDE_STREAM_SHARE, 2 * ref_share):
            flags.append({"flag": "side-stream-evasion",
                          "detail": f"events on the caller's stream see {tc['event_median_ms']:.4f} ms, the "
                                    f"device is busy for {total:.4f} ms: {g / total:.0%} of the work finishes "
                                    "after the caller's stream does"})

    # speed that needs inputs to repeat: the fair loop's repeats (the previous call's inputs
    # again, in the same loop) against its fresh calls, by event time, relative to the
    # reference's own ratio. Records of older workers have no repeats: their KernelBench-style
    # loop is used, which also differs in the L2 flush and the refill (a small extension's
    # launch on the H200 took half the time there on fresh inputs too)
    basis = None
    if "repeat_event_ms" in cand and "repeat_event_ms" in strict:
        if len(cand["repeat_event_ms"]) >= REPEAT_MIN and len(strict["repeat_event_ms"]) >= REPEAT_MIN:
            rc = summarize(cand["repeat_event_ms"]).median / tc.get("event_median_ms", tc["median_ms"])
            rr = summarize(strict["repeat_event_ms"]).median / ts.get("event_median_ms", ts["median_ms"])
            basis = "repeats in the fair loop"
    elif tc.get("naive_median_ms") and ts.get("naive_median_ms"):
        rc = tc["naive_median_ms"] / tc.get("event_median_ms", tc["median_ms"])
        rr = ts["naive_median_ms"] / ts.get("event_median_ms", ts["median_ms"])
        basis = "KernelBench-style loop"
    if basis:
        out["repeat_ratio"] = {"candidate": rc, "reference": rr, "basis": basis}
        if rc < REPEAT_RATIO * rr:
            flags.append({"flag": "repeat-only-speed",
                          "detail": f"on the same inputs again it takes {rc:.0%} of its time on fresh "
                                    f"inputs (the reference: {rr:.0%}; {basis}): its speed depends on inputs "
                                    "repeating"})

    # a call not much longer than an empty one through the same loop is mostly launch and
    # synchronisation latency: its speedup says little about the kernel
    short = [(n, t) for n, t in (("candidate", tc), ("reference", fair_base))
             if t.get("harness_overhead_ms") and t["median_ms"] < SHORT_FACTOR * t["harness_overhead_ms"]]
    if short:
        notes += [f"{n} median {t['median_ms'] * 1e3:.1f} us is under {SHORT_FACTOR}x the harness's own "
                  f"{t['harness_overhead_ms'] * 1e3:.1f} us (an empty call): too short to time reliably"
                  for n, t in short]
    if notes:
        out["notes"] = notes
    if cand.get("timers_rebound"):
        flags.append({"flag": "timers-rebound", "detail": "rebound: " + ", ".join(cand["timers_rebound"])})
    unfinished = [c for c in cand.get("checks", []) if c.get("changed_after_return")]
    if unfinished:
        flags.append({"flag": "unfinished-at-return",
                      "detail": f"{len(unfinished)} of {len(cand.get('checks', []))} checked calls returned "
                                "outputs still being written"})
    if checks_ok is False:
        flags.append({"flag": "wrong-in-timed-loop", "detail": checks_detail})
    out["counted"] = not any(f["flag"] in VOIDING_FLAGS for f in flags)
    return out
