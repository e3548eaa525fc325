"""Keeping the precomputed records (cohort_bests, and workload_sources derived from them), plausibility
flags and record history current.

Every write path (ingest batches, seed, KernelBench import, submitRuns, retractRun, reviews) calls
`refresh_cohorts` or `refresh_workloads` inside its own transaction, so a reader sees a batch's runs
and its records together or not at all. The judgement itself stays in kernelindex.rules:
plausibility decides the flags, ranking decides eligibility and order, history decides events.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Integer, Text, and_, bindparam, delete, func, select, text
from sqlalchemy.dialects.postgresql import ARRAY, distinct_on
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.copy import copy_rows, dict_rows
from kernelindex.db.models import CohortBest, Protocol, RecordEvent, Run, RunFlag, Workload, WorkloadRevision
from kernelindex.rules import eligibility, plausibility, ranking
from kernelindex.rules import headroom_v1 as headroom
from kernelindex.rules.facts import HardwareFacts, RunFacts, WorkloadFacts
from kernelindex.rules.headroom_v2 import roofline_floor
from kernelindex.rules.history import HISTORY_VERSION, REVISION_CHANGED, events_for
from kernelindex.services.facts import CohortKey, FactsBuilder, load_catalogue, run_columns_statement, workload_facts
from kernelindex.services.holds import load_holds

COHORTS_PER_CALL = 1000
_RUN_TABLE = Run.__table__.c


@dataclass
class RefreshSummary:
    cohorts: int = 0
    flagged_runs: list[int] = field(default_factory=list)
    events: int = 0


async def refresh_workloads(session: AsyncSession, workload_ids: Iterable[int], now: datetime | None = None) -> RefreshSummary:
    """Recompute every cohort of these workloads' current revisions, at every configuration and for
    every metric (after a new revision, or to rebuild)."""
    ids = sorted(set(workload_ids))
    if not ids:
        return RefreshSummary()
    rows = (
        await session.execute(
            select(Run.workload_revision_id, Run.configuration_key, Run.protocol_id, Run.environment_id)
            .join(Workload, Workload.id == Run.workload_id)
            .where(
                Run.workload_id.in_(ids),
                Run.workload_revision_id == Workload.current_revision_id,
                Run.superseded_at.is_(None),
            )
            .distinct()
        )
    ).all()
    summary = RefreshSummary()
    keys: list[CohortKey] = [(r[0], r[1], r[2], r[3]) for r in rows]
    # Bests of cohorts that no longer hold records (an old revision) go; the others are rewritten
    # below only where they differ, so a refresh that changes nothing writes nothing (and moves no
    # data version).
    # Said as "no live run of the current revision in that cohort" (the keys' own definition), not as a
    # NOT IN list of the keys: a rebuild's fifty workloads can have tens of thousands of cohorts, and a
    # list that long exceeds PostgreSQL's stack depth.
    live_cohort = (
        select(Run.id)
        .join(Workload, Workload.id == Run.workload_id)
        .where(
            Run.workload_revision_id == CohortBest.workload_revision_id,
            Run.workload_revision_id == Workload.current_revision_id,
            Run.configuration_key == CohortBest.configuration_key,
            Run.protocol_id == CohortBest.protocol_id,
            Run.environment_id == CohortBest.environment_id,
            Run.superseded_at.is_(None),
        )
        .correlate(CohortBest)
        .exists()
    )
    stale = delete(CohortBest).where(CohortBest.workload_id.in_(ids), ~live_cohort)
    # The sources of every (revision, configuration) that lost bests here follow them; those that
    # are refreshed below are rewritten again there.
    gone = (await session.execute(stale.returning(CohortBest.workload_revision_id, CohortBest.configuration_key))).all()
    await _write_sources(session, {(r[0], r[1]) for r in gone})
    # Bounded statements: PostgreSQL takes at most 32,767 parameters, and a cohort key is four.
    for start in range(0, len(keys), COHORTS_PER_CALL):
        part = await refresh_cohorts(session, keys[start:start + COHORTS_PER_CALL], now=now)
        summary.cohorts += part.cohorts
        summary.flagged_runs += part.flagged_runs
        summary.events += part.events
    return summary


async def refresh_cohorts_of_runs(session: AsyncSession, run_ids: Iterable[int], now: datetime | None = None) -> RefreshSummary:
    """Recompute the cohorts these runs belong to (after a retraction or a review)."""
    ids = list(run_ids)
    if not ids:
        return RefreshSummary()
    rows = (
        await session.execute(
            select(Run.workload_revision_id, Run.configuration_key, Run.protocol_id, Run.environment_id).where(Run.id.in_(ids))
        )
    ).all()
    return await refresh_cohorts(session, [(r[0], r[1], r[2], r[3]) for r in rows], now=now)


async def refresh_all_records(session: AsyncSession, now: datetime | None = None) -> RefreshSummary:
    ids = (await session.scalars(select(Workload.id))).all()
    summary = RefreshSummary()
    for start in range(0, len(ids), 50):
        part = await refresh_workloads(session, ids[start:start + 50], now=now)
        summary.cohorts += part.cohorts
        summary.flagged_runs += part.flagged_runs
        summary.events += part.events
    return summary


async def refresh_cohorts(
    session: AsyncSession, cohorts: Iterable[CohortKey], now: datetime | None = None, *,
    arrived: Collection[int] = (), events: bool = True, history_only: bool = False,
) -> RefreshSummary:
    """Recompute these cohorts: flags, cohort_bests rows and record events.

    `arrived`: the runs the write being refreshed added (history-v1 replays them in observed order).
    events=False leaves the record history alone: an import cut into batches derives its events
    once, at its end, over every cohort it touched (kernelindex.ingest.writer.RunWriter.record_events).
    history_only: that pass. Only the headline cohorts have a history, and every batch refreshed the
    flags and bests of the cohorts it touched in its own transaction, so the others are left as they
    are, unread (off the canonical configuration, or of another metric: most cohorts of an import).
    """
    now = now or datetime.now(UTC)
    keys = sorted(set(cohorts))
    summary = RefreshSummary(cohorts=len(keys))
    if not keys:
        return summary
    revision_ids = sorted({k[0] for k in keys})
    revisions = {
        r.id: r for r in (await session.scalars(select(WorkloadRevision).where(WorkloadRevision.id.in_(revision_ids)))).all()
    }
    workloads = {
        w.id: w
        for w in (
            await session.scalars(select(Workload).where(Workload.id.in_({r.workload_id for r in revisions.values()})))
        ).all()
    }
    builder = FactsBuilder()
    catalogue = [builder.hardware(h) for h in await load_catalogue(session)]
    metric_of = dict((await session.execute(
        select(Protocol.id, Protocol.metric).where(Protocol.id.in_({k[2] for k in keys}))
    )).all())
    if history_only:
        keys = [k for k in keys if k[0] in revisions and eligibility.is_headline_cohort(
            k[1], metric_of.get(k[2], ""), workload_facts(workloads[revisions[k[0]].workload_id], revisions[k[0]]))]
        summary.cohorts = len(keys)
        if not keys:
            return summary
    # Plain columns (no ORM entity per run or dimension), the cohorts joined as arrays (see _cohorts).
    # A join, not a LATERAL subquery per cohort: with a young index's statistics PostgreSQL read each
    # cohort's runs through ix_runs_eligible_lookup, every run of the configuration for every cohort
    # (submitRuns' fifth call of 1,000 new machines was twice its first); a join reads the passed runs
    # once at worst, and an import keeps the statistics current (kernelindex.ingest.writer.RunStatistics).
    cohort = _cohorts(keys)
    rows = (
        await session.execute(
            run_columns_statement()
            .join(cohort, and_(_RUN_TABLE.workload_revision_id == cohort.c.rev, _RUN_TABLE.configuration_key == cohort.c.cfg,
                               _RUN_TABLE.protocol_id == cohort.c.proto, _RUN_TABLE.environment_id == cohort.c.env))
            .where(_RUN_TABLE.superseded_at.is_(None), _RUN_TABLE.retracted_at.is_(None), _RUN_TABLE.status == "passed")
        )
    ).all()
    by_cohort: dict[CohortKey, list[RunFacts]] = defaultdict(list)
    snapshot_of: dict[int, int] = {}
    for row in rows:
        facts = builder.run_of_columns(row)
        by_cohort[facts.cohort_key].append(facts)
        snapshot_of[facts.id] = facts.source.id  # a run's source facts are its snapshot's
    run_ids = [r.id for runs in by_cohort.values() for r in runs]
    holds = await load_holds(session, run_ids)

    new_flags: list[dict] = []
    bests: list[dict] = []
    latest = await _latest_events(session, keys) if events else {}
    drafts: list[dict] = []
    workload_facts_of: dict[int, WorkloadFacts] = {}
    floors = _Floors(catalogue)
    for key in keys:
        revision = revisions.get(key[0])
        if revision is None:
            continue
        workload = workloads[revision.workload_id]
        facts_of_workload = workload_facts_of.get(revision.id)
        if facts_of_workload is None:
            facts_of_workload = workload_facts_of[revision.id] = workload_facts(workload, revision)
        runs = by_cohort.get(key, [])
        baseline = next((r for r in sorted(runs, key=ranking.order_key) if r.implementation.is_baseline), None)
        judged: list[RunFacts] = []
        for run in runs:
            # A stale flag (below_floor judged against an older floor) is judged again: replaced below if still earned.
            found = [f for f in holds[run.id].flags if plausibility.is_current(f)]
            floor_ns = floors.floor_for(run, revision)
            for flag in plausibility.flags_for(run, baseline, floor_ns):
                if flag.code not in {f.code for f in found}:
                    found.append(flag)
                    new_flags.append({"run_id": run.id, "code": flag.code, "reason": flag.detail,
                                      "rule_version": plausibility.PLAUSIBILITY_VERSION})
                    summary.flagged_runs.append(run.id)
            # Every stored flag stays as history; only those plausibility still holds for count.
            held = plausibility.is_held_for_review(plausibility.holding_flags(run, found), holds[run.id].reviews)
            judged.append(replace(run, held_for_review=held) if run.held_for_review != held else run)
        # Every cohort of the current revision keeps its bests (records at every configuration and for
        # every metric, eligibility-v3); the record history follows the headline cohorts alone.
        eligible = eligibility.eligible_in_cohort(judged, facts_of_workload)
        _append_bests(bests, key, workload.id, eligible, snapshot_of)
        if not events or not eligibility.is_headline_cohort(key[1], metric_of.get(key[2], ""), facts_of_workload):
            continue
        holder = latest.get(key)
        for draft in events_for(holder[0] if holder else None, holder[1] if holder else None,
                                sorted(eligible, key=ranking.order_key), arrived):
            drafts.append({
                "workload_id": workload.id, "workload_revision_id": key[0], "configuration_key": key[1],
                "protocol_id": key[2], "environment_id": key[3], "kind": draft.kind, "run_id": draft.run_id,
                "previous_run_id": draft.previous_run_id, "improvement_percent": draft.improvement_percent,
                "rule_version": HISTORY_VERSION, "created_at": now,
            })
    # Flags are few (implausible runs): executemany, for its ON CONFLICT. A stale flag of the same code
    # (plausibility.is_current) takes the new reason and version; a current one is left as it is.
    if new_flags:
        upsert = pg_insert(RunFlag)
        await session.execute(
            upsert.on_conflict_do_update(
                index_elements=["run_id", "code"],
                set_={"reason": upsert.excluded.reason, "rule_version": upsert.excluded.rule_version},
                where=RunFlag.rule_version != upsert.excluded.rule_version,
            ),
            new_flags,
        )
    await _write_bests(session, keys, bests)
    if drafts:
        await copy_rows(session, "record_events", EVENT_COLUMNS, dict_rows(drafts, EVENT_COLUMNS))
    summary.events = len(drafts)
    return summary


async def _write_bests(session: AsyncSession, keys: list[CohortKey], bests: list[dict]) -> None:
    """The cohorts' bests become `bests`, touching only the rows that differ: the new bests are
    COPYed into a temporary table, then the rows no longer wanted are deleted and the others
    inserted or updated where they are not equal already."""
    for statement in _CREATE_REFRESH_BESTS:
        await session.execute(text(statement))
    if bests:
        await copy_rows(session, "refresh_bests", BEST_COLUMNS, dict_rows(bests, BEST_COLUMNS))
    cohort = _cohorts(keys)
    await session.execute(
        delete(CohortBest).where(
            CohortBest.workload_revision_id == cohort.c.rev, CohortBest.configuration_key == cohort.c.cfg,
            CohortBest.protocol_id == cohort.c.proto, CohortBest.environment_id == cohort.c.env,
            text(
                "NOT EXISTS (SELECT 1 FROM refresh_bests s WHERE s.workload_revision_id = cohort_bests.workload_revision_id "
                "AND s.configuration_key = cohort_bests.configuration_key AND s.protocol_id = cohort_bests.protocol_id "
                "AND s.environment_id = cohort_bests.environment_id AND s.implementation_id = cohort_bests.implementation_id)"
            ),
        )
    )
    if bests:
        await session.execute(_UPSERT_BESTS)
    await _write_sources(session, {(k[0], k[1]) for k in keys})


async def _write_sources(session: AsyncSession, pairs: Collection[tuple[int, str]] | None) -> None:
    """workload_sources of these (revision, configuration) pairs become what their cohort bests name
    now (every pair when None): one statement, deleting the rows no longer named and inserting the
    new ones, so a refresh that changes no bests writes nothing here either. Its cost is the
    snapshot ids of those pairs' bests, read from the bests, never from runs."""
    if pairs is None:
        await session.execute(text(_REBUILD_SOURCES))
        return
    if not pairs:
        return
    ordered = sorted(pairs)
    await session.execute(text(_WRITE_SOURCES), {"revs": [p[0] for p in ordered], "cfgs": [p[1] for p in ordered]})


