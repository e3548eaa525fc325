"""stats-v2 confidence intervals: Student's t, the pages' ± figures, no interval for one trial, ratio intervals."""

from __future__ import annotations

import math

import pytest

from kernelindex.rules.display import format_plus_minus, plus_minus_display
from kernelindex.rules.stats import (
    NO_SPREAD,
    ONE_TRIAL,
    STATS_VERSION,
    Interval,
    ci95_half_width,
    mean_interval,
    no_interval_reason,
    ratio_interval,
    regularized_incomplete_beta,
    summary_from_samples,
    t_95,
    t_cdf,
    t_quantile,
)

T_99 = 1.9842169515859496  # t(0.975, 99), the reference pages' 100 trials


def test_version():
    assert STATS_VERSION == "stats-v2"


# --- Student's t ------------------------------------------------------------------------------


@pytest.mark.parametrize("df, expected", [(1, 12.706), (2, 4.303), (3, 3.182), (4, 2.776), (9, 2.262), (29, 2.045), (99, 1.984)])
def test_t_975_against_the_tables(df, expected):
    assert round(t_quantile(0.975, df), 3) == expected


def test_t_quantile_closed_forms():
    # df 1 is Cauchy: tan(π(p − ½)); df 2: (2p − 1)·√(2 / (4p(1 − p))).
    for p in (0.6, 0.9, 0.975, 0.995):
        assert t_quantile(p, 1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-9)
        assert t_quantile(p, 2) == pytest.approx((2 * p - 1) * math.sqrt(2 / (4 * p * (1 - p))), rel=1e-9)


def test_t_quantile_tends_to_the_normal():
    assert t_95(1e7) == pytest.approx(1.959964, abs=1e-5)
    assert t_95(1000) == pytest.approx(1.962339, abs=1e-6)
    assert t_95(99) == pytest.approx(T_99, abs=1e-9)


def test_t_quantile_is_symmetric_and_inverts_the_cdf():
    assert t_quantile(0.5, 5) == 0.0
    assert t_quantile(0.025, 9) == pytest.approx(-t_quantile(0.975, 9))
    for df in (1, 3, 7.5, 40):
        for p in (0.55, 0.8, 0.975, 0.9995):
            assert t_cdf(t_quantile(p, df), df) == pytest.approx(p, abs=1e-10)


def test_t_quantile_refuses_nonsense():
    for p, df in ((0.0, 5), (1.0, 5), (0.975, 0), (0.975, -1)):
        with pytest.raises(ValueError):
            t_quantile(p, df)
    with pytest.raises(ValueError):
        t_cdf(1.0, 0)


def test_regularized_incomplete_beta_by_hand():
    # I_x(1, 1) = x; I_x(2, 1) = x²; I_x(1, 2) = 1 − (1 − x)²; the ends are 0 and 1.
    assert regularized_incomplete_beta(1, 1, 0.3) == pytest.approx(0.3)
    assert regularized_incomplete_beta(2, 1, 0.3) == pytest.approx(0.09)
    assert regularized_incomplete_beta(1, 2, 0.3) == pytest.approx(1 - 0.49)
    assert regularized_incomplete_beta(3, 4, 0.0) == 0.0 and regularized_incomplete_beta(3, 4, 1.0) == 1.0


# --- half widths ------------------------------------------------------------------------------


def test_half_width_is_t_std_over_root_n():
    assert ci95_half_width(0.5, 4) == pytest.approx(3.182446 * 0.5 / 2, abs=1e-6)
    assert ci95_half_width(2.0, 2) == pytest.approx(12.706205 * 2.0 / math.sqrt(2), abs=1e-5)
    assert ci95_half_width(0.3, 10) == pytest.approx(2.262157 * 0.3 / math.sqrt(10), abs=1e-6)


def test_few_trials_are_wider_than_the_normal_said():
    for n in (2, 3, 5, 10, 30, 100):
        half = ci95_half_width(1.0, n)
        assert half is not None and half > 1.96 / math.sqrt(n)


def test_resnet18_half_width():
    # t(0.975, 99)·0.0868/10 = 0.017223 (stats-v1's 1.96 gave 0.017013); both read ± 0.02.
    half = ci95_half_width(0.0868, 100)
    assert half == pytest.approx(T_99 * 0.0868 / 10)
    assert half == pytest.approx(0.017223, abs=1e-6)
    assert format_plus_minus(half, 1.39) == "± 0.02"
    assert format_plus_minus(1.96 * 0.0868 / 10, 1.39) == "± 0.02"


def test_vgg19_half_width():
    # 0.002123 (stats-v1: 0.002097): ± 0.00 either way.
    half = ci95_half_width(0.0107, 100)
    assert half == pytest.approx(0.0021231, abs=1e-7)
    assert format_plus_minus(half, 2.43) == "± 0.00"


@pytest.mark.parametrize("std, n", [(None, 100), (0.1, None), (None, None), (0.1, 0), (0.1, 1), (0.0, 1), (None, 1)])
def test_half_width_unknown(std, n):
    assert ci95_half_width(std, n) is None


def test_one_trial_has_no_interval_and_says_so():
    assert no_interval_reason(0.1, 1) == ONE_TRIAL == "one trial: no interval"
    assert no_interval_reason(None, 1) == ONE_TRIAL
    assert no_interval_reason(None, 100) == NO_SPREAD == "no spread reported: no interval"
    assert no_interval_reason(0.1, None) == NO_SPREAD
    assert no_interval_reason(0.1, 0) == NO_SPREAD
    assert no_interval_reason(0.0, 2) is None
    assert plus_minus_display(0.1, 1, 1.39) == "one trial: no interval"
    assert plus_minus_display(None, 100, 1.39) == "no spread reported: no interval"
    assert plus_minus_display(0.0868, 100, 1.39) == "± 0.02"


