"""Holds: the plausibility flags and reviews of runs, loaded in one place for every reader.

A flagged run is held out of records until its latest review approves it (kernelindex.rules.plausibility
decides). The workload page, the run's own fields and the refresh of the precomputed records all read
flags and reviews through `load_holds`, so they see the same values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from sqlalchemy import any_, select
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.models import RunFlag, RunReview
from kernelindex.rules import plausibility
from kernelindex.rules.facts import RunFacts
from kernelindex.services.sql import id_array


@dataclass(frozen=True)
class RunHolds:
    """A run's flags (in the order they were raised) and reviews (oldest first)."""

    flags: tuple[plausibility.Flag, ...] = ()
    reviews: tuple[plausibility.Review, ...] = ()

    @property
    def held_for_review(self) -> bool:
        return plausibility.is_held_for_review(self.flags, self.reviews)

    @property
    def status_words(self) -> str | None:
        return plausibility.status_words(self.flags, self.reviews)


NO_HOLDS = RunHolds()


@dataclass
class _Collecting:
    flags: dict[int, plausibility.Flag] = field(default_factory=dict)
    reviews: dict[int, plausibility.Review] = field(default_factory=dict)


async def load_holds(session: AsyncSession, run_ids: Sequence[int]) -> dict[int, RunHolds]:
    """The holds of these runs; a run with no flag has NO_HOLDS.

    Always one statement, even for no runs, so a request's statement count does not depend on data.
    Reviews are only ever written for flagged runs (reviewRun refuses the others), so reading them
    through the flags loses none."""
    collected: dict[int, _Collecting] = {}
    rows = await session.execute(
        select(RunFlag, RunReview)
        .outerjoin(RunReview, RunReview.run_id == RunFlag.run_id)
        .where(RunFlag.run_id == any_(id_array(run_ids)))
        .order_by(RunFlag.id, RunReview.id)
    )
    for row in rows:
        flag: RunFlag = row[0]
        review: RunReview | None = row[1]  # None: a flag without a review (outer join)
        run = collected.setdefault(flag.run_id, _Collecting())
        if flag.id not in run.flags:
            words = plausibility.FLAG_WORDS.get(flag.code, flag.code)
            run.flags[flag.id] = plausibility.Flag(flag.run_id, flag.code, words, flag.reason)
        if review is not None and review.id not in run.reviews:
            run.reviews[review.id] = plausibility.Review(
                run_id=review.run_id, decision=review.decision, reviewed_at=review.created_at,
                reviewer=review.reviewer, note=review.note,
            )
    holds = {
        # Rows come ordered by flag, then review: each run's first flag brings its reviews in id order.
        run_id: RunHolds(flags=tuple(c.flags.values()), reviews=tuple(c.reviews.values()))
        for run_id, c in collected.items()
    }
    return {run_id: holds.get(run_id, NO_HOLDS) for run_id in run_ids}


async def with_holds(session: AsyncSession, facts: list[RunFacts]) -> list[RunFacts]:
    """The runs, with held_for_review set from their flags and reviews (one statement)."""
    holds = await load_holds(session, [f.id for f in facts])
    return [replace(f, held_for_review=True) if holds[f.id].held_for_review else f for f in facts]
