"""Confidence intervals: the pages' ± figures and ratio intervals."""

from __future__ import annotations

import math

import pytest

from kernelindex.rules.display import format_plus_minus
from kernelindex.rules.stats import (
    Interval,
    ci95_half_width,
    mean_interval,
    ratio_interval,
    summary_from_samples,
)


def test_half_width_is_1_96_std_over_root_n():
    assert ci95_half_width(0.5, 4) == pytest.approx(1.96 * 0.5 / 2)
    assert ci95_half_width(2.0, 1) == pytest.approx(3.92)


def test_resnet18_half_width():
    half = ci95_half_width(0.0868, 100)
    assert half == pytest.approx(0.0170128)
    assert round(half, 3) == 0.017
    assert format_plus_minus(half, 1.39) == "± 0.02"


def test_vgg19_half_width():
    half = ci95_half_width(0.0107, 100)
    assert half == pytest.approx(0.0020972)
    assert format_plus_minus(half, 2.43) == "± 0.00"


@pytest.mark.parametrize("std, n", [(None, 100), (0.1, None), (None, None), (0.1, 0)])
def test_half_width_unknown(std, n):
    assert ci95_half_width(std, n) is None


def test_zero_std_gives_zero_half_width():
    assert ci95_half_width(0.0, 10) == 0.0


def test_mean_interval():
    iv = mean_interval(1.39, 0.0868, 100)
    assert iv.low == pytest.approx(1.39 - 0.0170128)
    assert iv.high == pytest.approx(1.39 + 0.0170128)
    assert iv.contains(1.39)
    assert not iv.contains(1.42)


def test_mean_interval_without_spread_is_a_point():
    assert mean_interval(2.5, None, 10) == Interval(2.5, 2.5)
    assert mean_interval(2.5, 0.1, None) == Interval(2.5, 2.5)


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
    # var = (0.1/1)^2/4 + (0.2/2)^2/4 = 0.005; spread = 1.959964·sqrt(0.005)
    iv = ratio_interval((1.0, 0.1, 4), (2.0, 0.2, 4))
    spread = 1.959963984540054 * math.sqrt(0.005)
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


def test_interval_touching_one_contains_it():
    # 1.98 − 1.96·1/√4 lands on 1.00 exactly: a boundary that counts as inside.
    iv = mean_interval(1.98, 1.0, 4)
    assert iv.low == 1.0
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
