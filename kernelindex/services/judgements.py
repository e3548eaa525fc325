"""A person's judgement of one run: retracting it, or reviewing a flagged one. Each owns its lock and its
records refresh, so every caller (the GraphQL mutations today) gets the same effects in one transaction:
the index's write lock first, then the run's change, then the records of its cohort recomputed."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.locks import hold_index_writes
from kernelindex.db.models import Run, RunFlag, RunReview
from kernelindex.services.records import refresh_cohorts_of_runs


@dataclass(frozen=True)
class Retraction:
    """A run's retraction: made now, or the earlier one that stands (`already`)."""

    retracted_at: datetime
    reason: str | None
    already: bool


async def retract_run(session: AsyncSession, run_id: int, reason: str, now: datetime) -> Retraction | None:
    """Retract a live run: it stays stored and listed, and counts for nothing. None: no such run. A run
    retracted before keeps its first retraction (returned with `already`)."""
    await hold_index_writes(session)  # before the run's row lock: records are refreshed below
    done = (await session.execute(
        update(Run).where(Run.id == run_id, Run.retracted_at.is_(None))
        .values(retracted_at=now, retraction_reason=reason)
        .returning(Run.retracted_at, Run.retraction_reason)
    )).one_or_none()
    if done is not None:
        await refresh_cohorts_of_runs(session, [run_id], now=now)
        return Retraction(now, done[1], already=False)
    earlier = (await session.execute(select(Run.retracted_at, Run.retraction_reason).where(Run.id == run_id))).one_or_none()
    if earlier is None:
        return None
    assert earlier[0] is not None  # the update above matched no live run: this one was retracted
    return Retraction(earlier[0], earlier[1], already=True)


NO_SUCH_RUN = "no such run"
NOT_FLAGGED = "the run is not flagged; there is nothing to review"


async def review_run(session: AsyncSession, run_id: int, decision: str, reviewer: str, note: str | None,
                     now: datetime) -> str | None:
    """Record a review of a flagged run ('approved': it counts again; 'rejected': it stays out) and
    recompute its cohort's records. Returns why nothing was done (NO_SUCH_RUN, NOT_FLAGGED), or None."""
    if await session.get(Run, run_id) is None:
        return NO_SUCH_RUN
    if (await session.execute(select(RunFlag.id).where(RunFlag.run_id == run_id).limit(1))).first() is None:
        return NOT_FLAGGED
    await hold_index_writes(session)  # before writing: records are refreshed below
    session.add(RunReview(run_id=run_id, decision=decision, reviewer=reviewer, note=note, created_at=now))
    await session.flush()
    await refresh_cohorts_of_runs(session, [run_id], now=now)
    return None
