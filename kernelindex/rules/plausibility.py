"""Runs too good to be true are held for review before they can hold a record.

plausibility-v2 (plausibility-v1 held every run under its floor, the source's baseline included):
- the source's designated baseline is never flagged: it is the reference every speedup is measured
  against, the figure the source itself stands behind;
- below_floor: a run whose correctness was not checked passed, with its mean latency under its
  headroom floor (the roofline floor on the run's exact SKU when one is available, else the
  headroom-v1 floor). A run whose correctness check passed is never held for beating a floor:
  a lower bound that a correct run beats is a defect of the floor, reported on the floor
  (kernelindex.rules.headroom_v2.RooflineFloor.defect);
- implausible_speedup: the run is more than 10× faster than its cohort's baseline
  (baseline mean / run mean > 10);
- a flagged run reads "suspicious: needs review" and is kept out of records until reviewed. A
  review is data: the latest review of the run decides; "approved" makes it eligible again,
  "rejected" keeps it out. Without a review a flagged run stays held;
- a stored flag whose reason the current version no longer holds for is kept as history and holds
  nothing: any flag on a baseline, a below_floor flag on a correct run, and every below_floor flag
  raised by plausibility-v1 (judged against headroom-v2's floor, which real runs beat: the next
  refresh of its cohort judges the run against the current floor again).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from kernelindex.rules.display import format_duration_ns, format_figure, format_ratio, plural
from kernelindex.rules.facts import RunFacts
from kernelindex.rules.headroom_v2 import ROOFLINE_VERSION

PLAUSIBILITY_VERSION = "plausibility-v2"
# Versions whose below_floor flags hold nothing now: they were judged against an older floor.
STALE_FLOOR_VERSIONS = frozenset({"plausibility-v1"})

SUSPICIOUS = "suspicious: needs review"
MAX_PLAUSIBLE_SPEEDUP = 10.0

BELOW_FLOOR = "below_floor"
IMPLAUSIBLE_SPEEDUP = "implausible_speedup"
FLAG_WORDS = {
    BELOW_FLOOR: "faster than its estimated floor",
    IMPLAUSIBLE_SPEEDUP: "more than 10× faster than the baseline",
}
# The reasons in a page's count of held runs: '1 faster run held for review: implausible speedup'.
REASON_WORDS = {
    BELOW_FLOOR: "below its estimated floor",
    IMPLAUSIBLE_SPEEDUP: "implausible speedup",
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
    rule_version: str = PLAUSIBILITY_VERSION  # the version that raised it (a stored flag keeps its own)


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
    """(floor in ns, method) to judge a run by: the roofline (headroom-v3) on its SKU when available, else v1."""
    if v2_floor_ns is not None:
        return v2_floor_ns, ROOFLINE_VERSION
    if v1_floor_ns is not None:
        return v1_floor_ns, "headroom-v1"
    return None, None


def flag_holds(
    code: str, is_baseline: bool, correctness_passed: bool | None, rule_version: str = PLAUSIBILITY_VERSION
) -> bool:
    """Whether a flag with this code, raised by `rule_version`, holds a run under plausibility-v2:
    never the source's baseline; below_floor only a run whose correctness check did not pass (a floor
    that a correct run beats is the floor's defect), and only when raised against the current floor."""
    if is_baseline:
        return False
    if code != BELOW_FLOOR:
        return True
    return correctness_passed is not True and rule_version not in STALE_FLOOR_VERSIONS


def is_current(flag: Flag) -> bool:
    """Whether a stored flag was judged under the current rules (a refresh raises a stale one again,
    against the current floor, if the run still earns it)."""
    return not (flag.code == BELOW_FLOOR and flag.rule_version in STALE_FLOOR_VERSIONS)


def holds_for_floor(run: RunFacts) -> bool:
    """Whether beating a floor can hold this run (flag_holds for below_floor)."""
    return flag_holds(BELOW_FLOOR, run.implementation.is_baseline, run.correctness_passed)


def flags_for(run: RunFacts, cohort_baseline: RunFacts | None, floor_ns: float | None) -> list[Flag]:
    """The reasons to doubt a run, in the order below_floor, implausible_speedup; empty when none,
    and always empty for the source's designated baseline."""
    flags: list[Flag] = []
    if run.figure is None or run.implementation.is_baseline:
        return flags
    run_ns = run.figure * 1e6
    # A floor is a latency: only a latency figure can beat it.
    latency = run.protocol.metric == "latency"
    if latency and floor_ns is not None and floor_ns > 0 and run_ns < floor_ns and holds_for_floor(run):
        flags.append(Flag(
            run.id, BELOW_FLOOR, FLAG_WORDS[BELOW_FLOOR],
            f"{format_duration_ns(run_ns)} is below the estimated floor of {format_duration_ns(floor_ns)}",
        ))
    if (
        cohort_baseline is not None
        and cohort_baseline.id != run.id
        and cohort_baseline.figure is not None
        and run.figure > 0
    ):
        speedup = cohort_baseline.figure / run.figure
        if speedup > MAX_PLAUSIBLE_SPEEDUP:
            flags.append(Flag(
                run.id, IMPLAUSIBLE_SPEEDUP, FLAG_WORDS[IMPLAUSIBLE_SPEEDUP],
                f"{format_figure(run.figure, run.protocol.unit)} is {format_ratio(speedup)} "
                f"{'faster' if latency else 'better'} than the baseline's {format_figure(cohort_baseline.figure, run.protocol.unit)}",
            ))
    return flags


def holding_flags(run: RunFacts, flags: Iterable[Flag]) -> list[Flag]:
    """The stored flags that still hold this run under plausibility-v2: none for the source's
    baseline; a below_floor flag only while beating a floor can hold the run (holds_for_floor)."""
    return [f for f in flags if flag_holds(f.code, run.implementation.is_baseline, run.correctness_passed, f.rule_version)]


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


@dataclass(frozen=True)
class HeldRun:
    """A run held for review, as a page counts it: its reasons, and whether it is faster than the
    record shown for its cohort (or its cohort shows none)."""

    run_id: int
    codes: tuple[str, ...]
    faster: bool


def held_summary(held: Iterable[HeldRun]) -> str | None:
    """'1 faster run held for review: implausible speedup'; '2 runs held for review: implausible
    speedup'; '1 faster run and 1 other held for review: …'. None when nothing is held. The reasons,
    each once, in the order the flags are raised."""
    held = list(held)
    if not held:
        return None
    faster = sum(1 for h in held if h.faster)
    others = len(held) - faster
    codes = {c for h in held for c in h.codes}
    reasons = ", ".join(REASON_WORDS.get(c, c) for c in (BELOW_FLOOR, IMPLAUSIBLE_SPEEDUP) if c in codes)
    reasons += "".join(f", {c}" for c in sorted(codes - set(REASON_WORDS)))
    if faster and others:
        who = f"{plural(faster, 'faster run')} and {plural(others, 'other')}"
    elif faster:
        who = plural(faster, "faster run")
    else:
        who = plural(others, "run")
    return f"{who} held for review: {reasons}"