async def rebuild_workload_sources(session: AsyncSession) -> None:
    """Every row of workload_sources recomputed from cohort_bests (derived data: after a repair of the
    bests, or to check the maintained rows)."""
    await _write_sources(session, None)


# What each pair's bests name: every distinct snapshot, with the name and revision the page sorts by.
_WANTED_SOURCES = """
wanted AS (
    SELECT DISTINCT b.workload_revision_id AS rev, b.configuration_key AS cfg, u.id AS sid, b.workload_id,
           s.name AS source_name, ss.revision AS snapshot_revision
      FROM pairs p
      JOIN cohort_bests b ON b.workload_revision_id = p.rev AND b.configuration_key = p.cfg
     CROSS JOIN LATERAL unnest(b.source_snapshot_ids) AS u(id)
      JOIN source_snapshots ss ON ss.id = u.id
      JOIN sources s ON s.id = ss.source_id
),
gone AS (
    DELETE FROM workload_sources ws USING pairs p
     WHERE ws.workload_revision_id = p.rev AND ws.configuration_key = p.cfg
       AND NOT EXISTS (SELECT 1 FROM wanted w WHERE w.rev = ws.workload_revision_id AND w.cfg = ws.configuration_key
                                                AND w.sid = ws.source_snapshot_id)
)
INSERT INTO workload_sources (workload_revision_id, configuration_key, source_snapshot_id, workload_id, source_name,
                              snapshot_revision)
SELECT w.rev, w.cfg, w.sid, w.workload_id, w.source_name, w.snapshot_revision FROM wanted w
 WHERE NOT EXISTS (SELECT 1 FROM workload_sources ws WHERE ws.workload_revision_id = w.rev
                      AND ws.configuration_key = w.cfg AND ws.source_snapshot_id = w.sid)
"""
_WRITE_SOURCES = (
    "WITH pairs AS (SELECT DISTINCT p.rev, p.cfg FROM unnest(CAST(:revs AS integer[]), CAST(:cfgs AS text[])) AS p(rev, cfg)),"
    + _WANTED_SOURCES
)
# Every pair either table holds: a pair whose bests are all gone loses its rows.
_REBUILD_SOURCES = (
    "WITH pairs AS (SELECT workload_revision_id AS rev, configuration_key AS cfg FROM cohort_bests "
    "UNION SELECT workload_revision_id, configuration_key FROM workload_sources),"
    + _WANTED_SOURCES
)


