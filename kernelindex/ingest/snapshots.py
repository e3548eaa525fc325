"""Snapshots: what was imported, at which revision, and retracting an import that should not count.

A suite snapshot (kernelindex.ingest.workloads: a KernelBench commit and its date) comes with the
source snapshots its runs were stored under (the KernelBench source at that revision). Retracting a
suite snapshot (`kernelindex snapshot retract SUITE REVISION --reason …`, or the retractSnapshot
mutation) marks it and those source snapshots retracted, with when and why, and retracts every live
run they hold with the same reason; nothing is deleted, every run stays queryable. Then:
- a retracted suite snapshot decides nothing: current revisions and the latest complete snapshot are
  recomputed from the others (kernelindex.ingest.workloads ignores retracted ones);
- its runs count for nothing: they are retracted, and rules.eligibility counts no retracted run;
- each workload touched gets a 'snapshot_retracted' record event with the reason, then its records
  are recomputed (services.records), which appends the usual events where a holder went;
- an import under a retracted revision is refused (kernelindex.ingest.workloads.find_or_create_snapshot).
So the pages read as they would had the retracted import never happened; only the record history
remembers it, with the reason.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime

from sqlalchemy import func, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.locks import hold_index_writes
from kernelindex.db.models import (
    RecordEvent,
    Run,
    Source,
    SourceSnapshot,
    SuiteSnapshot,
    SuiteSnapshotMember,
    Workload,
    WorkloadRevision,
)
from kernelindex.ingest.workloads import recompute_current, revision_matches, update_in_latest_snapshot
from kernelindex.rules.history import SNAPSHOT_RETRACTED
from kernelindex.services.records import refresh_workloads

RETRACTIONS_VERSION = "snapshots-v1"
MAX_REASON_LENGTH = 2000


class SnapshotError(ValueError):
    """A snapshot that cannot be named or retracted as asked; the message says what exists."""


@dataclass(frozen=True)
class SuiteSnapshotInfo:
    suite: str
    revision: str
    revision_date: date | None
    complete: bool
    workloads: int
    created_at: datetime
    retracted_at: datetime | None
    retraction_reason: str | None


@dataclass(frozen=True)
class SourceSnapshotInfo:
    source: str
    revision: str
    revision_date: date | None
    runs: int
    live_runs: int  # neither retracted nor superseded
    created_at: datetime
    retracted_at: datetime | None
    retraction_reason: str | None


async def list_snapshots(session: AsyncSession) -> tuple[list[SuiteSnapshotInfo], list[SourceSnapshotInfo]]:
    """Every suite snapshot (by suite, then revision date) and every source snapshot (by source, then
    revision date), retracted ones included."""
    members = (
        select(SuiteSnapshotMember.snapshot_id, func.count().label("n")).group_by(SuiteSnapshotMember.snapshot_id).subquery()
    )
    suites = [
        SuiteSnapshotInfo(s.suite, s.upstream_revision, s.revision_date, s.complete, n or 0, s.created_at,
                          s.retracted_at, s.retraction_reason)
        for s, n in (await session.execute(
            select(SuiteSnapshot, members.c.n).outerjoin(members, members.c.snapshot_id == SuiteSnapshot.id)
            .order_by(SuiteSnapshot.suite, SuiteSnapshot.revision_date.nulls_first(), SuiteSnapshot.upstream_revision)
        )).all()
    ]
    runs = (
        select(
            Run.source_snapshot_id, func.count().label("n"),
            func.count().filter(Run.retracted_at.is_(None), Run.superseded_at.is_(None)).label("live"),
        ).group_by(Run.source_snapshot_id).subquery()
    )
    sources = [
        SourceSnapshotInfo(name, s.revision, s.revision_date, n or 0, live or 0, s.created_at, s.retracted_at,
                           s.retraction_reason)
        for s, name, n, live in (await session.execute(
            select(SourceSnapshot, Source.name, runs.c.n, runs.c.live)
            .join(Source, Source.id == SourceSnapshot.source_id)
            .outerjoin(runs, runs.c.source_snapshot_id == SourceSnapshot.id)
            .order_by(Source.name, SourceSnapshot.revision_date.nulls_first(), SourceSnapshot.revision)
        )).all()
    ]
    return suites, sources


@dataclass
class Retraction:
    """What a retraction did (or, already_retracted, found done before)."""

    suite: str
    revision: str
    retracted_at: datetime
    reason: str
    already_retracted: bool = False
    source_snapshots: list[str] = field(default_factory=list)  # 'KernelBench abc1234'
    runs_retracted: int = 0
    workloads_touched: int = 0
    record_events: int = 0  # appended: one 'snapshot_retracted' per workload touched, plus the records' own


def check_reason(reason: str) -> str:
    reason = reason.strip()
    if not reason:
        raise SnapshotError("a retraction needs a reason: say why the snapshot should not count")
    if len(reason) > MAX_REASON_LENGTH:
        raise SnapshotError(f"the reason is {len(reason):,} characters; at most {MAX_REASON_LENGTH:,}")
    return reason


async def find_suite_snapshot(session: AsyncSession, suite: str, revision: str) -> SuiteSnapshot:
    """The suite's snapshot at `revision` (an abbreviation of a git hash matches, as imports match)."""
    rows = (await session.scalars(select(SuiteSnapshot).where(SuiteSnapshot.suite == suite).order_by(SuiteSnapshot.id))).all()
    if not rows:
        suites = sorted(set((await session.scalars(select(SuiteSnapshot.suite))).all()))
        known = ", ".join(repr(s) for s in suites) or "none"
        raise SnapshotError(f"no snapshot of suite {suite!r}; suites with snapshots: {known}")
    found = [s for s in rows if revision_matches(s.upstream_revision, revision)]
    if len(found) > 1:
        raise SnapshotError(
            f"revision {revision!r} matches {len(found)} snapshots of {suite!r} "
            f"({', '.join(s.upstream_revision for s in found)}); give more of it"
        )
    if not found:
        known = ", ".join(f"{s.upstream_revision} ({s.revision_date or 'no date'})" for s in rows)
        raise SnapshotError(f"no {suite!r} snapshot at revision {revision!r}; its snapshots: {known}")
    return found[0]


