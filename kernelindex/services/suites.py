"""What the index holds of each suite and each source: counts, terms and the latest snapshot.

Read for the `suites` and `sources` queries. A suite's counts are of its workloads and of their live
runs (superseded runs are history, retracted ones are out); a source's are of the live runs that came
from it, through any route, and of its snapshots."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession


@dataclass(frozen=True)
class SuiteOverview:
    suite: str
    workload_count: int
    workloads_in_latest_snapshot: int
    run_count: int
    eligible_run_count: int  # the records' run counts, summed (eligibility-v3 headline, as Workload.eligibleRunCount)
    latest_revision: str | None  # of its latest complete snapshot, not retracted
    latest_revision_date: date | None
    families: tuple[str, ...]


@dataclass(frozen=True)
class SourceOverview:
    id: int
    key: str | None
    name: str
    kind: str | None
    url: str | None
    licence: str | None
    terms: str | None
    attribution: str | None
    run_count: int
    snapshot_count: int
    latest_revision: str | None  # its newest snapshot (by date), not retracted
    latest_revision_date: date | None
    latest_route: str | None


_SUITES = text("""
WITH live AS (
    SELECT workload_id, count(*) AS runs FROM runs WHERE superseded_at IS NULL AND retracted_at IS NULL GROUP BY workload_id
), eligible AS (
    -- The headline records' run counts (Workload.eligibleRunCount): the canonical configuration's latencies.
    SELECT b.workload_id, sum(b.run_count) AS runs FROM cohort_bests b
      JOIN workload_revisions wr ON wr.id = b.workload_revision_id AND wr.canonical_configuration_key = b.configuration_key
      JOIN protocols p ON p.id = b.protocol_id AND p.metric = 'latency'
     GROUP BY b.workload_id
), latest AS (
    SELECT DISTINCT ON (suite) suite, upstream_revision, revision_date FROM suite_snapshots
     WHERE complete AND retracted_at IS NULL ORDER BY suite, revision_date DESC NULLS LAST, upstream_revision DESC
)
SELECT w.suite, count(*), count(*) FILTER (WHERE w.in_latest_snapshot), coalesce(sum(l.runs), 0),
       coalesce(sum(e.runs), 0), max(s.upstream_revision), max(s.revision_date),
       array_remove(array_agg(DISTINCT w.family), NULL)
  FROM workloads w LEFT JOIN live l ON l.workload_id = w.id LEFT JOIN eligible e ON e.workload_id = w.id
  LEFT JOIN latest s ON s.suite = w.suite
 GROUP BY w.suite ORDER BY w.suite
""")

_SOURCES = text("""
WITH live AS (
    SELECT ss.source_id, count(*) AS runs FROM runs r JOIN source_snapshots ss ON ss.id = r.source_snapshot_id
     WHERE r.superseded_at IS NULL AND r.retracted_at IS NULL GROUP BY ss.source_id
), latest AS (
    SELECT DISTINCT ON (source_id) source_id, revision, revision_date, route FROM source_snapshots
     WHERE retracted_at IS NULL ORDER BY source_id, revision_date DESC NULLS LAST, id DESC
)
SELECT s.id, s.key, s.name, s.kind, s.url, s.licence, s.terms, s.attribution, coalesce(l.runs, 0),
       (SELECT count(*) FROM source_snapshots ss WHERE ss.source_id = s.id), t.revision, t.revision_date, t.route
  FROM sources s LEFT JOIN live l ON l.source_id = s.id LEFT JOIN latest t ON t.source_id = s.id
 ORDER BY s.name
""")


async def suite_overviews(session: AsyncSession) -> list[SuiteOverview]:
    rows = (await session.execute(_SUITES)).all()
    return [SuiteOverview(r[0], r[1], r[2], int(r[3]), int(r[4]), r[5] or None, r[6], tuple(sorted(r[7] or ()))) for r in rows]


async def source_overviews(session: AsyncSession) -> list[SourceOverview]:
    rows = (await session.execute(_SOURCES)).all()
    return [SourceOverview(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], int(r[8]), int(r[9]), r[10] or None, r[11], r[12])
            for r in rows]
