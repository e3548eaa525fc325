"""numbers-v1: 12 significant figures for every number the API returns, and nothing else changed."""

from __future__ import annotations

import math
import random
import sys
from decimal import Decimal

import pytest

from kernelindex.rules.numbers import SIGNIFICANT_DIGITS, significant, significant_or_none


def digits_of(x: float) -> int:
    """Significant digits of the shortest text that reads back as x (independent of the rule)."""
    return len(Decimal(repr(x)).normalize().as_tuple().digits)


@pytest.mark.parametrize(
    "noisy, clean",
    [
        # The figures of issue 26, as the API returned them.
        (0.017223003139766043, 0.0172230031398),  # ciHalfWidthMs
        (1.372776996860234, 1.37277699686),  # intervalMs
        (1.0935251798561152, 1.09352517986),  # vsFirst
        (16410621.310089553, 16410621.3101),  # floorNs
        (1.39 - 0.0170128, 1.3729872),
        (0.1 + 0.2, 0.3),
        (-(0.1 + 0.2), -0.3),
        (2.384185791015625e-07, 2.38418579102e-07),
        (1.0000000000000002, 1.0),
    ],
)
def test_binary_noise_is_dropped(noisy, clean):
    assert significant(noisy) == clean
    assert repr(significant(noisy)) == repr(clean)
    assert digits_of(significant(noisy)) <= SIGNIFICANT_DIGITS
    assert abs(significant(noisy) - noisy) <= abs(noisy) * 5e-12  # half a unit in the 12th figure


@pytest.mark.parametrize("stated", [1.39, 0.0868, 36.8, 1e-06, 86_400_000.0, 123456.789012, 9.99999999999e-300, 0.1, 7.0])
def test_a_figure_of_twelve_digits_or_fewer_is_unchanged(stated):
    assert significant(stated) == stated
    assert repr(significant(stated)) == repr(stated)


def test_no_value_of_twelve_digits_or_fewer_changes_at_random():
    # The claim the exports rely on for stored figures, over every magnitude a double has.
    rng = random.Random(26)
    for _ in range(20_000):
        digits = rng.randint(1, SIGNIFICANT_DIGITS)
        mantissa = rng.randrange(10 ** (digits - 1), 10**digits)
        x = float(f"{mantissa}e{rng.randint(-300, 290)}")
        assert significant(x) == x, x


def test_every_result_has_at_most_twelve_digits_at_random():
    rng = random.Random(8)
    for _ in range(20_000):
        x = rng.uniform(-1, 1) * 10 ** rng.uniform(-300, 300)
        y = significant(x)
        assert digits_of(y) <= SIGNIFICANT_DIGITS or (y.is_integer() and abs(y) < 2**53), x
        assert significant(y) == y  # rounding twice is rounding once


def test_whole_numbers_are_counts_and_stay_exact():
    assert significant(float(2**40)) == 1099511627776.0  # 1.0995e12 FLOPs, not 1099511627780
    assert significant(float(2**53 - 1)) == 2**53 - 1
    assert significant(3.0) == 3.0
    # Above 2**53 a whole double is as coarse as the format, not a count: rounded like any other.
    assert significant(2.0**60) == 1.15292150461e18


def test_zero_has_no_sign():
    assert repr(significant(0.0)) == repr(significant(-0.0)) == "0.0"


def test_not_finite_is_returned_as_it_is():
    assert math.isnan(significant(math.nan))
    assert significant(math.inf) == math.inf and significant(-math.inf) == -math.inf


def test_ints_and_none():
    assert significant(1234567890123456789) == 1234567890123456789
    assert type(significant(True)) is bool
    assert significant_or_none(None) is None
    assert significant_or_none(0.30000000000000004) == 0.3


def test_fewer_digits_and_the_largest_doubles():
    assert significant(0.017223003139766043, 2) == 0.017
    assert significant(-1234.5, 3) == -1230.0
    # Rounding up past the largest double would be infinite: the digits are cut off instead.
    assert significant(sys.float_info.max, 1) == 1e308
    assert significant(-sys.float_info.max, 2) == -1.7e308
    assert significant(sys.float_info.max) == 1.79769313486e308
    assert significant(5e-324) == 5e-324  # the smallest double keeps its one figure


@pytest.mark.parametrize("digits", [0, 18, -1])
def test_digits_out_of_range_are_refused(digits):
    with pytest.raises(ValueError, match="digits must be 1 to 17"):
        significant(1.5, digits)
