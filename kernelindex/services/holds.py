"""Holds: the plausibility flags and reviews of runs, loaded in one place for every reader.

A flagged run is held out of records until its latest review approves it (kernelindex.rules.plausibility
decides, and decides which stored flags still hold: none on the source's baseline, no below_floor on a
run whose correctness check passed). The run's own fields and the refresh of the precomputed records read
flags and reviews through `load_holds`; the workload page's runs bring the same facts as columns of their
own statement (`hold_columns`, decided by `held_of` as `with_holds` decides), so all see the same values.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from sqlalchemy import CTE, any_, func, literal_column, select
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.arrays import id_array
from kernelindex.db.models import Implementation, Run, RunFlag, RunReview, WorkloadRevision
from kernelindex.rules import plausibility, ranking
from kernelindex.rules.facts import RunFacts
from kernelindex.services.facts import passed_verdict
from kernelindex.services.workload_page import WorkloadPage


@dataclass(frozen=True)
class RunHolds:
    """A run's flags (in the order they were raised, every one stored), the ones of them that still
    hold it (plausibility.flag_holds) and its reviews (oldest first)."""

    flags: tuple[plausibility.Flag, ...] = ()
    reviews: tuple[plausibility.Review, ...] = ()
    holding: tuple[plausibility.Flag, ...] = ()

    @property
    def held_for_review(self) -> bool:
        return plausibility.is_held_for_review(self.holding, self.reviews)

    @property
    def status_words(self) -> str | None:
        return plausibility.status_words(self.holding, self.reviews)


NO_HOLDS = RunHolds()


@dataclass
class _Collecting:
    flags: dict[int, plausibility.Flag] = field(default_factory=dict)
    reviews: dict[int, plausibility.Review] = field(default_factory=dict)
    holding: dict[int, plausibility.Flag] = field(default_factory=dict)


# The statements here are built once, their ids given at execution (no construction or cache key per call).
_RUN_IDS = id_array("run_ids")
_HOLDS = (
    select(RunFlag, RunReview, Implementation.role, Run.correctness["passed"])
    .join(Run, Run.id == RunFlag.run_id)
    .join(Implementation, Implementation.id == Run.implementation_id)
    .outerjoin(RunReview, RunReview.run_id == RunFlag.run_id)
    .where(RunFlag.run_id == any_(_RUN_IDS))
    .order_by(RunFlag.id, RunReview.id)
)


async def load_holds(session: AsyncSession, run_ids: Sequence[int]) -> dict[int, RunHolds]:
    """The holds of these runs; a run with no flag has NO_HOLDS.

    Always one statement, even for no runs, so a request's statement count does not depend on data.
    Reviews are only ever written for flagged runs (reviewRun refuses the others), so reading them
    through the flags loses none."""
    collected: dict[int, _Collecting] = {}
    rows = await session.execute(_HOLDS, {"run_ids": list(run_ids)})
    for row in rows:
        flag: RunFlag = row[0]
        review: RunReview | None = row[1]  # None: a flag without a review (outer join)
        is_baseline = row[2] == "baseline"
        correctness_passed = passed_verdict(row[3])
        run = collected.setdefault(flag.run_id, _Collecting())
        if flag.id not in run.flags:
            words = plausibility.FLAG_WORDS.get(flag.code, flag.code)
            run.flags[flag.id] = plausibility.Flag(flag.run_id, flag.code, words, flag.reason, rule_version=flag.rule_version)
            if plausibility.flag_holds(flag.code, is_baseline, correctness_passed, flag.rule_version):
                run.holding[flag.id] = run.flags[flag.id]
        if review is not None and review.id not in run.reviews:
            run.reviews[review.id] = plausibility.Review(
                run_id=review.run_id, decision=review.decision, reviewed_at=review.created_at,
                reviewer=review.reviewer, note=review.note,
            )
    holds = {
        # Rows come ordered by flag, then review: each run's first flag brings its reviews in id order.
        run_id: RunHolds(flags=tuple(c.flags.values()), reviews=tuple(c.reviews.values()), holding=tuple(c.holding.values()))
        for run_id, c in collected.items()
    }
    return {run_id: holds.get(run_id, NO_HOLDS) for run_id in run_ids}


async def with_holds(session: AsyncSession, facts: list[RunFacts]) -> list[RunFacts]:
    """The runs, with held_for_review set from their flags and reviews (one statement)."""
    holds = await load_holds(session, [f.id for f in facts])
    return [replace(f, held_for_review=True) if holds[f.id].held_for_review else f for f in facts]


@dataclass(frozen=True)
class HeldRun:
    """A passed, live run of a workload's current revision at its canonical configuration that is held
    for review: what the page counts in `heldRunCount` and words in `heldSummary`. `codes`: the flags
    that hold it; `faster`: faster than the record its cohort shows, or its cohort shows none (what
    the page would show but for the hold)."""

    run: RunFacts
    codes: tuple[str, ...]
    faster: bool

    @property
    def summary_item(self) -> plausibility.HeldRun:
        return plausibility.HeldRun(self.run.id, self.codes, self.faster)


def hold_columns() -> tuple[Any, ...]:
    """What decides whether a run (of the statement's Run) is held, as four columns, for held_of: its
    flags' codes and rule versions (in the order raised), the decision of its deciding review (the
    latest by time, reviews without one older than any with one, ties by id:
    plausibility.latest_review) and its correctness's "passed" (as load_holds reads them: facts.passed_verdict)."""
    codes, versions = (
        select(func.array_agg(aggregate_order_by(column, RunFlag.id))).where(RunFlag.run_id == Run.id).scalar_subquery()
        for column in (RunFlag.code, RunFlag.rule_version)
    )
    decision = (
        select(RunReview.decision).where(RunReview.run_id == Run.id)
        .order_by(RunReview.created_at.desc().nulls_last(), RunReview.id.desc())
        .limit(1)
        .scalar_subquery()
    )
    return codes, versions, decision, Run.correctness["passed"]