async def retract_suite_snapshot(
    session: AsyncSession, suite: str, revision: str, reason: str, *, now: datetime
) -> Retraction:
    """Retract the suite's snapshot at `revision`, its source snapshots and their runs, in the
    caller's transaction (see the module's docstring). Retracting one already retracted changes
    nothing and says so."""
    reason = check_reason(reason)
    # With every other writer of the index held off: current revisions and records are recomputed
    # from a settled set, as an import does.
    await hold_index_writes(session)
    snapshot = await find_suite_snapshot(session, suite, revision)
    if snapshot.retracted_at is not None:
        return Retraction(suite, snapshot.upstream_revision, snapshot.retracted_at, snapshot.retraction_reason or "",
                          already_retracted=True)
    why = f"{suite} snapshot {snapshot.upstream_revision} retracted: {reason}"
    out = Retraction(suite, snapshot.upstream_revision, now, reason)
    await session.execute(
        update(SuiteSnapshot).where(SuiteSnapshot.id == snapshot.id).values(retracted_at=now, retraction_reason=reason)
    )
    # Its source snapshots: those at the same revision that hold runs of the suite's workloads (what
    # the import stored its runs under). Another suite's runs are never touched.
    candidates = (
        await session.execute(
            select(SourceSnapshot.id, SourceSnapshot.revision, Source.name)
            .join(Source, Source.id == SourceSnapshot.source_id)
            .where(
                SourceSnapshot.retracted_at.is_(None),
                select(Run.id).join(Workload, Workload.id == Run.workload_id)
                .where(Run.source_snapshot_id == SourceSnapshot.id, Workload.suite == suite).exists(),
            )
            .order_by(Source.name, SourceSnapshot.id)
        )
    ).all()
    chosen = [(sid, name, rev) for sid, rev, name in candidates if rev and revision_matches(rev, snapshot.upstream_revision)]
    touched: set[int] = set(
        (await session.scalars(select(SuiteSnapshotMember.workload_id).where(SuiteSnapshotMember.snapshot_id == snapshot.id))).all()
    )
    if chosen:
        ids = [sid for sid, _, _ in chosen]
        out.source_snapshots = [f"{name} {rev}" for _, name, rev in chosen]
        await session.execute(
            update(SourceSnapshot).where(SourceSnapshot.id.in_(ids)).values(retracted_at=now, retraction_reason=reason)
        )
        retracted = (
            await session.execute(
                update(Run)
                .where(Run.source_snapshot_id.in_(ids), Run.retracted_at.is_(None),
                       Run.workload_id.in_(select(Workload.id).where(Workload.suite == suite)))
                .values(retracted_at=now, retraction_reason=why)
                .returning(Run.workload_id)
                .execution_options(synchronize_session=False)
            )
        ).scalars().all()
        out.runs_retracted = len(retracted)
        touched.update(retracted)
    # The snapshot no longer decides current revisions (each move appends 'revision_changed') nor
    # which snapshot is the latest complete one.
    await recompute_current(session, touched)
    await update_in_latest_snapshot(session, suite)
    out.workloads_touched = len(touched)
    events = await _retraction_events(session, sorted(touched), why, now)
    refreshed = await refresh_workloads(session, touched, now=now)
    out.record_events = events + refreshed.events
    return out


