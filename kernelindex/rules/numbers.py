"""numbers-v1: how a number the API returns for computing is rounded, the one rule for every route.

A double carries 15 to 17 significant digits, the last of which are the noise of binary arithmetic
(1.39 − 0.0170128 is 1.3729871999999999); no measurement carries more than about 7. So every float
the API returns (GraphQL's Float, and with it the JSON twins; runs.csv) goes through `significant`:
12 significant figures, which drops the noise and nothing a computation needs.

- A value with at most 12 significant digits is returned unchanged (1.39 stays 1.39: the 12-digit
  rounding of the double nearest 1.39 is 1.39 again), so a stored measurement reads as stored.
- A whole number below 2**53 is returned unchanged: it is exact, not noisy, and is a count (bytes,
  FLOPs: 2**40 FLOPs stays 1099511627776, not 1099511627780).
- Zero is 0.0 (-0.0 too: a sign on nothing is noise as well).
- NaN and the infinities are returned as they are: they have no digits to round, and whoever writes
  them decides (GraphQL refuses them, as its Float allows only finite values).
- Ints (and bools) are not floats and are returned unchanged.
"""

from __future__ import annotations

import math
from decimal import ROUND_DOWN, Context

NUMBERS_VERSION = "numbers-v1"

# Significant figures of a number returned for computing (see the module's rule).
SIGNIFICANT_DIGITS = 12
# Every whole number up to this magnitude is a double exactly; above it whole doubles are as coarse
# as the binary format, not counts.
EXACT_WHOLE_LIMIT = 2.0**53


def significant(x: float, digits: int = SIGNIFICANT_DIGITS) -> float:
    """`x` to `digits` significant figures (1 to 17), by the module's rule."""
    if not 1 <= digits <= 17:
        raise ValueError(f"digits must be 1 to 17, got {digits}")
    if not isinstance(x, float):
        return x  # an int is exact; an int subclass (bool) is not a number to round either
    if not math.isfinite(x):
        return x
    if x == 0:
        return 0.0
    if x.is_integer() and abs(x) < EXACT_WHOLE_LIMIT:
        return x
    rounded = float(f"{x:.{digits}g}")
    if math.isinf(rounded):
        # Only the largest doubles round up past the largest finite one: cut the digits off instead.
        rounded = float(Context(prec=digits, rounding=ROUND_DOWN).create_decimal(x))
    return rounded


def significant_or_none(x: float | None, digits: int = SIGNIFICANT_DIGITS) -> float | None:
    return None if x is None else significant(x, digits)

