"""How values are written for people, and how derived numbers are returned for computing.

display-v1, the one place these rules live (every display string in the API is built from them):
- latencies: two decimals from 1 ms up, three significant figures below (`format_latency`);
  durations in ns, µs, ms or s with three significant figures (`format_duration_ns`); ratios with
  two decimals and "×"; counts with thousands separators; dates as ISO dates;
- "± 0.02": the 95% half width to as many decimals as the latency it qualifies, so a half width
  under half a unit of the last decimal reads "± 0.00" (the reference pages show it so: the
  interval is narrower than the latency's own rounding);
- "± 0.0041 ms": the same half width to two significant figures, in its own unit
  (`half_width_display`), for a reader who wants the interval itself rather than the page's notation;
- percentages with one decimal, never "-0.0%"; a change that rounds to zero but is not zero reads
  "under 0.1% faster" (or slower), no change at all "the same time" (`format_change`); a signed
  difference "+4.1%" or "-4.3%", "0.0%" when it rounds to zero (`format_signed_percent`);
- "mean of 100" (`format_statistic`);
- a field's value as text (`format_value`): absent is None (null in the API, never "None"),
  bindings "batch_size=2, seq_len=128" (axes by name, the `--set` syntax; "no bindings"), a truth
  value "yes"/"no", a number as `format_number` writes it; never a Python repr (a page's
  configuration line writes bindings "batch_size = 2", the same rule with a spaced sign);
- numbers for computing are the raw figures: stored measurements as stored, derived ones (intervals,
  ratios, percentages) with `computed`: 12 significant figures, more than any measurement carries,
  so binary noise (1.3729871999999999) is dropped and nothing a computation needs is lost.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import date, datetime

from kernelindex.rules.numbers import SIGNIFICANT_DIGITS, significant
from kernelindex.rules.stats import ci95_half_width, no_interval_reason

DISPLAY_VERSION = "display-v1"
# Significant figures of a derived number returned for computing (kernelindex.rules.numbers says why).
COMPUTED_DIGITS = SIGNIFICANT_DIGITS


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


def format_figure(value: float, unit: str) -> str:
    """A headline figure in its unit: a latency as format_latency writes it ('0.0123 ms'); peak memory
    ('1,234.5 MB') and a score ('1.005e-05 s') to four significant figures."""
    if unit == "ms":
        return format_latency(value)
    if unit == "MB":
        return f"{value:,.1f} MB" if value >= 100 else f"{value:.4g} MB"
    return f"{value:.4g} {unit}"


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


def format_half_width(half_width_ms: float) -> str:
    """'± 0.0041 ms': a 95% half width to two significant figures (decided after rounding, so
    0.00996 reads 0.010), however narrow it is next to its latency; '± 0 ms' for none at all."""
    if half_width_ms <= 0:
        return "± 0 ms"
    rounded = float(f"{half_width_ms:.2g}")
    decimals = max(0, 1 - math.floor(math.log10(rounded)))
    return f"± {rounded:.{decimals}f} ms"


def half_width_display(std_ms: float | None, n: int | None) -> str:
    """'± 0.0041 ms' (stats-v2's 95% half width, two significant figures), or why there is none."""
    reason = no_interval_reason(std_ms, n)
    if reason is not None:
        return reason
    half_width = ci95_half_width(std_ms, n)
    assert half_width is not None  # a mean with no reason to lack one has an interval
    return format_half_width(half_width)


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


def computed(x: float) -> float:
    """A derived number as the API returns it for computing: 12 significant figures, so that
    1.39 − 0.0170128 is 1.3729872 and not 1.3729871999999999 (binary noise), and nothing else is
    lost: numbers-v1 (kernelindex.rules.numbers), which GraphQL's Float and runs.csv apply too."""
    return significant(x, COMPUTED_DIGITS)


def computed_or_none(x: float | None) -> float | None:
    return None if x is None else computed(x)


def format_percent(percent: float, decimals: int = 1) -> str:
    """'4.1%'; a value that rounds to zero is '0.0%', never '-0.0%'."""
    text = f"{percent:.{decimals}f}"
    if float(text) == 0:
        text = f"{0:.{decimals}f}"
    return f"{text}%"


def format_change(percent: float, better: str = "faster", worse: str = "slower") -> str:
    """A relative change in words: positive is `better` ('4.1% faster'), negative `worse` ('4.3%
    slower'); under half the last decimal but not zero 'under 0.1% faster'; zero 'the same time'."""
    if percent == 0:
        return "the same time"
    word = better if percent > 0 else worse
    size = abs(percent)
    if size < 0.05:
        return f"under 0.1% {word}"
    return f"{format_percent(size)} {word}"


def format_bindings(bindings: Mapping[str, int], equals: str = "=", none: str = "no bindings") -> str:
    """'batch_size=2, seq_len=128': a configuration's axes by name, as `--set` takes them; `none` for no
    axes. A page's configuration line spaces the sign: equals=" = " gives 'batch_size = 2'."""
    return ", ".join(f"{axis}{equals}{value}" for axis, value in sorted(bindings.items())) or none


def format_signed_percent(percent: float) -> str:
    """'+4.1%' / '-4.3%' (a difference against a reference figure); '0.0%' when it rounds to zero,
    never '-0.0%' or '+0.0%'."""
    text = format_percent(percent)
    return text if text == format_percent(0) or text.startswith("-") else f"+{text}"


def format_statistic(statistic: str, trials: int | None) -> str:
    """'mean of 100'; the statistic alone when the number of trials is not known."""
    return statistic if trials is None else f"{statistic} of {trials}"


def format_number(x: int | float) -> str:
    """A number as text without float noise: 2 → '2', 2.0 → '2', 2.5 → '2.5', 1.3729871999999999 →
    '1.3729872' (12 significant figures, as `computed`)."""
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    if not math.isfinite(x):
        return "not a number" if math.isnan(x) else ("infinite" if x > 0 else "minus infinite")
    value = computed(x)
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:.{COMPUTED_DIGITS}g}"


def format_value(value: object) -> str | None:
    """A field's value as text for people: None stays None (null in the API), a mapping of axes is
    `format_bindings`, a truth value 'yes'/'no', a number `format_number`, text as it is. Anything
    else is a programming error: a Python repr must never reach a client."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return format_bindings(value)
    if isinstance(value, (bool, int, float)):
        return format_number(value)
    raise TypeError(f"no display rule for a {type(value).__name__}")
