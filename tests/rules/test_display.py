"""How numbers are written for people."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from kernelindex.rules.compare import compare_runs
from kernelindex.rules.display import (
    DISPLAY_VERSION,
    computed,
    computed_or_none,
    format_bindings,
    format_change,
    format_count,
    format_date,
    format_duration_ns,
    format_half_width,
    format_latency,
    format_ms,
    format_number,
    format_percent,
    format_plus_minus,
    format_ratio,
    format_signed_percent,
    format_statistic,
    format_value,
    half_width_display,
    plural,
    plus_minus_display,
)
from kernelindex.rules.history import NEW_RECORD, RESTORED, EventDraft, improvement_percent, next_events
from tests.rules.factories import environment, hardware, run


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


def test_version():
    assert DISPLAY_VERSION == "display-v1"


# -- the edge cases of issue 18: no Python repr, no float noise, no "-0.0%" ---------------------------

def test_a_restoration_to_the_same_time_does_not_read_minus_zero_percent_slower():
    (event,) = next_events(1, 1.45, [run(2, 1.45)])
    assert event.kind == RESTORED and event.improvement_percent == 0
    assert "-0.0" not in event.words
    assert event.words == "Record holder withdrawn; record restored to 1.45 ms (the same time)."
    # a stored -0.0 (an event written before display-v1) reads the same
    assert EventDraft(RESTORED, 2, 1, -0.0, 1.45, 1.45).words == event.words


def test_a_change_that_rounds_to_zero_says_it_is_under_a_tenth():
    assert EventDraft(RESTORED, 2, 1, -0.04, 1.4506, 1.45).words == (
        "Record holder withdrawn; record restored to 1.45 ms (under 0.1% slower).")
    assert EventDraft(NEW_RECORD, 2, 1, 0.03).words == "New record, under 0.1% faster than the previous record."


@pytest.mark.parametrize(
    "percent, text",
    [(4.1379, "4.1% faster"), (-4.3165, "4.3% slower"), (0.0, "the same time"), (-0.0, "the same time"),
     (0.049, "under 0.1% faster"), (-0.0001, "under 0.1% slower"), (0.05, "0.1% faster"), (-99.95, "100.0% slower")],
)
def test_format_change(percent, text):
    assert format_change(percent) == text


@pytest.mark.parametrize("percent, text", [(-0.04, "0.0%"), (-0.0, "0.0%"), (0.0, "0.0%"), (12.345, "12.3%"), (-1.25, "-1.2%")])
def test_format_percent_never_writes_minus_zero(percent, text):
    assert format_percent(percent) == text


def test_improvement_percent_is_a_number_for_computing_without_binary_noise():
    # (1.45 − 1.40) / 1.45 × 100 is 3.4482758620689684 in binary arithmetic: 12 significant figures
    assert improvement_percent(1.45, 1.40) == 3.44827586207
    assert improvement_percent(1.45, 1.45) == 0.0
    assert str(improvement_percent(1.45, 1.45)) == "0.0"  # not -0.0


@pytest.mark.parametrize(
    "x, clean",
    [(1.39 - 0.0170128, 1.3729872), (1.3729871999999999, 1.3729872), (0.1 + 0.2, 0.3), (-0.0, 0.0),
     (0.002123112138196966, 0.0021231121382), (3866.8055112670068, 3866.80551127), (1e-9, 1e-9), (7.0, 7.0)],
)
def test_computed_drops_binary_noise_and_nothing_a_computation_needs(x, clean):
    assert computed(x) == clean
    assert repr(computed(x)) == repr(clean)
    assert abs(computed(x) - x) <= abs(x) * 1e-11


def test_computed_or_none():
    assert computed_or_none(None) is None
    assert computed_or_none(0.30000000000000004) == 0.3


def test_the_noisy_interval_of_the_issue_is_clean():
    # intervalMs [mean − half width, mean + half width] with the figures of issue 18
    low, high = computed(1.39 - 0.0170128), computed(1.39 + 0.0170128)
    assert (repr(low), repr(high)) == ("1.3729872", "1.4070128")


@pytest.mark.parametrize(
    "value, text",
    [(None, None), ({"batch_size": 2}, "batch_size=2"), ({"seq_len": 128, "batch_size": 2}, "batch_size=2, seq_len=128"),
     ({}, "no bindings"), ("2.6.0", "2.6.0"), (1, "1"), (2.0, "2"), (1.3729871999999999, "1.3729872"), (True, "yes"),
     (False, "no")],
)
def test_format_value_writes_no_python_repr(value, text):
    assert format_value(value) == text


def test_format_value_refuses_what_it_has_no_rule_for():
    with pytest.raises(TypeError, match="no display rule for a list"):
        format_value([1, 2])


def test_format_bindings_and_format_number():
    assert format_bindings({"b": 2, "a": 1}) == "a=1, b=2"
    assert format_number(1e-7) == "1e-07"
    assert format_number(float("nan")) == "not a number"


def test_compare_values_are_text_or_null_never_a_repr():
    env = environment(id=1, hw=hardware(id=1, sku="NVIDIA H100 SXM5 80GB"), torch_version="2.6.0")
    a = run(1, 1.0, env=env, bindings={"batch_size": 2})
    b = run(2, 1.1, env=env, bindings={"batch_size": 10})
    fields = {f.field: f for f in compare_runs([a, b]).fields}
    assert fields["bindings"].texts == ("batch_size=2", "batch_size=10")
    assert fields["triton_version"].texts == (None, None)  # not stated: null, never "None"
    assert fields["torch_version"].texts == ("2.6.0", "2.6.0")
    for f in fields.values():
        for text in f.texts:
            assert text is None or ("None" not in text and "{" not in text and "'" not in text)


def test_a_half_width_under_half_the_last_decimal_reads_zero_as_the_reference_pages_show():
    # VGG19's record, 2.43 ms ± 0.0021 (std 0.0107, 100 trials), reads "± 0.00" on the reference page
    # (../shared/seeds/vgg19_page.txt): the interval is narrower than the latency's own rounding. A
    # 0.0041 ms interval on a 1.52 ms latency reads the same. Kept so, not widened to "± 0.004",
    # because the reference pages must keep reproducing.
    assert plus_minus_display(0.0107, 100, 2.43) == "± 0.00"
    assert format_plus_minus(0.0041, 1.52) == "± 0.00"
    assert format_plus_minus(0.0041, 0.152) == "± 0.004"  # below 1 ms the latency has three figures


def test_format_bindings_styles():
    assert format_bindings({"seq_len": 128, "batch_size": 2}, equals=" = ") == "batch_size = 2, seq_len = 128"
    assert format_bindings({}, none="") == ""


@pytest.mark.parametrize("percent, text", [(4.14, "+4.1%"), (-4.31, "-4.3%"), (-0.04, "0.0%"), (0.04, "0.0%"),
                                           (-0.0, "0.0%"), (0.05, "+0.1%")])
def test_format_signed_percent_never_writes_a_signed_zero(percent, text):
    assert format_signed_percent(percent) == text


def test_format_statistic():
    assert format_statistic("mean", 100) == "mean of 100"
    assert format_statistic("median", None) == "median"


@pytest.mark.parametrize("half_width, text", [
    (0.0041, "± 0.0041 ms"), (0.0020972, "± 0.0021 ms"), (0.0170128, "± 0.017 ms"), (0.00996, "± 0.010 ms"),
    (1.234, "± 1.2 ms"), (12.34, "± 12 ms"), (0.0, "± 0 ms"), (1.3729871999999999e-05, "± 0.000014 ms"),
])
def test_the_half_width_itself_reads_two_significant_figures_however_narrow(half_width, text):
    assert format_half_width(half_width) == text


def test_the_interval_of_the_issue_reads_both_ways():
    # The 0.0041 ms interval of a 1.52 ms record: the page's notation keeps the reference pages'
    # "± 0.00"; the interval itself is there to read too.
    assert format_plus_minus(0.0041, 1.52) == "± 0.00"
    assert format_half_width(0.0041) == "± 0.0041 ms"
    assert half_width_display(0.0107, 100) == "± 0.0021 ms"  # VGG19's record, "± 0.00" on its page
    assert half_width_display(0.01, 1) == plus_minus_display(0.01, 1, 1.0)  # one trial: the same reason, no figure
