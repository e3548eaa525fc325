"""instants-v1: which observation times are possible, and how stored ones are read.

An observed_at states its UTC offset (a time without one is ambiguous by up to 26 hours), is not
before EARLIEST_OBSERVED (no GPU benchmark in this index predates 2000: CUDA appeared in 2007) and
not after now + MAX_CLOCK_SKEW (a runner's clock may run a little ahead). Stored times are read as
aware UTC whatever they are: PostgreSQL's ±infinity (which a year-1 or year-9999 instant becomes on
its way through asyncpg) comes back as a naive datetime.min/max, and a naive time must never reach
an aware subtraction."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

INSTANTS_VERSION = "instants-v1"
EARLIEST_OBSERVED = datetime(2000, 1, 1, tzinfo=UTC)
MAX_CLOCK_SKEW = timedelta(minutes=5)


def as_utc(value: datetime) -> datetime:
    """The instant in UTC; a naive value is taken as UTC (how the database's ±infinity reads back)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def age(observed_at: datetime, now: datetime) -> timedelta:
    """now − observed_at without overflow: clamped to ±timedelta.max for the extreme ends."""
    try:
        return as_utc(now) - as_utc(observed_at)
    except OverflowError:
        return timedelta.max if as_utc(observed_at) < as_utc(now) else -timedelta.max