_BEST_KEY = ("workload_revision_id", "configuration_key", "protocol_id", "environment_id", "implementation_id")
_CREATE_REFRESH_BESTS = (
    "CREATE TEMPORARY TABLE IF NOT EXISTS refresh_bests (LIKE cohort_bests)",
    "TRUNCATE refresh_bests",
)


# The columns the refresh writes by COPY (one statement, its triggers fired once, however many rows).
BEST_COLUMNS = (
    "workload_revision_id", "configuration_key", "protocol_id", "environment_id", "implementation_id", "workload_id",
    "hardware_id", "run_id", "figure", "observed_at", "run_count", "last_observed_at", "evidence_kinds",
    "source_snapshot_ids",
)
_UPSERT_BESTS = text(
    f"INSERT INTO cohort_bests ({', '.join(BEST_COLUMNS)}) SELECT {', '.join(BEST_COLUMNS)} FROM refresh_bests "
    f"ON CONFLICT ({', '.join(_BEST_KEY)}) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in BEST_COLUMNS if c not in _BEST_KEY)
    + f" WHERE ({', '.join(f'cohort_bests.{c}' for c in BEST_COLUMNS)}) IS DISTINCT FROM ({', '.join(f'excluded.{c}' for c in BEST_COLUMNS)})"
)
EVENT_COLUMNS = (
    "workload_id", "workload_revision_id", "configuration_key", "protocol_id", "environment_id", "kind", "run_id",
    "previous_run_id", "improvement_percent", "rule_version", "created_at",
)


