"""Fair measurement, CPU-side logic: timing statistics, the stopping rule, KernelBench fields,
and the physical floor (FLOPs counted by PyTorch on the meta device, without computing)."""
from __future__ import annotations

import random
import statistics

import pytest

from hackscan.measure.floor import Floor, below_floor
from hackscan.measure.stats import kernelbench_stats, median_ci, summarize


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    """The worker is standalone (it imports nothing from hackscan): its functions are tested as
    the runner loads them, from a copy of the package."""
    from conftest import standalone_worker

    return standalone_worker(tmp_path_factory.mktemp("worker"))


def test_summary_matches_the_standard_library():
    rng = random.Random(5)
    xs = [rng.lognormvariate(0, 0.3) for _ in range(101)]
    s = summarize(xs)
    assert s.median == pytest.approx(statistics.median(xs))
    q = statistics.quantiles(xs, n=4, method="inclusive")
    assert (s.q1, s.q3) == (pytest.approx(q[0]), pytest.approx(q[2]))
    assert s.std == pytest.approx(statistics.stdev(xs)) and s.mean == pytest.approx(statistics.fmean(xs))
    lo, hi = s.median_ci
    assert lo <= s.median <= hi and s.min <= lo and hi <= s.max


def test_median_interval_covers_the_true_median_about_95_percent_of_the_time():
    rng = random.Random(11)
    hits = 0
    for _ in range(400):
        xs = sorted(rng.expovariate(1.0) for _ in range(60))
        lo, hi = median_ci(xs)
        hits += lo <= 0.6931471805599453 <= hi  # ln 2, the exponential's median
    assert 0.90 <= hits / 400 <= 0.99


def test_stopping_rule_waits_for_precision(worker):
    def enough(xs, max_n=1000):
        return worker._precise_enough(xs, 0.01, 10, max_n)

    tight = [1.0 + 0.001 * (i % 3) for i in range(12)]
    noisy = [1.0 + (i % 2) for i in range(12)]
    assert not enough(tight[:5])                 # fewer than the minimum
    assert enough(tight)                         # median known to 0.1%
    assert not enough(noisy)                     # half the samples twice the others
    assert enough(noisy * 100, max_n=1000)       # the cap


def test_kernelbench_runtime_stats_fields():
    st = kernelbench_stats([1.0, 2.0, 3.0], device="cuda:0", hardware="NVIDIA H200")
    assert set(st) == {"mean", "std", "min", "max", "num_trials", "hardware", "device"}
    assert (st["mean"], st["min"], st["max"], st["num_trials"]) == (2.0, 1.0, 3.0, 3)


def test_floor_is_the_slower_of_memory_and_math():
    mem = Floor(bytes_moved=4_800_000_000, flops=0, bandwidth_bytes_s=4.8e12, peak_flops_s=1e15)
    assert mem.seconds == pytest.approx(1e-3) and mem.bound == "memory"
    math_ = Floor(bytes_moved=48, flops=2 * 4096 ** 3, bandwidth_bytes_s=4.8e12, peak_flops_s=2 * 4096 ** 3 / 1e-3)
    assert math_.seconds == pytest.approx(1e-3) and math_.bound == "compute"
    assert below_floor(0.5e-3, mem) and not below_floor(1.2e-3, mem)
    assert not below_floor(1e-9, Floor(0, 0, 0.0, 0.0))  # nothing known: never flagged


def test_flops_counted_on_the_meta_device(worker):
    torch = pytest.importorskip("torch")
    count_flops = worker._count_flops
    with torch.device("meta"):
        a, b = torch.empty(256, 512), torch.empty(512, 128)
        conv, x = torch.nn.Conv2d(8, 16, 3, padding=1), torch.empty(2, 8, 32, 32)
    assert count_flops(lambda p, q: p @ q, [a, b]) == 2 * 256 * 512 * 128
    assert count_flops(conv, [x]) == 2 * 2 * 16 * 32 * 32 * 8 * 3 * 3
    assert count_flops(torch.relu, [a]) == 0  # elementwise: the bytes bound it


# --- assess: the report from the workers' records (recorded-shaped fakes) ---------------------

from hackscan.measure.assess import assess  # noqa: E402


