"""How numbers are written for people. Raw numbers travel beside these strings in the API."""

from __future__ import annotations

import math
from datetime import date, datetime


def latency_decimals(ms: float) -> int:
    """Two decimals from 1 ms up; three significant figures below."""
    if ms >= 1 or ms <= 0:
        return 2
    return 2 - math.floor(math.log10(ms))


def format_ms(ms: float, decimals: int | None = None) -> str:
    return f"{ms:.{latency_decimals(ms) if decimals is None else decimals}f}"


def format_latency(ms: float) -> str:
    return f"{format_ms(ms)} ms"


def format_plus_minus(half_width_ms: float | None, like_ms: float) -> str | None:
    """'± 0.02', written to as many decimals as the latency it qualifies."""
    if half_width_ms is None:
        return None
    return f"± {half_width_ms:.{latency_decimals(like_ms)}f}"


def format_duration_ns(ns: float) -> str:
    """Three significant figures in the largest unit that keeps the number at or above 1."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{_three_significant(ns / scale)} {unit}"
    return f"{_three_significant(ns)} ns"


def _three_significant(x: float) -> str:
    if x == 0:
        return "0"
    digits = max(0, 2 - math.floor(math.log10(abs(x))))
    rounded = round(x, digits)
    if rounded >= 10 ** (3 - digits) and digits > 0:  # 9.996 → 10.0 keeps three figures
        digits -= 1
    return f"{x:.{digits}f}"


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