def _floor_for(run: RunFacts, revision: WorkloadRevision, catalogue) -> float | None:
    """The floor a run is judged against: the roofline (headroom-v3) on its SKU when traced, else
    headroom-v1. The trace counted the canonical configuration's bytes and FLOPs, so a run at another
    configuration is judged by headroom-v1 at its own bindings alone."""
    canonical = run.configuration_key == revision.canonical_configuration_key
    v2 = roofline_floor(revision.analysis, run.environment.hardware).floor_ns if revision.analysis and canonical else None
    v1 = headroom.headroom_v1(revision.semantics, revision.canonical_bindings if canonical else run.bindings,
                              run.environment.hardware.family, catalogue, None).floor_ns
    floor, _ = plausibility.floor_for_run(v2, v1)
    return floor


class _Floors:
    """_floor_for, once per revision, hardware and configuration of one refresh: the floor depends on
    nothing else of a run, and a refresh judges thousands of runs on a few SKUs."""

    def __init__(self, catalogue: list[HardwareFacts]):
        self._catalogue = catalogue
        self._known: dict[tuple, float | None] = {}

    def floor_for(self, run: RunFacts, revision: WorkloadRevision) -> float | None:
        canonical = run.configuration_key == revision.canonical_configuration_key
        # Off the canonical configuration the floor is of the run's own bindings (their values as stored).
        bindings = () if canonical else tuple(sorted((k, repr(v)) for k, v in (run.bindings or {}).items()))
        key = (revision.id, run.environment.hardware.id, canonical, bindings)
        if key not in self._known:
            self._known[key] = _floor_for(run, revision, self._catalogue)
        return self._known[key]


