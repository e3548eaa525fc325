"""measurements-v1: what a run's statistics can physically and logically be.

Pure rules (no I/O), applied where a record comes in (kernelindex.ingest.records.check_record, for
the CLI and submitRuns alike) and, for values already stored, where facts are read
(kernelindex.services.facts), so a row no check would pass today cannot break a page.

- Every latency figure (mean, min, max, median, p5, p95, each sample) lies in
  [MIN_LATENCY_MS, MAX_LATENCY_MS]: one nanosecond (a clock cycle at 1 GHz; nothing a GPU does is
  timed below it) to one day (a single forward pass that long is not a benchmark). Compile time:
  at most a day too.
- Order: min ≤ p5 ≤ median ≤ p95 ≤ max and min ≤ mean ≤ max (any stated subset, in that order).
- Spread: std ≥ 0, and no larger than any set of samples with the stated figures allows. With min
  and max stated, a sample std (n − 1 in the denominator) is at most (max − min)·√(n/(n−1))/2, which
  is never more than (max − min)/√2; the rule is std ≤ (max − min) + ROUNDING_ALLOWANCE·max. The
  allowance is for rounded figures: KernelBench states three significant digits, so min and max may
  each be off by half a unit in the last place (0.5% of max each way) and a run with
  min = max = 36.8 really had a spread (std 0.006). Loose for rounding, tight enough to refuse 1e300.
  Without min and max, samples of positive latencies give std ≤ mean·n/√(n−1)
  (Σ(x−m)² ≤ Σx² ≤ (Σx)² = n²m²). One trial has no spread: std, if stated, is 0.
- Samples agree with the statistics: their count equals num_trials, and their min, max and mean
  equal the stated ones within SAMPLE_RELATIVE_TOLERANCE (relative) or SAMPLE_ABSOLUTE_TOLERANCE_MS,
  whichever is larger: stated figures are often rounded, never 1% off.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

MEASUREMENTS_VERSION = "measurements-v1"

MIN_LATENCY_MS = 1e-6
MAX_LATENCY_MS = 86_400_000.0
MAX_COMPILE_TIME_MS = 86_400_000.0
SAMPLE_RELATIVE_TOLERANCE = 0.01
SAMPLE_ABSOLUTE_TOLERANCE_MS = 0.001
# Of max: what rounding min and max to three significant digits can hide (see the module's rule).
ROUNDING_ALLOWANCE = 0.01
# Rounding slack for comparisons between stated figures (1.5 stated as 1.5000000000000002).
_EPSILON = 1e-9

LATENCY_KEYS = ("mean", "min", "max", "median", "p5", "p95")
# The order statistics, smallest first.
ORDERED_KEYS = ("min", "p5", "median", "p95", "max")

Problem = tuple[str, str]  # (key, reason), the key relative to the record ("statistics.p5")


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _below(a: float, b: float) -> bool:
    """a < b beyond rounding."""
    return a < b - _EPSILON * max(abs(a), abs(b), 1.0)


def _agrees(stated: float, actual: float) -> bool:
    return abs(stated - actual) <= max(SAMPLE_ABSOLUTE_TOLERANCE_MS, SAMPLE_RELATIVE_TOLERANCE * max(abs(stated), abs(actual)))


def latency_problem(value: float) -> str | None:
    if not math.isfinite(value):
        return "must be a finite number"
    if value < MIN_LATENCY_MS:
        return f"{value!r} ms is below one nanosecond ({MIN_LATENCY_MS} ms), the least a timed run can take"
    if value > MAX_LATENCY_MS:
        return f"{value!r} ms is more than a day ({MAX_LATENCY_MS:,.0f} ms), the most a timed run may take"
    return None


def std_bound(stats: Mapping[str, object]) -> float | None:
    """The largest std the other stated figures allow (see the module's rule), or None: no bound."""
    n = stats.get("num_trials")
    low, high, mean = _number(stats.get("min")), _number(stats.get("max")), _number(stats.get("mean"))
    if isinstance(n, int) and n == 1:
        return 0.0
    if low is not None and high is not None:
        return max(high - low, 0.0) + ROUNDING_ALLOWANCE * abs(high)
    if mean is not None and isinstance(n, int) and n >= 2:
        return mean * n / math.sqrt(n - 1)
    return None


def statistics_plainly_valid(stats: Mapping[str, object]) -> bool:
    """True only where statistics_problems(stats) (without samples) finds nothing: the common case,
    decided in one sweep without rounding slack. False means "ask statistics_problems", which words
    what is wrong (or, within its rounding slack, finds nothing after all). (Every record comes this
    way: written out, without a call per figure.)"""
    get = stats.get
    low, high = get("min"), get("max")
    previous: float | int | None = None
    for value in (low, get("p5"), get("median"), get("p95"), high):
        if value is None:
            continue
        kind = type(value)
        # NaN fails both comparisons; ±Infinity fails one; bool is not a number here. An int and a
        # float compare exactly, as the floats they stand for (a latency's int is far below 2**53).
        if not ((kind is float or kind is int) and MIN_LATENCY_MS <= value <= MAX_LATENCY_MS):  # type: ignore[operator]
            return False
        if previous is not None and value < previous:  # type: ignore[operator]
            return False
        previous = value  # type: ignore[assignment]
    mean = get("mean")
    if mean is not None:
        kind = type(mean)
        if not ((kind is float or kind is int) and MIN_LATENCY_MS <= mean <= MAX_LATENCY_MS):  # type: ignore[operator]
            return False
        if (low is not None and mean < low) or (high is not None and high < mean):  # type: ignore[operator]
            return False
    std = get("std")
    if std is not None:
        if not (type(std) is float or type(std) is int) or not 0 <= std < math.inf:
            return False
        bound = std_bound(stats)
        if bound is not None and std > bound:
            return False
    return True


def statistics_problems(stats: Mapping[str, object], samples: Sequence[object] | None = None) -> list[Problem]:
    """(key, reason) for everything measurements-v1 refuses in one run's statistics and samples."""
    problems: list[Problem] = []
    values: dict[str, float] = {}
    for key in LATENCY_KEYS:
        value = _number(stats.get(key))
        if value is None:
            continue
        bad = latency_problem(value)
        if bad:
            problems.append((f"statistics.{key}", bad))
        else:
            values[key] = value
    stated = [(k, values[k]) for k in ORDERED_KEYS if k in values]
    for (lower_key, lower), (upper_key, upper) in zip(stated, stated[1:]):
        if _below(upper, lower):
            problems.append((f"statistics.{upper_key}", f"{upper_key} {upper!r} is below {lower_key} {lower!r} (needs min ≤ p5 ≤ median ≤ p95 ≤ max)"))
    mean = values.get("mean")
    if mean is not None:
        if "min" in values and _below(mean, values["min"]):
            problems.append(("statistics.min", f"min {values['min']!r} is above mean {mean!r}"))
        if "max" in values and _below(values["max"], mean):
            problems.append(("statistics.max", f"max {values['max']!r} is below mean {mean!r}"))
    std = _number(stats.get("std"))
    if std is not None:
        bound = std_bound({**stats, **values})
        if not math.isfinite(std) or std < 0:
            problems.append(("statistics.std", f"{std!r} is not a standard deviation (needs a finite number ≥ 0)"))
        elif bound is not None and std > bound + _EPSILON * max(bound, 1.0):
            why = (
                "one trial has no spread" if bound == 0.0 and stats.get("num_trials") == 1
                else "it can be at most max − min (+1% of max for rounding)" if "min" in values and "max" in values
                else "positive samples with this mean and count allow at most mean·n/√(n−1)"
            )
            problems.append(("statistics.std", f"std {std!r} is larger than the statistics allow ({bound:.6g}): {why}"))
    if samples:
        numbers = [_number(s) for s in samples]
        for sample, number in zip(samples, numbers):
            refusal = "not a number" if number is None else latency_problem(number)
            if refusal:
                problems.append(("samples_ms", f"sample {sample!r}: {refusal}"))
                return problems
        finite = [v for v in numbers if v is not None]
        n = stats.get("num_trials")
        if isinstance(n, int) and len(finite) != n:
            problems.append(("samples_ms", f"{len(finite)} samples for num_trials {n}"))
        for key, actual in (("min", min(finite)), ("max", max(finite)), ("mean", math.fsum(finite) / len(finite))):
            if key in values and not _agrees(values[key], actual):
                problems.append(("samples_ms", f"the samples' {key} is {actual:.6g}, but statistics.{key} is {values[key]!r}"))
    return problems


def readable(value: float | None, low: float = MIN_LATENCY_MS, high: float = MAX_LATENCY_MS) -> float | None:
    """A stored figure as the read side uses it: a value outside what measurements-v1 allows (left
    by an older version or written past the checks) is held to its bound, so no arithmetic on it
    overflows; None and NaN stay None."""
    if value is None or value != value:
        return None
    return min(max(value, low), high)