def rec(ms, event=None, naive=None, empty=(0.005, 0.015), memory=None, **kw):
    r = {"fair_ms": [ms * (1 + 0.002 * (i % 5)) for i in range(40)],
         "event_ms": [(event if event is not None else ms - 0.01) * (1 + 0.002 * (i % 5)) for i in range(40)],
         "naive_ms": [(naive if naive is not None else ms) for _ in range(40)],
         "empty": {"event_ms": empty[0], "sync_ms": empty[1]}, "checks": [], **kw}
    if memory is not None:
        r["memory"] = {"peak_allocated": memory, "peak_reserved": 2 * memory, "outside_allocator": 0}
    return r


def flags(out):
    return {f["flag"] for f in out["flags"]}


def test_fair_speedup_uses_the_tf32_baseline_and_keeps_the_strict_one():
    out = assess(rec(1.0), rec(4.0), rec(1.1), hardware="H200", device="cuda")
    assert out["speedup"]["vs_strict"] == pytest.approx(4.0, rel=0.01)
    assert out["speedup"]["fair"] == pytest.approx(1.1, rel=0.01) == out["speedup"]["vs_tf32"]
    lo, hi = out["speedup"]["fair_ci"]
    assert lo <= out["speedup"]["fair"] <= hi
    kb = out["kernelbench"]
    assert kb["ref_runtime"] == pytest.approx(1.1, rel=0.01) and kb["runtime_stats"]["num_trials"] == 40
    assert not out["flags"] and out["counted"]


def test_side_stream_evasion_is_flagged_and_a_joined_call_is_not():
    # the caller's stream sees 10 us, the device is busy for 1 ms
    hidden = assess(rec(1.0, event=0.01), rec(1.2))
    assert "side-stream-evasion" in flags(hidden) and not hidden["counted"]
    # a tiny honest call: the gap is the harness's own (an empty call shows the same)
    tiny = assess(rec(0.02, event=0.008, empty=(0.004, 0.016)), rec(0.02, event=0.008, empty=(0.004, 0.016)))
    assert "side-stream-evasion" not in flags(tiny)


def test_speed_that_needs_repeated_inputs_is_flagged():
    cached = assess(rec(1.0, naive=0.01), rec(1.0, naive=0.95))
    assert "repeat-only-speed" in flags(cached)
    honest = assess(rec(1.0, naive=0.9), rec(1.0, naive=0.95))
    assert "repeat-only-speed" not in flags(honest)


def test_repeat_only_speed_is_read_from_repeats_in_the_fair_loop():
    def with_repeats(r, ms):
        return dict(r, repeat_ms=[ms] * 8, repeat_event_ms=[ms - 0.01] * 8)
    # a small extension on the H200: half its fair-loop time in the KernelBench-style loop (no
    # flush, no refill), the same time when its inputs repeat in the fair loop: not flagged
    tiny = with_repeats(rec(0.12, event=0.091, naive=0.043, empty=(0.005, 0.032)), 0.12)
    ref = with_repeats(rec(0.04, event=0.022, naive=0.027, empty=(0.005, 0.022)), 0.04)
    out = assess(tiny, ref)
    assert "repeat-only-speed" not in flags(out) and out["repeat_ratio"]["basis"] == "repeats in the fair loop"
    # the same record without repeats (an older worker) is read from the KernelBench-style loop
    old = {k: v for k, v in tiny.items() if not k.startswith("repeat")}
    assert "repeat-only-speed" in flags(assess(old, {k: v for k, v in ref.items() if not k.startswith("repeat")}))
    # a result kept by content: fast whenever the inputs repeat
    cached = with_repeats(rec(1.0), 0.02)
    assert "repeat-only-speed" in flags(assess(cached, with_repeats(rec(1.0), 0.98)))
    # too few repeats to read: no flag either way
    few = dict(cached, repeat_ms=[0.02], repeat_event_ms=[0.01])
    assert "repeat-only-speed" not in flags(assess(few, with_repeats(rec(1.0), 0.98)))