def _cohorts(keys: list[CohortKey]) -> Any:
    """These cohorts as a derived table k(rev, cfg, proto, env) of four array parameters: four bound
    values however many cohorts (a tuple IN list binds four a cohort, and is compiled anew for each
    length), joined on ix_runs_cohort."""
    revs, cfgs, protos, envs = (list(column) for column in zip(*keys))
    return func.unnest(
        bindparam("cohort_revs", revs, type_=ARRAY(Integer), unique=True),
        bindparam("cohort_cfgs", cfgs, type_=ARRAY(Text), unique=True),
        bindparam("cohort_protos", protos, type_=ARRAY(Integer), unique=True),
        bindparam("cohort_envs", envs, type_=ARRAY(Integer), unique=True),
    ).table_valued("rev", "cfg", "proto", "env").render_derived(name="k")


def _append_bests(out: list[dict], key: CohortKey, workload_id: int, eligible: list[RunFacts], snapshot_of: dict[int, int]) -> None:
    by_impl: dict[int, list[RunFacts]] = defaultdict(list)
    for run in eligible:
        by_impl[run.implementation.id].append(run)
    for impl_id, runs in by_impl.items():
        best = min(runs, key=ranking.order_key)
        out.append({
            "workload_revision_id": key[0], "configuration_key": key[1], "protocol_id": key[2],
            "environment_id": key[3], "implementation_id": impl_id, "workload_id": workload_id,
            "hardware_id": best.environment.hardware.id, "run_id": best.id, "figure": best.figure,
            "observed_at": best.observed_at, "run_count": len(runs),
            "last_observed_at": max(r.observed_at for r in runs),
            "evidence_kinds": sorted({r.evidence for r in runs}),
            "source_snapshot_ids": sorted({snapshot_of[r.id] for r in runs}),
        })


async def _latest_events(session: AsyncSession, keys: list[CohortKey]) -> dict[CohortKey, tuple[int | None, float | None]]:
    """The standing holder of each cohort (run id and its mean) from the latest event."""
    cohort = _cohorts(keys)
    latest = (
        select(RecordEvent.workload_revision_id, RecordEvent.configuration_key, RecordEvent.protocol_id,
               RecordEvent.environment_id, RecordEvent.run_id)
        .join(cohort, and_(RecordEvent.workload_revision_id == cohort.c.rev, RecordEvent.configuration_key == cohort.c.cfg,
                           RecordEvent.protocol_id == cohort.c.proto, RecordEvent.environment_id == cohort.c.env))
        .where(RecordEvent.kind != REVISION_CHANGED)
        .ext(distinct_on(RecordEvent.workload_revision_id, RecordEvent.configuration_key, RecordEvent.protocol_id, RecordEvent.environment_id))
        .order_by(RecordEvent.workload_revision_id, RecordEvent.configuration_key, RecordEvent.protocol_id,
                  RecordEvent.environment_id, RecordEvent.id.desc())
        .subquery()
    )
    rows = (await session.execute(select(latest, Run.figure).outerjoin(Run, Run.id == latest.c.run_id))).all()
    return {(r[0], r[1], r[2], r[3]): (r[4], r[5]) for r in rows}