async def _retraction_events(session: AsyncSession, workload_ids: list[int], why: str, now: datetime) -> int:
    """One 'snapshot_retracted' event per workload touched that has a current revision, before the
    records' own events, so its history reads the reason first."""
    if not workload_ids:
        return 0
    rows = (
        await session.execute(
            select(Workload.id, Workload.current_revision_id, WorkloadRevision.canonical_configuration_key)
            .join(WorkloadRevision, WorkloadRevision.id == Workload.current_revision_id)
            .where(Workload.id.in_(workload_ids))
            .order_by(Workload.id)
        )
    ).all()
    if rows:
        await session.execute(
            pg_insert(RecordEvent),
            [
                {"workload_id": wid, "workload_revision_id": rev, "configuration_key": key, "protocol_id": None,
                 "environment_id": None, "kind": SNAPSHOT_RETRACTED, "run_id": None, "previous_run_id": None,
                 "improvement_percent": None, "rule_version": RETRACTIONS_VERSION, "reason": why, "created_at": now}
                for wid, rev, key in rows
            ],
        )
    return len(rows)


async def mark_outdated(session: AsyncSession, source_ids: Sequence[int]) -> set[int]:
    """A whole snapshot is outdated once a newer whole snapshot of its source is stored (not retracted).
    Returns the workloads with runs in a snapshot whose mark moved: their eligible runs changed."""
    moved = (await session.execute(text(
        "UPDATE source_snapshots s SET outdated = v.outdated FROM ("
        " SELECT s2.id, EXISTS (SELECT 1 FROM source_snapshots n WHERE n.source_id = s2.source_id AND n.whole"
        " AND n.retracted_at IS NULL AND n.revision_date > s2.revision_date) AS outdated"
        " FROM source_snapshots s2 WHERE s2.whole AND s2.source_id = ANY(CAST(:ids AS int[]))) v "
        "WHERE s.id = v.id AND s.outdated IS DISTINCT FROM v.outdated RETURNING s.id"
    ), {"ids": list(source_ids)})).scalars().all()
    return await workloads_with_runs(session, "source_snapshot_id", moved)


async def workloads_with_runs(session: AsyncSession, column: str, ids: Collection[int]) -> set[int]:
    """The workloads with a run whose `column` (id, source_snapshot_id, implementation_id) is one of these."""
    if not ids:
        return set()
    rows = await session.execute(text(f"SELECT DISTINCT workload_id FROM runs WHERE {column} = ANY(CAST(:ids AS bigint[]))"),
                                 {"ids": sorted(ids)})
    return set(rows.scalars().all())
