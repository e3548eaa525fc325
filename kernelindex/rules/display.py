"""How numbers are written for people. Raw numbers travel beside these strings in the API."""

from __future__ import annotations

import math
from datetime import date, datetime

from kernelindex.rules.stats import ci95_half_width, no_interval_reason


def latency_decimals(ms: float) -> int:
    """Two decimals from 1 ms up; three significant figures below (decided after rounding, so
    0.9996 ms reads 1.00, not 1.000)."""
    if ms <= 0:
        return 2
    rounded = float(f"{ms:.3g}")
    if rounded >= 1:
        return 2
    return 2 - math.floor(math.log10(rounded))


def format_ms(ms: float, decimals: int | None = None) -> str:
    return f"{ms:.{latency_decimals(ms) if decimals is None else decimals}f}"


def format_latency(ms: float) -> str:
    return f"{format_ms(ms)} ms"


def format_plus_minus(half_width_ms: float | None, like_ms: float) -> str | None:
    """'± 0.02', written to as many decimals as the latency it qualifies."""
    if half_width_ms is None:
        return None
    return f"± {half_width_ms:.{latency_decimals(like_ms)}f}"


def plus_minus_display(std_ms: float | None, n: int | None, like_ms: float) -> str:
    """'± 0.02' (stats-v2's 95% half width), or why there is none: 'one trial: no interval'."""
    reason = no_interval_reason(std_ms, n)
    if reason is not None:
        return reason
    text = format_plus_minus(ci95_half_width(std_ms, n), like_ms)
    assert text is not None  # a mean with no reason to lack one has an interval
    return text


def format_duration_ns(ns: float) -> str:
    """Three significant figures in the largest unit that keeps the number at or above 1.

    Rounded before the unit is chosen, so 999.6 ns reads 1.00 µs, not 1000 ns.
    """
    rounded = float(f"{ns:.3g}")
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if rounded >= scale:
            return f"{_three_significant(rounded / scale)} {unit}"
    return f"{_three_significant(rounded)} ns"


def _three_significant(x: float) -> str:
    if x == 0:
        return "0"
    rounded = float(f"{x:.3g}")
    digits = max(0, 2 - math.floor(math.log10(abs(rounded))))
    return f"{rounded:.{digits}f}"


def format_ratio(ratio: float) -> str:
    return f"{ratio:.2f}×"


def format_count(n: int | float) -> str:
    return f"{n:,.0f}"


def format_date(value: date | datetime | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        value = value.date()
    return value.isoformat()


def plural(n: int, singular: str, plural_form: str | None = None) -> str:
    return f"{n} {singular if n == 1 else (plural_form or singular + 's')}"