def test_zero_std_gives_zero_half_width():
    assert ci95_half_width(0.0, 10) == 0.0


def test_mean_interval():
    iv = mean_interval(1.39, 0.0868, 100)
    assert iv.low == pytest.approx(1.39 - 0.017223, abs=1e-6)
    assert iv.high == pytest.approx(1.39 + 0.017223, abs=1e-6)
    assert iv.contains(1.39)
    assert not iv.contains(1.42)


def test_mean_interval_without_spread_is_a_point():
    # Only where ranking must place the mean; the words are no_interval_reason's.
    assert mean_interval(2.5, None, 10) == Interval(2.5, 2.5)
    assert mean_interval(2.5, 0.1, None) == Interval(2.5, 2.5)
    assert mean_interval(2.5, 0.1, 1) == Interval(2.5, 2.5)


def test_summary_from_samples_by_hand():
    # mean 5; deviations -3,-1,1,3 → squares 9,1,1,9 = 20; sample variance 20/3.
    mean, std, n = summary_from_samples([2.0, 4.0, 6.0, 8.0])
    assert mean == pytest.approx(5.0)
    assert std == pytest.approx(math.sqrt(20 / 3))
    assert n == 4


def test_summary_from_samples_uneven():
    # mean 2; deviations -1,-1,2 → 1+1+4 = 6; /2 = 3.
    mean, std, n = summary_from_samples([1.0, 1.0, 4.0])
    assert (mean, n) == (pytest.approx(2.0), 3)
    assert std == pytest.approx(math.sqrt(3))


def test_summary_from_one_sample_has_zero_std():
    assert summary_from_samples([1.25]) == (1.25, 0.0, 1)


def test_summary_from_constant_samples():
    mean, std, n = summary_from_samples([0.5] * 7)
    assert (mean, std, n) == (pytest.approx(0.5), pytest.approx(0.0), 7)


def test_ratio_interval_contains_the_point_ratio():
    iv = ratio_interval((3.88, 0.0234, 100), (2.43, 0.0107, 100))
    point = 3.88 / 2.43
    assert iv.contains(point)
    assert iv.low < point < iv.high
    assert iv.low > 1.0


def test_ratio_interval_by_hand():
    # var = (0.1/1)^2/4 + (0.2/2)^2/4 = 0.0025 + 0.0025 = 0.005; Welch–Satterthwaite
    # df = 0.005² / (0.0025²/3 + 0.0025²/3) = 6; spread = t(0.975, 6)·sqrt(0.005) = 2.446912·0.070711
    iv = ratio_interval((1.0, 0.1, 4), (2.0, 0.2, 4))
    spread = 2.446911851 * math.sqrt(0.005)
    assert iv.low == pytest.approx(0.5 * math.exp(-spread))
    assert iv.high == pytest.approx(0.5 * math.exp(spread))


def test_ratio_interval_narrows_as_n_grows():
    widths = []
    for n in (4, 16, 100, 10_000):
        iv = ratio_interval((1.5, 0.1, n), (1.2, 0.1, n))
        assert iv.contains(1.5 / 1.2)
        widths.append(iv.high - iv.low)
    assert widths == sorted(widths, reverse=True)
    assert len(set(widths)) == len(widths)


def test_ratio_interval_widens_with_confidence():
    a = ratio_interval((1.5, 0.1, 10), (1.2, 0.1, 10), confidence=0.90)
    b = ratio_interval((1.5, 0.1, 10), (1.2, 0.1, 10), confidence=0.99)
    assert b.low < a.low and a.high < b.high


def test_ratio_interval_without_spread_is_the_point():
    assert ratio_interval((2.0, None, None), (2.0, None, 10)) == Interval(1.0, 1.0)
    assert ratio_interval((3.0, 0.5, 0), (1.5, None, None)) == Interval(2.0, 2.0)
    assert ratio_interval((3.0, 0.5, 1), (1.5, 0.1, 1)) == Interval(2.0, 2.0)


def test_ratio_interval_with_one_side_noisy_uses_that_sides_degrees_of_freedom():
    # only the numerator varies: df = n − 1 = 9, t = 2.262157; var = (0.1/1)²/10 = 0.001
    iv = ratio_interval((1.0, 0.1, 10), (1.0, None, None))
    spread = 2.262157163 * math.sqrt(0.001)
    assert iv.low == pytest.approx(math.exp(-spread)) and iv.high == pytest.approx(math.exp(spread))


def test_interval_touching_one_contains_it():
    iv = Interval(1.0, 1.5)
    assert iv.contains(1.0)
    assert Interval(1.0, 1.2).contains(1.0)
    assert Interval(0.8, 1.0).contains(1.0)
    assert Interval(1.0, 1.0).contains(1.0)
    assert not Interval(1.0000001, 1.2).contains(1.0)
    assert ratio_interval((2.0, None, None), (2.0, None, None)).contains(1.0)


def test_interval_overlap_is_inclusive():
    assert Interval(1.0, 2.0).overlaps(Interval(2.0, 3.0))
    assert Interval(2.0, 3.0).overlaps(Interval(1.0, 2.0))
    assert Interval(1.0, 3.0).overlaps(Interval(1.5, 2.0))
    assert not Interval(1.0, 1.9).overlaps(Interval(2.0, 3.0))
