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
