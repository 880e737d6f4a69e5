"""Fair measurement, CPU-side logic: timing statistics, the stopping rule, KernelBench fields,
and the physical floor (FLOPs counted by PyTorch on the meta device, without computing)."""
from __future__ import annotations

import random
import statistics

import pytest

from hackscan.measure.floor import Floor, below_floor, bytes_moved, count_flops
from hackscan.measure.stats import enough, kernelbench_stats, median_ci, summarize


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


def test_stopping_rule_waits_for_precision():
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


def test_flops_counted_on_the_meta_device():
    torch = pytest.importorskip("torch")
    with torch.device("meta"):
        a, b = torch.empty(256, 512), torch.empty(512, 128)
        conv, x = torch.nn.Conv2d(8, 16, 3, padding=1), torch.empty(2, 8, 32, 32)
    assert count_flops(lambda p, q: p @ q, [a, b]) == 2 * 256 * 512 * 128
    assert count_flops(conv, [x]) == 2 * 2 * 16 * 32 * 32 * 8 * 3 * 3
    assert count_flops(torch.relu, [a]) == 0  # elementwise: the bytes bound it
    spec = [{"shape": [256, 512], "bytes": 256 * 512 * 4}, {"scalar": "3"}]
    assert bytes_moved(spec, [{"bytes": 1024}]) == 256 * 512 * 4 + 1024
