"""Summary statistics of latency samples, without numpy (the GPU machines carry torch only)."""

from __future__ import annotations

import math
from collections.abc import Sequence


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The q-th percentile (0 <= q <= 100) of already sorted values.

    Linear interpolation between the closest ranks, the same definition as numpy's
    default ``method="linear"``: the rank is ``(n - 1) * q / 100``.
    """
    if not sorted_values:
        raise ValueError("percentile of no values")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile {q} is outside [0, 100]")
    rank = (len(sorted_values) - 1) * q / 100.0
    lower = math.floor(rank)
    upper = min(lower + 1, len(sorted_values) - 1)
    fraction = rank - lower
    low_value = sorted_values[lower]
    return low_value + (sorted_values[upper] - low_value) * fraction


def summarize(samples_ms: Sequence[float]) -> dict:
    """Mean, sample standard deviation (ddof=1), min, max, median, p5, p95 and count."""
    if not samples_ms:
        raise ValueError("no samples to summarize")
    values = sorted(float(v) for v in samples_ms)
    count = len(values)
    # fsum keeps the mean exact to the last bit for long runs of near-equal samples.
    mean = math.fsum(values) / count
    if count > 1:
        variance = math.fsum((v - mean) ** 2 for v in values) / (count - 1)
        std = math.sqrt(variance)
    else:
        std = 0.0
    return {
        "mean": mean,
        "std": std,
        "min": values[0],
        "max": values[-1],
        "median": percentile(values, 50.0),
        "p5": percentile(values, 5.0),
        "p95": percentile(values, 95.0),
        "num_trials": count,
    }


# -- Student's t, for the adaptive trial count of candidate timing ------------------------------------------
# The same definition as kernelindex.rules.stats (stats-v2: the 0.975 quantile of t with n − 1 degrees of
# freedom), computed here again because benchmarks/ must run where only torch is installed and never
# imports the service.


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 500):
        m2 = 2 * m
        for numerator in (
            m * (b - m) * x / ((a + m2 - 1.0) * (a + m2)),
            -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return result


def _t_cdf(t: float, df: float) -> float:
    x = df / (df + t * t)
    a, b = df / 2.0, 0.5
    if x <= 0.0:
        tail = 0.0
    elif x >= 1.0:
        tail = 0.5
    else:
        log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
        if x < (a + 1.0) / (a + b + 2.0):
            incomplete = math.exp(log_front) * _beta_continued_fraction(a, b, x) / a
        else:
            incomplete = 1.0 - math.exp(log_front) * _beta_continued_fraction(b, a, 1.0 - x) / b
        tail = 0.5 * incomplete
    return 1.0 - tail if t >= 0 else tail


_T95_CACHE: dict[int, float] = {}


def t_95(df: int) -> float:
    """The two-sided 95% multiplier: the 0.975 quantile of Student's t with df degrees of freedom."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, got {df}")
    cached = _T95_CACHE.get(df)
    if cached is not None:
        return cached
    low, high = 0.0, 1.0
    while _t_cdf(high, df) < 0.975:
        low, high = high, high * 2.0
    for _ in range(200):
        mid = (low + high) / 2.0
        if _t_cdf(mid, df) < 0.975:
            low = mid
        else:
            high = mid
        if high - low <= 1e-12 * high:
            break
    _T95_CACHE[df] = value = (low + high) / 2.0
    return value


def relative_half_width(samples_ms: Sequence[float]) -> float | None:
    """Half width of the 95% interval of the mean, t(0.975, n−1)·std/√n, as a fraction of the mean;
    None for fewer than two samples or a mean that is not positive."""
    count = len(samples_ms)
    if count < 2:
        return None
    mean = math.fsum(samples_ms) / count
    if not mean > 0:
        return None
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in samples_ms) / (count - 1))
    return t_95(count - 1) * std / math.sqrt(count) / mean
