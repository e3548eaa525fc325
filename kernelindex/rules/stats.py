"""Confidence intervals for latencies and their ratios."""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

STATS_VERSION = "stats-v1"
Z_95 = 1.96  # the pages' half width is 1.96·std/√n


@dataclass(frozen=True)
class Interval:
    low: float
    high: float

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    def overlaps(self, other: Interval) -> bool:
        return self.low <= other.high and other.low <= self.high


def ci95_half_width(std: float | None, n: int | None) -> float | None:
    """Half width of the 95% confidence interval of a mean: 1.96·std/√n. None when unknown."""
    if std is None or n is None or n < 1:
        return None
    return Z_95 * std / math.sqrt(n)


def mean_interval(mean: float, std: float | None, n: int | None) -> Interval:
    half = ci95_half_width(std, n)
    if half is None:
        return Interval(mean, mean)
    return Interval(mean - half, mean + half)


def summary_from_samples(samples: list[float]) -> tuple[float, float, int]:
    """(mean, sample std, n) of raw samples."""
    n = len(samples)
    mean = sum(samples) / n
    std = math.sqrt(sum((s - mean) ** 2 for s in samples) / (n - 1)) if n > 1 else 0.0
    return mean, std, n


def ratio_interval(
    numerator: tuple[float, float | None, int | None],
    denominator: tuple[float, float | None, int | None],
    confidence: float = 0.95,
) -> Interval:
    """Interval of mean_a/mean_b by the delta method on the log ratio.

    Each side is (mean, std, n). The variance of log(mean) is approximately (std/mean)²/n, and the
    two sides are independent measurements.
    """
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    ratio = numerator[0] / denominator[0]
    var = 0.0
    for mean, std, n in (numerator, denominator):
        if std is not None and n:
            var += (std / mean) ** 2 / n
    spread = z * math.sqrt(var)
    return Interval(ratio * math.exp(-spread), ratio * math.exp(spread))
