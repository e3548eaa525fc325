"""Confidence intervals for latencies and their ratios.

stats-v2: the 95% interval of a mean of n trials is mean ± t·std/√n with t the 0.975 quantile of
Student's t distribution with n − 1 degrees of freedom (stats-v1 used the normal 1.96 whatever n;
for few trials that understates the noise: t is 12.71 for 2 trials, 2.26 for 10, 1.98 for 100).
One trial, or no standard deviation, gives no interval at all: it is said in words
("one trial: no interval"), never shown as a zero-width interval. The interval of a ratio of two
means (the speedup against the baseline) is the delta method on the log ratio with t at the
Welch–Satterthwaite degrees of freedom.

The t quantile is computed here, standard library only: the t distribution function through the
regularized incomplete beta function (a continued fraction), inverted by bisection.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from functools import lru_cache

STATS_VERSION = "stats-v2"
CONFIDENCE = 0.95
Z_95 = 1.96  # stats-v1's multiplier, whatever the number of trials (kept for reading old figures)

ONE_TRIAL = "one trial: no interval"
NO_SPREAD = "no spread reported: no interval"


@dataclass(frozen=True)
class Interval:
    low: float
    high: float

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    def overlaps(self, other: Interval) -> bool:
        return self.low <= other.high and other.low <= self.high


# -- Student's t --------------------------------------------------------------------------------


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
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


def regularized_incomplete_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b), for a, b > 0 and 0 ≤ x ≤ 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_continued_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_continued_fraction(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T ≤ t) for Student's t with df degrees of freedom."""
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    tail = 0.5 * regularized_incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


@lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """The p quantile of Student's t with df degrees of freedom (0 < p < 1), by bisection on t_cdf
    (memoised: a page asks for the same few degrees of freedom again and again)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be between 0 and 1, got {p}")
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        low, high = high, high * 2.0
    for _ in range(200):
        mid = (low + high) / 2.0
        if t_cdf(mid, df) < p:
            low = mid
        else:
            high = mid
        if high - low <= 1e-12 * high:
            break
    return (low + high) / 2.0


def t_95(df: float) -> float:
    """The two-sided 95% multiplier: the 0.975 quantile of t with df degrees of freedom."""
    return t_quantile(0.5 + CONFIDENCE / 2, df)


# -- intervals ----------------------------------------------------------------------------------


def no_interval_reason(std: float | None, n: int | None) -> str | None:
    """Why a mean has no interval ('one trial: no interval'), or None when it has one."""
    if n is not None and n == 1:
        return ONE_TRIAL
    if std is None or n is None or n < 1:
        return NO_SPREAD
    return None


def ci95_half_width(std: float | None, n: int | None) -> float | None:
    """Half width of the 95% confidence interval of a mean: t(0.975, n−1)·std/√n.

    None when there is no interval: one trial, no std or no n (see no_interval_reason)."""
    if no_interval_reason(std, n) is not None:
        return None
    assert std is not None and n is not None
    return t_95(n - 1) * std / math.sqrt(n)


def mean_interval(mean: float, std: float | None, n: int | None) -> Interval:
    """The 95% interval of a mean; a mean without an interval is placed as a point (for ranking only:
    the words for it are no_interval_reason's)."""
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


_MAX_LOG_SPREAD = 700.0  # exp(700) ≈ 1e304: the widest log-spread a double carries


def ratio_interval(
    numerator: tuple[float, float | None, int | None],
    denominator: tuple[float, float | None, int | None],
    confidence: float = CONFIDENCE,
) -> Interval:
    """Interval of mean_a/mean_b by the delta method on the log ratio.

    Each side is (mean, std, n). The variance of log(mean) is approximately (std/mean)²/n, and the
    two sides are independent measurements. The multiplier is Student's t at the Welch–Satterthwaite
    degrees of freedom of the two log variances (a side with one trial, or no std, adds nothing).
    """
    ratio = numerator[0] / denominator[0]
    parts: list[tuple[float, int]] = []
    for mean, std, n in (numerator, denominator):
        if std is not None and n is not None and n > 1:
            parts.append(((std / mean) ** 2 / n, n - 1))
    var = sum(v for v, _ in parts)
    if var == 0.0:
        return Interval(ratio, ratio)
    df = var**2 / sum(v**2 / dof for v, dof in parts)
    # A spread no measurement gives (a stored std a million times its figure, from a row past every check)
    # stops at what a double holds: the interval then says "anything", and never raises.
    spread = min(t_quantile(0.5 + confidence / 2, df) * math.sqrt(var), _MAX_LOG_SPREAD)
    return Interval(ratio * math.exp(-spread), min(ratio * math.exp(spread), sys.float_info.max))