def holding_codes(facts: RunFacts, columns: Sequence[Any], correctness_passed: bool | None) -> tuple[str, ...]:
    """The codes of the flags that hold the run, from its hold_columns()."""
    codes, versions = columns[0] or [], columns[1] or []
    return tuple(
        c for c, v in zip(codes, versions, strict=True)
        if plausibility.flag_holds(c, facts.implementation.is_baseline, correctness_passed, v)
    )


def held_of(facts: RunFacts, columns: Sequence[Any]) -> RunFacts:
    """The run with held_for_review set from its hold_columns(): what with_holds gives, without its statement."""
    if columns[0] is None:  # no flag
        return facts
    holding = holding_codes(facts, columns, passed_verdict(columns[3]))
    return replace(facts, held_for_review=True) if holding and columns[2] != plausibility.APPROVED else facts


@cache
def flagged_runs() -> CTE:
    """The flagged runs of the current revisions (`revision_ids`) at their canonical configurations, passed
    and live: the candidates for held runs (of kernelindex.services.pages.load_page_runs), built once."""
    # The flagged runs first, on their own (materialized: PostgreSQL plans it apart from the dimensions'
    # joins, whose join order it would otherwise search together with it, the larger part of this
    # statement's time at a million runs), driven from the revisions: each revision's canonical
    # configuration is an index range of ix_runs_eligible_lookup ('passed' written into the text, so
    # a prepared statement's generic plan still implies the index's predicate).
    return (
        select(Run.id)
        .join(WorkloadRevision, WorkloadRevision.id == Run.workload_revision_id)
        .where(
            WorkloadRevision.id == any_(id_array("revision_ids")),
            Run.configuration_key == WorkloadRevision.canonical_configuration_key,
            Run.status == literal_column("'passed'"), Run.superseded_at.is_(None), Run.retracted_at.is_(None),
            select(RunFlag.id).where(RunFlag.run_id == Run.id).exists(),
        )
        .cte("flagged")
        .prefix_with("MATERIALIZED")
    )


def held_runs_of(pages: Sequence[WorkloadPage], runs: Iterable[tuple[RunFacts, Sequence[Any]]]) -> dict[int, list[HeldRun]]:
    """The held runs of each page's workload (current revision, canonical configuration, passed and
    live), by workload id, fastest first (PageRuns.held): from its flagged runs (flagged_runs), each with
    (at least) the first three of its hold_columns(), their flag codes and deciding review (the latest by
    time, reviews without one older than any with one, ties by id: plausibility.latest_review);
    plausibility decides."""
    out: dict[int, list[HeldRun]] = {p.workload.id: [] for p in pages}
    held: dict[int, list[tuple[RunFacts, tuple[str, ...]]]] = {}
    for facts, columns in runs:
        holding = holding_codes(facts, columns, facts.correctness_passed)
        if holding and columns[2] != plausibility.APPROVED:
            held.setdefault(facts.workload_id, []).append((facts, holding))
    for page in pages:
        shown = {r.run.cohort_key: r.run for r in page.records}
        mine = sorted(held.get(page.workload.id, []), key=lambda h: ranking.order_key(h[0]))
        out[page.workload.id] = [HeldRun(run=f, codes=c, faster=_faster_than(f, shown.get(f.cohort_key))) for f, c in mine]
    return out


def _faster_than(run: RunFacts, record: RunFacts | None) -> bool:
    if record is None:
        return True
    return run.figure is not None and record.figure is not None and run.figure < record.figure
