"""Statistics of repeated timings: median and interquartile range, a distribution-free confidence
interval for the median (the worker's stopping rule, `_precise_enough` in
hackscan/dynamic/worker/measurement.py, uses the same order statistics), and the fields KernelBench's
evaluators read (`runtime_stats`)."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    q1: float
    q3: float
    iqr: float
    mean: float
    std: float
    min: float
    max: float
    median_ci: tuple[float, float]   # 95%, from order statistics

    @property
    def rel_precision(self) -> float:
        """Half the median's confidence interval over the median."""
        lo, hi = self.median_ci
        return (hi - lo) / 2 / self.median if self.median > 0 else math.inf

    def to_dict(self) -> dict:
        d = asdict(self)
        d["median_ci"] = list(self.median_ci)
        d["rel_precision"] = self.rel_precision
        return d


def _quantile(xs: list[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default)."""
    if len(xs) == 1:
        return xs[0]
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def median_ci(xs_sorted: list[float], z: float = 1.96) -> tuple[float, float]:
    """Distribution-free interval for the median: the order statistics at n/2 -+ z*sqrt(n)/2
    (the binomial(n, 1/2) normal approximation); the whole range for tiny samples."""
    n = len(xs_sorted)
    k = math.floor((n - z * math.sqrt(n)) / 2)
    if k < 0 or n - 1 - k < k:
        return xs_sorted[0], xs_sorted[-1]
    return xs_sorted[k], xs_sorted[n - 1 - k]


def summarize(times: list[float]) -> Summary:
    if not times:
        raise ValueError("no timings")
    xs = sorted(float(t) for t in times)
    n = len(xs)
    mean = sum(xs) / n
    std = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else 0.0
    q1, med, q3 = _quantile(xs, 0.25), _quantile(xs, 0.5), _quantile(xs, 0.75)
    return Summary(n, med, q1, q3, q3 - q1, mean, std, xs[0], xs[-1], median_ci(xs))


def kernelbench_stats(times_ms: list[float], device: str = "", hardware: str = "") -> dict:
    """The `runtime_stats` dictionary KernelBench's evaluators parse (milliseconds)."""
    s = summarize(times_ms)
    return {"mean": round(s.mean, 6), "std": round(s.std, 6), "min": round(s.min, 6), "max": round(s.max, 6),
            "num_trials": s.n, "hardware": hardware, "device": device}
