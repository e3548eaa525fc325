"""Runs too good to be true are held for review before they can hold a record.

plausibility-v1:
- below_floor: the run's mean latency is under its headroom floor (the headroom-v2 floor on the
  run's exact SKU when one is available, else the headroom-v1 floor);
- implausible_speedup: the run is more than 10× faster than its cohort's baseline
  (baseline mean / run mean > 10);
- a flagged run reads "suspicious: needs review" and is kept out of records until reviewed. A
  review is data: the latest review of the run decides; "approved" makes it eligible again,
  "rejected" keeps it out. Without a review a flagged run stays held.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from kernelindex.rules.display import format_duration_ns, format_latency, format_ratio
from kernelindex.rules.facts import RunFacts

PLAUSIBILITY_VERSION = "plausibility-v1"

SUSPICIOUS = "suspicious: needs review"
MAX_PLAUSIBLE_SPEEDUP = 10.0

BELOW_FLOOR = "below_floor"
IMPLAUSIBLE_SPEEDUP = "implausible_speedup"
FLAG_WORDS = {
    BELOW_FLOOR: "faster than its estimated floor",
    IMPLAUSIBLE_SPEEDUP: "more than 10× faster than the baseline",
}

APPROVED = "approved"
REJECTED = "rejected"
DECISIONS = (APPROVED, REJECTED)


@dataclass(frozen=True)
class Flag:
    run_id: int
    code: str  # "below_floor" or "implausible_speedup"
    words: str  # 'faster than its estimated floor'
    detail: str  # with the numbers: '10.0 µs is below the estimated floor of 14.7 µs'
    label: str = SUSPICIOUS


@dataclass(frozen=True)
class Review:
    run_id: int
    decision: str  # "approved" or "rejected"
    reviewed_at: datetime | None = None
    reviewer: str | None = None
    note: str | None = None

    def __post_init__(self) -> None:
        if self.decision not in DECISIONS:
            raise ValueError(f"a review decision is 'approved' or 'rejected', not {self.decision!r}")


def floor_for_run(v2_floor_ns: float | None, v1_floor_ns: float | None) -> tuple[float | None, str | None]:
    """(floor in ns, method) to judge a run by: headroom-v2 on its SKU when available, else v1."""
    if v2_floor_ns is not None:
        return v2_floor_ns, "headroom-v2"
    if v1_floor_ns is not None:
        return v1_floor_ns, "headroom-v1"
    return None, None


def flags_for(run: RunFacts, cohort_baseline: RunFacts | None, floor_ns: float | None) -> list[Flag]:
    """The reasons to doubt a run, in the order below_floor, implausible_speedup; empty when none."""
    flags: list[Flag] = []
    if run.mean_ms is None:
        return flags
    run_ns = run.mean_ms * 1e6
    if floor_ns is not None and floor_ns > 0 and run_ns < floor_ns:
        flags.append(Flag(
            run.id, BELOW_FLOOR, FLAG_WORDS[BELOW_FLOOR],
            f"{format_duration_ns(run_ns)} is below the estimated floor of {format_duration_ns(floor_ns)}",
        ))
    if (
        cohort_baseline is not None
        and cohort_baseline.id != run.id
        and cohort_baseline.mean_ms is not None
        and run.mean_ms > 0
    ):
        speedup = cohort_baseline.mean_ms / run.mean_ms
        if speedup > MAX_PLAUSIBLE_SPEEDUP:
            flags.append(Flag(
                run.id, IMPLAUSIBLE_SPEEDUP, FLAG_WORDS[IMPLAUSIBLE_SPEEDUP],
                f"{format_latency(run.mean_ms)} is {format_ratio(speedup)} faster than the baseline's "
                f"{format_latency(cohort_baseline.mean_ms)}",
            ))
    return flags


def latest_review(reviews: Iterable[Review], run_id: int) -> Review | None:
    """The review that decides for a run: the last by review time (ties by given order); reviews
    without a time count as older than any with one and keep their given order."""
    mine = [r for r in reviews if r.run_id == run_id]
    if not mine:
        return None
    timed = [(i, r) for i, r in enumerate(mine) if r.reviewed_at is not None]
    if not timed:
        return mine[-1]
    return max(timed, key=lambda p: (p[1].reviewed_at, p[0]))[1]


def is_held_for_review(flags: Iterable[Flag], reviews: Iterable[Review]) -> bool:
    """True when the run is flagged and its latest review (if any) did not approve it.

    Only reviews of the flagged run count (matched by run id)."""
    flags = list(flags)
    if not flags:
        return False
    if len({f.run_id for f in flags}) > 1:
        raise ValueError("flags of more than one run")
    review = latest_review(reviews, flags[0].run_id)
    return review is None or review.decision != APPROVED


def status_words(flags: Iterable[Flag], reviews: Iterable[Review]) -> str | None:
    """'suspicious: needs review', 'approved after review', 'rejected after review', or None unflagged."""
    flags = list(flags)
    if not flags:
        return None
    review = latest_review(reviews, flags[0].run_id)
    return SUSPICIOUS if review is None else f"{review.decision} after review"
