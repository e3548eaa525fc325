"""How numbers are written for people."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from kernelindex.rules.display import (
    format_count,
    format_date,
    format_duration_ns,
    format_latency,
    format_ms,
    format_plus_minus,
    format_ratio,
    plural,
)


@pytest.mark.parametrize(
    "ms, text",
    [
        (1.39, "1.39 ms"),
        (1.0, "1.00 ms"),
        (2.4349, "2.43 ms"),
        (12.3451, "12.35 ms"),
        (123.4, "123.40 ms"),
        (0.1234, "0.123 ms"),
        (0.01234, "0.0123 ms"),
        (0.5, "0.500 ms"),
        (0.00987, "0.00987 ms"),
    ],
)
def test_format_latency(ms, text):
    assert format_latency(ms) == text


def test_format_latency_just_below_one_ms_rounds_to_three_figures():
    assert format_latency(0.9996) == "1.00 ms"


def test_format_ms_with_explicit_decimals():
    assert format_ms(1.39, 3) == "1.390"
    assert format_ms(0.1234) == "0.123"


def test_format_plus_minus():
    assert format_plus_minus(0.0170128, 1.39) == "± 0.02"
    assert format_plus_minus(0.0020972, 2.43) == "± 0.00"
    assert format_plus_minus(0.00123, 0.1234) == "± 0.001"
    assert format_plus_minus(None, 1.39) is None


@pytest.mark.parametrize(
    "ns, text",
    [
        (359.47, "359 ns"),
        (1797.3, "1.80 µs"),
        (0.5, "0.500 ns"),
        (12.34, "12.3 ns"),
        (9.996, "10.0 ns"),
        (1000.0, "1.00 µs"),
        (25_000.0, "25.0 µs"),
        (1_500_000.0, "1.50 ms"),
        (2.5e9, "2.50 s"),
        (0, "0 ns"),
    ],
)
def test_format_duration_ns(ns, text):
    assert format_duration_ns(ns) == text


@pytest.mark.parametrize("ns, text", [(999.6, "1.00 µs"), (999_999.6, "1.00 ms")])
def test_format_duration_ns_at_a_unit_boundary(ns, text):
    assert format_duration_ns(ns) == text


@pytest.mark.parametrize(
    "ratio, text",
    [(1.0, "1.00×"), (1.52 / 1.39, "1.09×"), (3.88 / 2.43, "1.60×"), (1.47 / 1.39, "1.06×"), (3866.8055, "3866.81×")],
)
def test_format_ratio(ratio, text):
    assert format_ratio(ratio) == text


def test_format_count():
    assert format_count(1_204_224) == "1,204,224"
    assert format_count(6_021_120) == "6,021,120"
    assert format_count(3350.0) == "3,350"
    assert format_count(0) == "0"
    assert format_count(999) == "999"


def test_plural():
    assert plural(1, "run") == "1 run"
    assert plural(0, "run") == "0 runs"
    assert plural(4, "eligible run") == "4 eligible runs"
    assert plural(2, "child", "children") == "2 children"
    assert plural(1, "child", "children") == "1 child"


def test_format_date():
    assert format_date(None) is None
    assert format_date(date(2026, 3, 5)) == "2026-03-05"
    assert format_date(datetime(2026, 3, 5, 23, 59, tzinfo=UTC)) == "2026-03-05"