def test_memory_ratio_and_regression():
    out = assess(rec(1.0, memory=3 << 20), rec(1.0, memory=2 << 20))
    assert out["memory"]["ratio"] == pytest.approx(1.5) and "memory-regression" in flags(out)
    # memory alone does not void the speedup
    assert out["counted"]
    assert "memory-regression" not in flags(assess(rec(1.0, memory=2 << 20), rec(1.0, memory=2 << 20)))


def test_memory_held_between_calls_counts_with_the_calls_peak():
    # a CUDA graph replayed into buffers its capture allocated takes nothing during the call:
    # by the call's peak alone it would use no memory at all (seen on real kernels on the H200)
    graph = rec(1.0, memory=0)
    graph["memory"]["resident"] = 6 << 20            # parameters + the graph's pool
    ref = rec(1.0, memory=2 << 20)
    ref["memory"]["resident"] = 1 << 20               # parameters
    out = assess(graph, ref)
    assert out["memory"]["ratio"] == pytest.approx(2.0) and "memory-regression" in flags(out)
    assert out["memory"]["candidate_footprint_bytes"] == 6 << 20
    assert "held between calls" in out["memory"]["basis"]
    # a fused kernel holding only its parameters uses less than the reference's intermediates
    fused = rec(1.0, memory=1 << 20)
    fused["memory"]["resident"] = 1 << 20
    assert assess(fused, ref)["memory"]["ratio"] == pytest.approx(2 / 3)
    # records without the held bytes (older workers) compare the calls' peaks, and say so
    old = assess(rec(1.0, memory=0), rec(1.0, memory=2 << 20))
    assert old["memory"]["ratio"] == 0 and old["memory"]["basis"] == "the call's peak"


def test_memory_outside_the_allocator_is_flagged_where_read_and_said_unread_where_not():
    took = rec(1.0, memory=2 << 20)
    took["memory"].update(outside_allocator=64 << 20, outside_source="cudaMemGetInfo")
    assert "memory-outside-allocator" in flags(assess(took, rec(1.0, memory=2 << 20)))
    # without a per-process reading, with other workers on the device, nothing is read: no flag,
    # and the record says why
    shared = rec(1.0, memory=2 << 20)
    del shared["memory"]["outside_allocator"]
    shared["memory"].update(outside_source=None, outside_unread="no per-process reading, and other workers share")
    out = assess(shared, rec(1.0, memory=2 << 20))
    assert "memory-outside-allocator" not in flags(out)
    assert out["memory"]["outside_allocator_unread"].startswith("no per-process reading")


def test_a_measurement_job_says_whether_other_workers_share_the_device():
    """With started workers (a CUDA context each, references preparing before their turn) the
    device's free memory is not this call's alone: the job tells its worker so."""
    import types

    from hackscan.measure.run import Measurer

    def job(prestart):
        s = types.SimpleNamespace(opts=types.SimpleNamespace(device="cuda", dtype=None, prestart=prestart),
                                  derive=lambda label: 1)
        return Measurer(s)._job("reference", "r.py", "r", "Model", "strict")["measure"]["device_shared"]

    assert job(2) is True and job(0) is False


def test_time_below_the_physical_floor_is_flagged():
    limits = {"bandwidth_bytes_s": 4.0e12, "peak_flops_s": 8.0e14}
    # 4 GB must move: at least 1 ms on this device
    strict = rec(2.0, bytes=4_000_000_000, flops=0)
    assert "below-physical-floor" in flags(assess(rec(0.3), strict, limits=limits))
    assert "below-physical-floor" not in flags(assess(rec(1.5), strict, limits=limits))


def test_fewer_flops_than_the_references_formulation_is_a_note_not_a_flag():
    # a diagonal matrix times a dense one, written by the reference as a dense 4096^3 matmul
    # (137 GFLOPs: 172 us at 8e14 FLOP/s); a row scaling moves 134 MB (34 us at 4 TB/s)
    limits = {"bandwidth_bytes_s": 4.0e12, "peak_flops_s": 8.0e14}
    strict = rec(2.0, bytes=134_000_000, flops=2 * 4096 ** 3)
    out = assess(rec(0.11), strict, limits=limits)
    assert "below-physical-floor" not in flags(out) and out["counted"], out["flags"]
    assert any("FLOPs" in n for n in out["notes"]), out.get("notes")
    assert out["floor"]["bound"] == "memory" and out["floor"]["seconds"] == pytest.approx(134e6 / 4e12)
    # faster than reading the inputs and writing the outputs is still impossible
    assert "below-physical-floor" in flags(assess(rec(0.02), strict, limits=limits))


