"""Workload revisions as read models: a revision's identity digest, whether it is current, and the
upstream suite snapshots that hold it (revisions-v1, kernelindex.ingest.workloads)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.models import SuiteSnapshot, SuiteSnapshotMember, Workload, WorkloadRevision


@dataclass(frozen=True)
class SnapshotFacts:
    suite: str
    upstream_revision: str
    revision_date: date | None
    complete: bool


@dataclass(frozen=True)
class RevisionFacts:
    id: int
    workload_id: int
    source_sha256: str
    source_size: int | None
    source_filename: str | None
    stand_in: bool
    current: bool
    # Oldest first: the first is the snapshot the revision appeared in.
    snapshots: tuple[SnapshotFacts, ...]


async def _facts(session: AsyncSession, condition) -> list[RevisionFacts]:
    rows = (
        await session.execute(
            select(WorkloadRevision, Workload.current_revision_id)
            .join(Workload, Workload.id == WorkloadRevision.workload_id)
            .where(condition)
            .order_by(WorkloadRevision.id)
        )
    ).all()
    ids = [r[0].id for r in rows]
    snapshots: dict[int, list[SnapshotFacts]] = {}
    if ids:
        members = await session.execute(
            select(SuiteSnapshotMember.workload_revision_id, SuiteSnapshot)
            .join(SuiteSnapshot, SuiteSnapshot.id == SuiteSnapshotMember.snapshot_id)
            # A retracted snapshot (ingest.snapshots) is as if never imported.
            .where(SuiteSnapshotMember.workload_revision_id.in_(ids), SuiteSnapshot.retracted_at.is_(None))
        )
        for revision_id, s in members:
            snapshots.setdefault(revision_id, []).append(SnapshotFacts(s.suite, s.upstream_revision, s.revision_date, s.complete))
    return [
        RevisionFacts(
            id=rev.id, workload_id=rev.workload_id, source_sha256=rev.source_sha256, source_size=rev.source_size,
            source_filename=rev.source_filename, stand_in=rev.stand_in, current=rev.id == current,
            snapshots=tuple(sorted(snapshots.get(rev.id, []), key=lambda s: (s.revision_date or date.min, s.upstream_revision))),
        )
        for rev, current in rows
    ]


async def load_revisions(session: AsyncSession, revision_ids: Iterable[int]) -> dict[int, RevisionFacts]:
    ids = sorted(set(revision_ids))
    return {f.id: f for f in await _facts(session, WorkloadRevision.id.in_(ids))} if ids else {}


async def load_revisions_of_workloads(session: AsyncSession, workload_ids: Iterable[int]) -> dict[int, list[RevisionFacts]]:
    """Every revision of each workload, oldest upstream first (old revisions stay queryable); one no
    snapshot holds comes last."""
    ids = sorted(set(workload_ids))
    out: dict[int, list[RevisionFacts]] = {i: [] for i in ids}
    if ids:
        for f in await _facts(session, WorkloadRevision.workload_id.in_(ids)):
            out[f.workload_id].append(f)
    for revisions in out.values():
        # By upstream history, not by when each was stored: the same list whatever the import order.
        revisions.sort(key=lambda f: (
            (f.snapshots[0].revision_date or date.min, f.snapshots[0].upstream_revision) if f.snapshots else (date.max, ""),
            f.source_sha256,
        ))
    return out