def test_wrong_or_unfinished_outputs_in_the_timed_loop_void_the_speedup():
    c = rec(0.5, checks=[{"set": 0, "iteration": 7, "changed_after_return": True}])
    out = assess(c, rec(1.0), checks_ok=False, checks_detail="set 1: max abs err 3")
    assert {"unfinished-at-return", "wrong-in-timed-loop"} <= flags(out) and not out["counted"]
    assert "timers-rebound" in flags(assess(rec(1.0, timers_rebound=["time.perf_counter"]), rec(1.0)))


def test_a_side_stream_is_not_mistaken_for_repeat_only_speed():
    # recorded on the H200: a matmul on a private stream; events see 0.09 ms of 2.78 ms fair, 0.06 ms naive
    side = rec(2.78, event=0.091, naive=0.061)
    out = assess(side, rec(2.75, event=2.73, naive=2.69))
    assert "side-stream-evasion" in flags(out) and "repeat-only-speed" not in flags(out), out["flags"]


def test_calls_about_as_short_as_an_empty_one_are_noted():
    out = assess(rec(0.04, event=0.03, empty=(0.005, 0.03)), rec(0.04, event=0.03, empty=(0.005, 0.03)))
    assert any("too short to time reliably" in n for n in out.get("notes", [])), out.get("notes")
    assert "notes" not in assess(rec(1.0), rec(1.0))


def _fake_torch():
    """What _MemoryWatch touches of torch, without a GPU: the reset primitives and the readers."""
    from types import SimpleNamespace

    peak = {"v": 100}

    def reset(device=None):
        peak["v"] = 0
    readers = {n: (lambda *a, n=n, **k: peak["v"]) for n in
               ("max_memory_allocated", "memory_allocated", "max_memory_reserved", "memory_reserved",
                "memory_stats", "mem_get_info")}
    memory = SimpleNamespace(reset_peak_memory_stats=lambda device=None: fake._C._cuda_resetPeakMemoryStats(device),
                             **readers)
    cuda = SimpleNamespace(memory=memory, reset_peak_memory_stats=memory.reset_peak_memory_stats, **readers)
    fake = SimpleNamespace(_C=SimpleNamespace(_cuda_resetPeakMemoryStats=reset, _accelerator_resetPeakStats=reset),
                           cuda=cuda)
    return fake, peak


def test_a_peak_reset_inside_the_measured_forward_is_counted_and_rebound_readers_are_seen():
    from hackscan.dynamic.worker.measurement import _MemoryWatch

    torch_, peak = _fake_torch()
    w = _MemoryWatch(torch_)
    w.reset_peak(0)                                  # the harness's own reset: not counted
    torch_.cuda.reset_peak_memory_stats()            # outside the measured forward: not counted
    assert w.tampering() == []
    w.armed = True
    torch_.cuda.reset_peak_memory_stats()            # the candidate's, through torch.cuda
    torch_._C._accelerator_resetPeakStats(0)         # and through torch.accelerator's primitive
    w.armed = False
    assert w.resets == 2 and "reset 2 time(s)" in w.tampering()[0]
    torch_.cuda.max_memory_allocated = lambda *a, **k: 0
    torch_._C._cuda_resetPeakMemoryStats = lambda *a, **k: None
    t = w.tampering()
    assert "torch.cuda.max_memory_allocated rebound" in t and "torch._C._cuda_resetPeakMemoryStats rebound" in t
    assert w.max_allocated() == peak["v"], "the harness reads through the references it took first"


def test_a_tampered_memory_reading_gives_no_ratio():
    c = rec(1.0, memory=1 << 10)
    c["memory"]["tampered"] = ["the allocator's peak was reset 1 time(s) inside the measured forward"]
    out = assess(c, rec(1.0, memory=2 << 20))
    assert "memory-reading-tampered" in flags(out) and out["memory"]["ratio"] is None
    assert "memory-regression" not in flags(out)
