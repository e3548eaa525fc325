"""Keeping the precomputed records (cohort_bests, and workload_sources derived from them), plausibility
flags and record history current.

Every write path (ingest batches, seed, KernelBench import, submitRuns, retractRun, reviews) calls
`refresh_cohorts` or `refresh_workloads` inside its own transaction, so a reader sees a batch's runs
and its records together or not at all. The judgement itself stays in kernelindex.rules:
plausibility decides the flags, ranking decides eligibility and order, history decides events.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from typing import Any

from sqlalchemy import BigInteger, and_, bindparam, delete, func, select, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.arrays import unnested
from kernelindex.db.copy import copy_rows, dict_rows
from kernelindex.db.models import CohortBest, Protocol, Run, RunFlag, Workload, WorkloadRevision
from kernelindex.db.scratch import SCRATCH, emptied
from kernelindex.rules import eligibility, plausibility, ranking
from kernelindex.rules import headroom_v1 as headroom
from kernelindex.rules.facts import HardwareFacts, RunFacts, WorkloadFacts
from kernelindex.rules.headroom_v2 import roofline_floor
from kernelindex.rules.history import (
    HISTORY_VERSION,
    NEW_RECORD,
    RESTORED,
    REVISION_CHANGED,
    EventDraft,
    events_for,
    improvement_percent,
)
from kernelindex.services.eligibility import not_held_sql
from kernelindex.services.facts import (
    COHORT_COLUMNS,
    CohortKey,
    FactsBuilder,
    NewRun,
    cohort_columns,
    load_catalogue,
    run_columns_statement,
    workload_facts,
)
from kernelindex.services.holds import load_holds

COHORTS_PER_CALL = 1000
_RUN_TABLE = Run.__table__.c
# The runs that compete for a record, in SQL text over runs r (_live_and_passed for SQLAlchemy statements).
_LIVE_PASSED = "r.superseded_at IS NULL AND r.retracted_at IS NULL AND r.status = 'passed'"


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
    history_only: that pass, as its definition (an import writes it with record_history, the same events
    found in SQL: tests/ingest/test_records_arrivals_deferred.py). Only the headline cohorts have a history, and every batch refreshed the
    flags and bests of the cohorts it touched in its own transaction, so the others are left as they
    are, unread (off the canonical configuration, or of another metric: most cohorts of an import).
    """
    now = now or datetime.now(UTC)
    summary, drafts = await _judge_cohorts(session, cohorts, now, arrived=arrived, events=events, history_only=history_only)
    await _write_events(session, drafts)
    return summary


def _event_rows(key: CohortKey, workload_id: int, now: datetime, drafts: Iterable[EventDraft]) -> list[dict]:
    """A cohort's new record events as record_events rows (EVENT_COLUMNS)."""
    return [{
        "workload_id": workload_id, "workload_revision_id": key[0], "configuration_key": key[1],
        "protocol_id": key[2], "environment_id": key[3], "kind": draft.kind, "run_id": draft.run_id,
        "previous_run_id": draft.previous_run_id, "improvement_percent": draft.improvement_percent,
        "rule_version": HISTORY_VERSION, "created_at": now,
    } for draft in drafts]


async def _write_events(session: AsyncSession, drafts: list[dict]) -> None:
    if drafts:
        await copy_rows(session, "record_events", EVENT_COLUMNS, dict_rows(drafts, EVENT_COLUMNS))


async def _judge_cohorts(
    session: AsyncSession, cohorts: Iterable[CohortKey], now: datetime, *,
    arrived: Collection[int], events: bool, history_only: bool = False, context: _RefreshContext | None = None,
) -> tuple[RefreshSummary, list[dict]]:
    """refresh_cohorts but for writing the events: returned (in cohort order), for the caller to write.
    `context`: one already loaded for (at least) these cohorts."""
    keys = sorted(set(cohorts))
    summary = RefreshSummary(cohorts=len(keys))
    if not keys:
        return summary, []
    if context is None:
        context = await _RefreshContext.load(session, keys)
    revisions, workloads, builder = context.revisions, context.workloads, context.builder
    if history_only:
        keys = [k for k in keys if context.is_headline(k)]
        summary.cohorts = len(keys)
        if not keys:
            return summary, []
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
            .where(*_live_and_passed())
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
    floors = context.floors
    for key in keys:
        revision = revisions.get(key[0])
        if revision is None:
            continue
        workload = workloads[revision.workload_id]
        facts_of_workload = context.workload_facts(revision)
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
        if not events or not context.is_headline(key):
            continue
        holder = latest.get(key)
        drafts += _event_rows(key, workload.id, now, events_for(
            holder[0] if holder else None, holder[1] if holder else None, sorted(eligible, key=ranking.order_key), arrived))
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
    summary.events = len(drafts)
    return summary, drafts


@dataclass
class _RefreshContext:
    """What judging the runs of some cohorts reads besides the runs: their revisions and workloads, the
    protocols' metrics and the hardware catalogue (for floors)."""

    revisions: dict[int, WorkloadRevision]
    workloads: dict[int, Workload]
    metric_of: dict[int, str]
    builder: FactsBuilder
    floors: _Floors
    _workload_facts: dict[int, WorkloadFacts] = field(default_factory=dict)

    @classmethod
    async def load(cls, session: AsyncSession, keys: list[CohortKey]) -> _RefreshContext:
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
        return cls(revisions, workloads, metric_of, builder, _Floors(catalogue))

    def workload_facts(self, revision: WorkloadRevision) -> WorkloadFacts:
        found = self._workload_facts.get(revision.id)
        if found is None:
            found = self._workload_facts[revision.id] = workload_facts(self.workloads[revision.workload_id], revision)
        return found

    def is_headline(self, key: CohortKey) -> bool:
        revision = self.revisions.get(key[0])
        return revision is not None and eligibility.is_headline_cohort(
            key[1], self.metric_of.get(key[2], ""), self.workload_facts(revision))


async def refresh_after_arrivals(
    session: AsyncSession, cohorts: Iterable[CohortKey], arrived: Mapping[int, NewRun] | Collection[int], *,
    left: Collection[CohortKey] = (), now: datetime | None = None, events: bool = True,
    storing: Callable[[], Awaitable[None]] | None = None, new_environments: Mapping[int, Mapping[str, Any]] | None = None,
) -> RefreshSummary:
    """The records of these cohorts after a write that added the runs `arrived` to them: the same
    flags, bests and events as refresh_cohorts, computed from the new runs and the stored bests
    instead of every run of each cohort.

    Exact because of what a write that only adds runs can change. Every stored run was judged against
    its cohort's baseline, and flags stay as history: a new baseline run can only lower the baseline's
    figure (it is the best baseline run), which raises no run's speedup, so no stored run gains a flag,
    no hold moves, and every stored run counts exactly as it did. The bests then only grow by the new
    eligible runs (kernelindex.rules.ranking.order_key decides the best; counts, instants, evidence and
    sources are unions), and so do the sources they name. A cohort where that does not hold is
    refreshed in full:
    - a run left it in this write (`left`: the cohorts of runs the write superseded);
    - it had no baseline before and one arrives (its stored runs were judged without one);
    - a below-floor flag judged under older rules is stored anywhere (refresh_cohorts judges it again).
    `arrived` maps each new run's id to the run as its writer holds it (NewRun): their facts are made
    from those values instead of being read back (kernelindex.services.facts.NewRun).
    With events=False (an import's batches) the delta is computed in SQL over the stored new runs (_SqlDelta),
    which reads no values: `arrived` may then be the new runs' ids alone.
    storing: the statement that stores the new runs, not run yet (a write's INSERT with its run ids
    planned: kernelindex.ingest.merge.PlannedInsert), awaited here before anything reads or names the new
    runs; the Python delta reads what its judgement needs first (stored rows only) and judges them while
    PostgreSQL inserts them. It may be awaited again (by the caller, for cohorts not refreshed here): it
    must run once however often it is awaited. None: the new runs are stored.
    new_environments: environments this write created, by id, with the columns it inserted
    (kernelindex.ingest.resolve.Resolver.new_environments): a cohort on one holds no stored run, best or
    event, so the Python delta reads none for it, nor the environment's row (a call of 1,000 records from
    1,000 new machines would otherwise look up 1,000 cohorts' stored state, find none, and read back the
    1,000 rows it had just written).
    Kept equal to refresh_cohorts by tests/ingest/test_records_arrivals.py and, for the SQL delta,
    test_records_arrivals_deferred.py, on random writes."""
    if events and not isinstance(arrived, Mapping):
        raise TypeError("refresh_after_arrivals with events judges the new runs from their values: arrived must map ids to NewRun")

    async def stored() -> None:
        if storing is not None:
            await storing()

    now = now or datetime.now(UTC)
    keys = sorted(set(cohorts))
    summary = RefreshSummary(cohorts=len(keys))
    if not keys:
        await stored()
        return summary
    full = set(keys) & set(left)
    if (await session.execute(_STALE_FLAGS, {"stale": sorted(plausibility.STALE_FLOOR_VERSIONS)})).scalar_one():
        full = set(keys)
    delta = [k for k in keys if k not in full]
    drafts: list[dict] = []
    # One context for every cohort, whichever path judges it (a cohort the delta sends to the full path
    # is read once).
    context = await _RefreshContext.load(session, keys)
    if delta and not events:
        # An import's batches (their history deferred to its end): flags and bests in SQL, over the
        # new runs where they are stored (_SqlDelta).
        await stored()
        more_full, flagged = await _SqlDelta(session, context, delta, arrived).refresh()
        full |= more_full
        summary.flagged_runs += flagged
    elif delta:
        assert isinstance(arrived, Mapping)  # checked above
        state = await _DeltaState.load(session, context, delta, arrived, events=events, new_environments=new_environments)
        judge = partial(_judge_delta, context, state, delta, arrived, now)
        judged = judge() if storing is None else await _judged_while_storing(judge, stored)
        need_full = await _need_full(session, state, judged.first, arrived)
        full |= need_full
        part, made = await _write_delta(session, state, judged, [k for k in delta if k not in need_full])
        summary.flagged_runs += part.flagged_runs
        drafts += made
    await stored()
    if full:
        part, made = await _judge_cohorts(session, sorted(full), now, arrived=arrived, events=events, context=context)
        summary.flagged_runs += part.flagged_runs
        drafts += made
    # In cohort order, as one refresh_cohorts over them all writes them (a stable sort keeps each
    # cohort's own order), so the history's ids do not depend on which cohorts were judged in full.
    drafts.sort(key=lambda d: (d["workload_revision_id"], d["configuration_key"], d["protocol_id"], d["environment_id"]))
    await _write_events(session, drafts)
    summary.events = len(drafts)
    return summary


_STALE_FLAGS = text(
    f"SELECT EXISTS (SELECT 1 FROM run_flags WHERE code = '{plausibility.BELOW_FLOOR}' "
    "AND rule_version = ANY(CAST(:stale AS text[])))"
)
_BASELINE_IMPLEMENTATIONS = text("SELECT id FROM implementations WHERE role = 'baseline'")
_OUTDATED_SNAPSHOTS = text("SELECT id FROM source_snapshots WHERE outdated")
# The stored bests of some cohorts (every implementation), as the refresh writes them (BEST_COLUMNS).
_STORED_BESTS = (
    "SELECT {columns} FROM cohort_bests b JOIN unnest(CAST(:revs AS int[]), CAST(:cfgs AS text[]), "
    "CAST(:protos AS int[]), CAST(:envs AS int[])) AS k(rev, cfg, proto, env) ON b.workload_revision_id = k.rev "
    "AND b.configuration_key = k.cfg AND b.protocol_id = k.proto AND b.environment_id = k.env"
)
# The best baseline run of each cohort in a snapshot that is no longer its source's newest: not in the
# bests (it counts for no record) but still its cohort's baseline, as refresh_cohorts takes it.
_OUTDATED_BASELINES = text(
    "SELECT DISTINCT ON (r.workload_revision_id, r.configuration_key, r.protocol_id, r.environment_id) "
    "r.workload_revision_id, r.configuration_key, r.protocol_id, r.environment_id, r.id, r.figure, r.observed_at "
    "FROM runs r JOIN unnest(CAST(:revs AS int[]), CAST(:cfgs AS text[]), CAST(:protos AS int[]), CAST(:envs AS int[])) "
    "AS k(rev, cfg, proto, env) ON r.workload_revision_id = k.rev AND r.configuration_key = k.cfg "
    "AND r.protocol_id = k.proto AND r.environment_id = k.env "
    f"WHERE {_LIVE_PASSED} "
    "AND r.implementation_id = ANY(CAST(:impls AS int[])) AND r.source_snapshot_id = ANY(CAST(:snapshots AS bigint[])) "
    "AND r.id <> ALL(CAST(:arrived AS bigint[])) "
    "ORDER BY r.workload_revision_id, r.configuration_key, r.protocol_id, r.environment_id, r.figure, r.observed_at, r.id"
)
# The cohorts with a stored run (not a baseline's) faster than a bound: one probe of ix_runs_cohort_top a
# cohort (a LATERAL subquery with a LIMIT, whatever the statistics say). As an EXISTS, a young index's
# statistics (runs thought to hold a few rows: no ANALYZE yet) had PostgreSQL hash every passed run of the
# index, each tested against every arrived id: 50 ms of a submitRuns call 20,000 runs into a new index,
# and growing with it.
_LEAST_FIGURE = 1e-06  # the index expression's clamp, as migration 0010 wrote it
_FAST_BESIDE_FIRST_BASELINE = text(
    "SELECT k.rev, k.cfg, k.proto, k.env FROM unnest(CAST(:revs AS int[]), CAST(:cfgs AS text[]), CAST(:protos AS int[]), "
    "CAST(:envs AS int[]), CAST(:bounds AS float8[])) AS k(rev, cfg, proto, env, bound) CROSS JOIN LATERAL (SELECT 1 FROM runs r "
    "WHERE r.workload_revision_id = k.rev AND r.configuration_key = k.cfg AND r.protocol_id = k.proto "
    f"AND r.environment_id = k.env AND {_LIVE_PASSED} "
    "AND least(greatest(r.figure, '1e-06'::double precision), '86400000'::double precision) < k.bound "
    "AND r.implementation_id <> ALL(CAST(:impls AS int[])) AND r.id <> ALL(CAST(:arrived AS bigint[])) LIMIT 1) fast"
)
# A snapshot's source name and revision, by its id: a lateral look-up by primary key, whatever the
# statistics say. Joined as a set, a young database's stale ones (a source thought to have 9 snapshots
# when it has thousands, as a producer that stamps each run with its own revision makes) had PostgreSQL
# hash every snapshot of the source for each row: 3.8 s for 4,000 rows (a draft of _GROW_BESTS) where
# this takes milliseconds.
_SNAPSHOT_BY_ID = "SELECT s.name, ss.revision FROM source_snapshots ss JOIN sources s ON s.id = ss.source_id WHERE ss.id = {sid}"
# The (revision, configuration) pairs' sources, grown by the snapshots the new runs' bests name (a
# stored best's are there already): nothing is removed (a write that only adds runs removes no best),
# so no pair's rows are recomputed.
_ADD_SOURCES = text(
    "INSERT INTO workload_sources (workload_revision_id, configuration_key, source_snapshot_id, workload_id, source_name, "
    "snapshot_revision) SELECT v.rev, v.cfg, v.sid, v.workload_id, x.name, x.revision "
    "FROM unnest(CAST(:revs AS int[]), CAST(:cfgs AS text[]), CAST(:sids AS bigint[]), CAST(:workloads AS int[])) "
    f"AS v(rev, cfg, sid, workload_id) CROSS JOIN LATERAL ({_SNAPSHOT_BY_ID.format(sid='v.sid')}) x "
    "ON CONFLICT DO NOTHING"
)


_Ranked = tuple[float, datetime, int]  # ranking.order_key of a run: (figure, observed_at, id)


@dataclass
class _DeltaState:
    """What the Python delta reads before it judges: stored rows only (none of the new runs, so it may be
    read before they are inserted). The new runs that compete, with their dimensions loaded; the cohorts'
    stored bests and the best baseline each had before (its order key); the headline cohorts' standing
    holders (latest events); and the facts and holds of the stored runs the judgement reads."""

    passed: list[NewRun]
    stored: dict[CohortKey, dict[int, dict[str, Any]]]  # cohort → implementation → its stored best row
    baseline_before: dict[CohortKey, _Ranked]
    baseline_implementations: set[int]
    headline: set[CohortKey]
    latest: dict[CohortKey, tuple[int | None, float | None]]
    top_before: dict[CohortKey, int | None]
    stored_facts: dict[int, RunFacts]
    holds: dict[int, Any]
    unread: set[CohortKey]  # the cohorts on an environment this write created: nothing stored was read (none is there)

    @classmethod
    async def load(
        cls, session: AsyncSession, context: _RefreshContext, keys: list[CohortKey], arrived: Mapping[int, NewRun], *,
        events: bool, new_environments: Mapping[int, Mapping[str, Any]] | None = None,
    ) -> _DeltaState:
        # A run written by this very write is live (neither superseded nor retracted yet): only its status decides.
        passed = [run for run in arrived.values() if run.values.status == "passed"]
        fresh = new_environments or {}
        context.builder.know_environments(fresh)
        await context.builder.load_dimensions(session, passed)
        unread = {k for k in keys if k[3] in fresh}
        read = [k for k in keys if k not in unread]
        columns = cohort_columns(read)
        stored: dict[CohortKey, dict[int, dict[str, Any]]] = defaultdict(dict)
        best_rows = (await session.execute(
            text(_STORED_BESTS.format(columns=", ".join(f"b.{c}" for c in BEST_COLUMNS))), columns)).all() if read else []
        for row in best_rows:
            best = dict(zip(BEST_COLUMNS, row, strict=True))
            stored[(best["workload_revision_id"], best["configuration_key"], best["protocol_id"], best["environment_id"])][
                best["implementation_id"]] = best
        baselines = set((await session.execute(_BASELINE_IMPLEMENTATIONS)).scalars().all())
        before: dict[CohortKey, _Ranked] = {}
        for key, by_impl in stored.items():
            ranked = [(b["figure"], b["observed_at"], b["run_id"]) for impl, b in by_impl.items() if impl in baselines]
            if ranked:
                before[key] = min(ranked)
        outdated = (await session.execute(_OUTDATED_SNAPSHOTS)).scalars().all() if read else []
        if outdated and baselines:
            for rev, cfg, proto, env, run_id, figure, observed_at in (await session.execute(_OUTDATED_BASELINES, {
                **columns, "impls": sorted(baselines), "snapshots": list(outdated), "arrived": sorted(arrived),
            })).all():
                key = (rev, cfg, proto, env)
                if key not in before or (figure, observed_at, run_id) < before[key]:
                    before[key] = (figure, observed_at, run_id)
        headline = {k for k in keys if events and context.is_headline(k)}
        latest = await _latest_events(session, sorted(headline - unread)) if headline - unread else {}
        # The stored runs the judgement reads: each cohort's baseline before and, for events, the standing
        # holder and the stored top (the fastest of the cohort's stored eligible runs: its fastest best).
        top_before = {key: _stored_top(stored.get(key, {})) for key in headline}
        wanted = {before[k][2] for k in keys if k in before}
        wanted |= {holder for k in headline if (holder := latest.get(k, (None, None))[0]) is not None}
        wanted |= {top for top in top_before.values() if top is not None}
        stored_facts = {facts.id: facts for facts in await _live_runs_by_id(session, context.builder, wanted)}
        # Only stored runs are judged by their holds (new runs have none yet): none stored, nothing to read.
        holds = await load_holds(session, sorted(stored_facts)) if headline and stored_facts else {}
        return cls(passed, stored, before, baselines, headline, latest, top_before, stored_facts, holds, unread)


@dataclass
class _DeltaVerdict:
    """What the Python delta decides for one cohort: the flags its new runs earn, its fresh bests (every
    implementation with a new eligible run), the sources they name and its new events."""

    flags: list[dict] = field(default_factory=list)
    fresh: list[dict] = field(default_factory=list)
    named: set[tuple[int, str, int, int]] = field(default_factory=set)
    drafts: list[dict] = field(default_factory=list)


@dataclass
class _DeltaJudged:
    """The Python delta's verdicts by cohort, and the cohorts given their first baseline with the bound a
    stored run must beat to be judged in full (_need_full)."""

    verdicts: dict[CohortKey, _DeltaVerdict]
    first: dict[CohortKey, float]


def _judge_delta(context: _RefreshContext, state: _DeltaState, keys: list[CohortKey], arrived: Collection[int], now: datetime) -> _DeltaJudged:
    """Judge the new runs of these cohorts from what state read (no statement: a function of its inputs,
    run in a worker thread while the new runs are inserted; refresh_after_arrivals)."""
    wanted = set(keys)
    runs: dict[CohortKey, list[RunFacts]] = defaultdict(list)
    for facts in _arrived_facts(context.builder, state.passed):
        if facts.cohort_key in wanted:
            runs[facts.cohort_key].append(facts)
    # A cohort whose stored runs were judged without a baseline, now given one, is judged in full
    # when any stored run could be implausibly fast beside it (a margin of two on the rule's ratio;
    # at ix_runs_cohort_top's clamped figure, which stored figures never leave): usually none is.
    first: dict[CohortKey, float] = {}
    for key in keys:
        figures = [r.figure for r in runs.get(key, ()) if r.implementation.is_baseline and r.figure is not None]
        if key not in state.baseline_before and figures:
            first[key] = min(figures) / (plausibility.MAX_PLAUSIBLE_SPEEDUP / 2)
    verdicts: dict[CohortKey, _DeltaVerdict] = {}
    for key in keys:
        revision = context.revisions.get(key[0])
        cohort_runs = runs.get(key, [])
        if revision is None or not cohort_runs:
            continue
        verdict = verdicts[key] = _DeltaVerdict()
        workload = context.workloads[revision.workload_id]
        facts_of_workload = context.workload_facts(revision)
        baseline = min(
            [r for r in cohort_runs if r.implementation.is_baseline]
            + ([state.stored_facts[state.baseline_before[key][2]]] if key in state.baseline_before else []),
            key=ranking.order_key, default=None,
        )
        judged: list[RunFacts] = []
        for run in cohort_runs:  # new runs: no flag or review is stored for them yet
            found = plausibility.flags_for(run, baseline, context.floors.floor_for(run, revision))
            for flag in found:
                verdict.flags.append({"run_id": run.id, "code": flag.code, "reason": flag.detail,
                                      "rule_version": plausibility.PLAUSIBILITY_VERSION})
            held = plausibility.is_held_for_review(plausibility.holding_flags(run, found), ())
            judged.append(replace(run, held_for_review=held) if run.held_for_review != held else run)
        eligible = eligibility.eligible_in_cohort(judged, facts_of_workload)
        _append_bests(verdict.fresh, key, workload.id, eligible, {r.id: r.source.id for r in eligible})
        verdict.named = {(best["workload_revision_id"], best["configuration_key"], sid, best["workload_id"])
                         for best in verdict.fresh for sid in best["source_snapshot_ids"]}
        if key not in state.headline:
            continue
        holder_id, holder_mean = state.latest.get(key, (None, None))
        # The cohort's eligible runs as events_for reads them: the new ones, the stored top and the
        # standing holder while it still counts (judged as refresh_cohorts judges a stored run).
        holds = state.holds
        counted = [
            r for r in (state.stored_facts.get(i) for i in {holder_id, state.top_before[key]} if i is not None) if r is not None
            and eligibility.cohort_ineligibility_reason(replace(r, held_for_review=plausibility.is_held_for_review(
                plausibility.holding_flags(r, holds[r.id].flags), holds[r.id].reviews)), facts_of_workload) is None
        ]
        by_id = {r.id: r for r in eligible + counted}
        verdict.drafts = _event_rows(key, workload.id, now, events_for(
            holder_id, holder_mean, sorted(by_id.values(), key=ranking.order_key), arrived))
    return _DeltaJudged(verdicts, first)


async def _judged_while_storing(judge: Callable[[], _DeltaJudged], storing: Callable[[], Awaitable[None]]) -> _DeltaJudged:
    """judge() in a worker thread while storing() runs its statement on the session: PostgreSQL inserts
    the new runs while Python judges them (each side otherwise waits for the other, and a submitRuns call
    of 1,000 new records spent ~35 ms in each). The statement always ends before this returns or raises,
    so the session is never left with a statement in flight; its error, if any, is the one raised."""
    store = asyncio.ensure_future(storing())
    try:
        return await asyncio.to_thread(judge)
    finally:
        await asyncio.wait([store])
        if not store.cancelled() and (error := store.exception()) is not None:
            raise error


async def _need_full(
    session: AsyncSession, state: _DeltaState, first: dict[CohortKey, float], arrived: Collection[int],
) -> set[CohortKey]:
    """The cohorts given their first baseline in which a stored run could be implausibly fast beside it
    (see _judge_delta): judged in full. Reads stored runs only (the new ones by id excluded)."""
    need_full = {key for key, bound in first.items() if bound <= _LEAST_FIGURE}
    # A cohort with no stored run (on an environment this write created) has none to be fast.
    asked = sorted(key for key in first if key not in need_full and key not in state.unread)
    if asked:
        need_full |= {(r[0], r[1], r[2], r[3]) for r in (await session.execute(_FAST_BESIDE_FIRST_BASELINE, {
            **cohort_columns(asked), "bounds": [first[k] for k in asked], "impls": sorted(state.baseline_implementations),
            "arrived": sorted(arrived),
        })).all()}
    return need_full


async def _write_delta(
    session: AsyncSession, state: _DeltaState, judged: _DeltaJudged, keys: list[CohortKey],
) -> tuple[RefreshSummary, list[dict]]:
    """The Python delta's verdicts for these cohorts (those it judges: not in full) written: the flags,
    the bests and the sources they name; the events returned, in cohort order, for the caller to write."""
    summary = RefreshSummary()
    new_flags: list[dict] = []
    changed: list[dict] = []  # bests that replace a stored one
    added: list[dict] = []  # bests of an implementation the cohort had none of
    # The (revision, configuration, snapshot, workload) the new runs' bests name: the only sources that
    # can be new (a stored best's are in workload_sources already).
    named: set[tuple[int, str, int, int]] = set()
    drafts: list[dict] = []
    for key in keys:
        verdict = judged.verdicts.get(key)
        if verdict is None:
            continue
        new_flags += verdict.flags
        summary.flagged_runs += [flag["run_id"] for flag in verdict.flags]
        named |= verdict.named
        stored = state.stored.get(key, {})
        for best in verdict.fresh:
            before = stored.get(best["implementation_id"])
            if before is None:
                added.append(best)
            else:
                changed.append(_merged_best(before, best))
        drafts += verdict.drafts
    if new_flags:
        await session.execute(pg_insert(RunFlag).on_conflict_do_nothing(index_elements=["run_id", "code"]), new_flags)
    if added:
        # None of these is stored (the cohorts' bests were read above, under the index's write lock, which
        # every writer of cohort_bests holds): straight into the table, without the upsert's staging.
        await copy_rows(session, "cohort_bests", BEST_COLUMNS, dict_rows(added, BEST_COLUMNS))
    if changed:
        for statement in _CREATE_REFRESH_BESTS:
            await session.execute(text(statement))
        await copy_rows(session, "refresh_bests", BEST_COLUMNS, dict_rows(changed, BEST_COLUMNS))
        await session.execute(_UPSERT_BESTS)
    if named:
        rows = sorted(named)
        await session.execute(_ADD_SOURCES, {
            "revs": [a[0] for a in rows], "cfgs": [a[1] for a in rows], "sids": [a[2] for a in rows],
            "workloads": [a[3] for a in rows],
        })
    summary.events = len(drafts)
    return summary, drafts


# -- the delta refresh of an import's batch, in SQL ----------------------------------------------------
#
# What _DeltaState.load, _judge_delta and _write_delta do for cohorts whose events are deferred, as statements over the
# new runs where the merge stored them: no facts are built for the runs that raise no flag. The new runs
# that compete (passed) are gathered into a temporary table with what judging them reads; each cohort's
# baseline (its best baseline run among the new ones and the stored one: the fastest baseline best, or an
# outdated snapshot's best baseline run) and whether it must be judged in full (a first baseline beside a
# stored run it could make implausible) are set by one statement; the runs that could earn a flag are
# judged by plausibility.flags_for itself (few: implausible runs); the bests grow by the others in one upsert.
# Floors are computed in Python once per (revision, hardware, configuration, bindings) the runs name.

_DELTA_TABLES = (
    "CREATE TEMPORARY TABLE IF NOT EXISTS delta_runs (id bigint PRIMARY KEY, rev int, cfg text, proto int, env int, "
    "impl int, workload_id int, hardware_id int, snapshot_id bigint, figure float8, observed_at timestamptz, evidence text, "
    f"base bool, latency bool, checked bool, counts bool, bindings jsonb, bkey text, floor float8) {SCRATCH}",
    "CREATE TEMPORARY TABLE IF NOT EXISTS delta_cohorts (rev int, cfg text, proto int, env int, base_id bigint, "
    f"base_figure float8, full_refresh bool, PRIMARY KEY (rev, cfg, proto, env)) {SCRATCH}",
    emptied("delta_runs", "delta_cohorts"),
)
# readable(): NaN and None are none, anything else held to measurements-v1's bounds.
_READABLE_FIGURE = (
    "CASE WHEN r.figure IS NULL OR r.figure = 'NaN'::float8 THEN NULL "
    "ELSE least(greatest(r.figure, '1e-06'::float8), '86400000'::float8) END"
)
# The new runs of these cohorts that compete for a record (passed: they are live, being new).
_DELTA_RUNS = text(
    "INSERT INTO delta_runs SELECT r.id, r.workload_revision_id, r.configuration_key, r.protocol_id, r.environment_id, "
    f"r.implementation_id, wr.workload_id, e.hardware_id, r.source_snapshot_id, {_READABLE_FIGURE}, r.observed_at, "
    "r.evidence, i.role = 'baseline', p.metric = 'latency', "
    "coalesce(jsonb_typeof(r.correctness) = 'object' AND r.correctness -> 'passed' = 'true'::jsonb, false), "
    "NOT ss.outdated AND r.workload_revision_id = w.current_revision_id, r.bindings, r.bindings::text, NULL "
    "FROM runs r JOIN unnest(CAST(:revs AS int[]), CAST(:cfgs AS text[]), CAST(:protos AS int[]), CAST(:envs AS int[])) "
    "AS k(rev, cfg, proto, env) ON r.workload_revision_id = k.rev AND r.configuration_key = k.cfg "
    "AND r.protocol_id = k.proto AND r.environment_id = k.env "
    "JOIN implementations i ON i.id = r.implementation_id JOIN protocols p ON p.id = r.protocol_id "
    "JOIN environments e ON e.id = r.environment_id JOIN source_snapshots ss ON ss.id = r.source_snapshot_id "
    "JOIN workload_revisions wr ON wr.id = r.workload_revision_id JOIN workloads w ON w.id = wr.workload_id "
    # The ids as an array the index is probed with (a join on them scanned the runs' key from its start).
    "WHERE r.id = ANY(CAST(:ids AS bigint[])) AND r.status = 'passed'"
)
# The runs a floor can flag (flags_for: a latency figure of a run that is not a baseline and whose
# correctness check did not pass), one row per floor they are judged against.
_FLOOR_KEYS = text(
    "SELECT DISTINCT ON (rev, hardware_id, cfg, bkey) rev, hardware_id, cfg, bkey, bindings FROM delta_runs "
    "WHERE latency AND NOT base AND NOT checked AND figure IS NOT NULL"
)
_SET_FLOORS = text(
    "UPDATE delta_runs d SET floor = v.floor FROM unnest(CAST(:revs AS int[]), CAST(:hws AS int[]), CAST(:cfgs AS text[]), "
    "CAST(:bkeys AS text[]), CAST(:floors AS float8[])) AS v(rev, hw, cfg, bkey, floor) "
    "WHERE d.rev = v.rev AND d.hardware_id = v.hw AND d.cfg = v.cfg AND d.bkey = v.bkey "
    "AND d.latency AND NOT d.base AND NOT d.checked AND d.figure IS NOT NULL"
)
# Each cohort's baseline and whether it is judged in full (_DeltaState.load and _need_full, in one statement). The stored
# baseline: the fastest of the cohort's baseline bests and of its outdated snapshots' baseline runs (by
# their stored order key), read back as a live run; the cohort's baseline: the faster of it and the
# best new baseline run. A cohort without a stored baseline given one is judged in full when a stored
# run could be implausibly fast beside it (_FAST_BESIDE_FIRST_BASELINE).
_DELTA_COHORTS = text(f"""
WITH k AS (SELECT DISTINCT rev, cfg, proto, env FROM delta_runs),
stored AS (
    SELECT k.rev, k.cfg, k.proto, k.env, s.run_id FROM k CROSS JOIN LATERAL (
        SELECT b.run_id, b.figure, b.observed_at FROM cohort_bests b
          JOIN implementations i ON i.id = b.implementation_id AND i.role = 'baseline'
         WHERE b.workload_revision_id = k.rev AND b.configuration_key = k.cfg AND b.protocol_id = k.proto
           AND b.environment_id = k.env
        UNION ALL
        SELECT r.id, r.figure, r.observed_at FROM runs r
          JOIN implementations i ON i.id = r.implementation_id AND i.role = 'baseline'
         WHERE EXISTS (SELECT 1 FROM source_snapshots WHERE outdated)
           AND r.workload_revision_id = k.rev AND r.configuration_key = k.cfg AND r.protocol_id = k.proto
           AND r.environment_id = k.env AND {_LIVE_PASSED} AND r.id <> ALL(CAST(:arrived AS bigint[]))
           AND r.source_snapshot_id IN (SELECT id FROM source_snapshots WHERE outdated)
        ORDER BY 2, 3, 1 LIMIT 1
    ) s
),
stored_run AS (
    SELECT s.rev, s.cfg, s.proto, s.env, r.id, {_READABLE_FIGURE} AS figure, r.observed_at FROM stored s
      JOIN runs r ON r.id = s.run_id WHERE {_LIVE_PASSED}
),
fresh AS (
    SELECT DISTINCT ON (rev, cfg, proto, env) rev, cfg, proto, env, id, figure, observed_at FROM delta_runs
     WHERE base ORDER BY rev, cfg, proto, env, figure, observed_at, id
),
baseline AS (
    SELECT DISTINCT ON (rev, cfg, proto, env) rev, cfg, proto, env, id, figure FROM (
        SELECT * FROM fresh UNION ALL SELECT * FROM stored_run
    ) u ORDER BY rev, cfg, proto, env, figure, observed_at, id
),
first AS (
    SELECT f.rev, f.cfg, f.proto, f.env, f.figure / :half_ratio AS bound FROM fresh f
     WHERE f.figure IS NOT NULL AND NOT EXISTS (SELECT 1 FROM stored s WHERE s.rev = f.rev AND s.cfg = f.cfg
                                                AND s.proto = f.proto AND s.env = f.env)
)
INSERT INTO delta_cohorts
SELECT k.rev, k.cfg, k.proto, k.env, b.id, b.figure,
       f.bound IS NOT NULL AND (f.bound <= :least_figure OR EXISTS (
           SELECT 1 FROM runs r WHERE r.workload_revision_id = k.rev AND r.configuration_key = k.cfg
              AND r.protocol_id = k.proto AND r.environment_id = k.env AND {_LIVE_PASSED}
              AND least(greatest(r.figure, '1e-06'::double precision), '86400000'::double precision) < f.bound
              AND r.implementation_id NOT IN (SELECT id FROM implementations WHERE role = 'baseline')
              AND r.id <> ALL(CAST(:arrived AS bigint[]))))
  FROM k LEFT JOIN baseline b ON b.rev = k.rev AND b.cfg = k.cfg AND b.proto = k.proto AND b.env = k.env
  LEFT JOIN first f ON f.rev = k.rev AND f.cfg = k.cfg AND f.proto = k.proto AND f.env = k.env
RETURNING rev, cfg, proto, env, full_refresh
""")
# The new runs plausibility.flags_for could flag (its conditions, as SQL), with their cohort's baseline
# and floor: judged by flags_for itself.
_FLAG_CANDIDATES = text(
    "SELECT d.id, c.base_id, d.floor FROM delta_runs d JOIN delta_cohorts c ON c.rev = d.rev AND c.cfg = d.cfg "
    "AND c.proto = d.proto AND c.env = d.env WHERE NOT c.full_refresh AND NOT d.base AND d.figure IS NOT NULL AND ("
    "(d.latency AND d.floor > 0 AND d.figure * '1e6'::float8 < d.floor AND NOT d.checked) "
    "OR (c.base_id IS NOT NULL AND c.base_id <> d.id AND c.base_figure IS NOT NULL AND d.figure > 0 "
    "AND c.base_figure / d.figure > :max_ratio)) "
    "ORDER BY d.rev, d.cfg COLLATE \"C\", d.proto, d.env, d.id"
)
# The bests grown by the new runs that count (_append_bests of them, _merged_best with the stored best),
# and the sources they name (_ADD_SOURCES): one statement. Only the new runs' snapshots can be new to
# workload_sources (a stored best's are there already), so those are all it adds: the bests' whole
# lists grow with every batch (a producer that stamps each run with its own revision), and adding
# them all again made each batch cost more than the last. `grown` runs to completion unread.
_GROW_BESTS = text(f"""
WITH counted AS (
    SELECT d.* FROM delta_runs d JOIN delta_cohorts c ON c.rev = d.rev AND c.cfg = d.cfg AND c.proto = d.proto
       AND c.env = d.env
     WHERE NOT c.full_refresh AND d.counts AND d.id <> ALL(CAST(:held AS bigint[]))
),
fresh AS (
    SELECT rev, cfg, proto, env, impl,
           (array_agg(workload_id ORDER BY figure, observed_at, id))[1] AS workload_id,
           (array_agg(hardware_id ORDER BY figure, observed_at, id))[1] AS hardware_id,
           (array_agg(id ORDER BY figure, observed_at, id))[1] AS run_id,
           (array_agg(figure ORDER BY figure, observed_at, id))[1] AS figure,
           (array_agg(observed_at ORDER BY figure, observed_at, id))[1] AS observed_at,
           count(*)::int AS run_count, max(observed_at) AS last_observed_at,
           array_agg(DISTINCT evidence COLLATE "C" ORDER BY evidence COLLATE "C") AS evidence_kinds,
           array_agg(DISTINCT snapshot_id ORDER BY snapshot_id) AS source_snapshot_ids
      FROM counted GROUP BY rev, cfg, proto, env, impl
),
grown AS (
    INSERT INTO cohort_bests AS b (workload_revision_id, configuration_key, protocol_id, environment_id, implementation_id,
                                   workload_id, hardware_id, run_id, figure, observed_at, run_count, last_observed_at,
                                   evidence_kinds, source_snapshot_ids)
    SELECT rev, cfg, proto, env, impl, workload_id, hardware_id, run_id, figure, observed_at, run_count, last_observed_at,
           evidence_kinds, source_snapshot_ids FROM fresh
    ON CONFLICT (workload_revision_id, configuration_key, protocol_id, environment_id, implementation_id) DO UPDATE SET
        workload_id = CASE WHEN (excluded.figure, excluded.observed_at, excluded.run_id) < (b.figure, b.observed_at, b.run_id)
                           THEN excluded.workload_id ELSE b.workload_id END,
        hardware_id = CASE WHEN (excluded.figure, excluded.observed_at, excluded.run_id) < (b.figure, b.observed_at, b.run_id)
                           THEN excluded.hardware_id ELSE b.hardware_id END,
        run_id = CASE WHEN (excluded.figure, excluded.observed_at, excluded.run_id) < (b.figure, b.observed_at, b.run_id)
                      THEN excluded.run_id ELSE b.run_id END,
        figure = CASE WHEN (excluded.figure, excluded.observed_at, excluded.run_id) < (b.figure, b.observed_at, b.run_id)
                      THEN excluded.figure ELSE b.figure END,
        observed_at = CASE WHEN (excluded.figure, excluded.observed_at, excluded.run_id) < (b.figure, b.observed_at, b.run_id)
                           THEN excluded.observed_at ELSE b.observed_at END,
        run_count = b.run_count + excluded.run_count,
        last_observed_at = greatest(b.last_observed_at, excluded.last_observed_at),
        evidence_kinds = ARRAY(SELECT DISTINCT u.x COLLATE "C" FROM unnest(b.evidence_kinds || excluded.evidence_kinds) AS u(x)
                               ORDER BY 1),
        source_snapshot_ids = ARRAY(SELECT DISTINCT u.x FROM unnest(b.source_snapshot_ids || excluded.source_snapshot_ids)
                                    AS u(x) ORDER BY 1)
)
INSERT INTO workload_sources (workload_revision_id, configuration_key, source_snapshot_id, workload_id, source_name,
                              snapshot_revision)
SELECT n.rev, n.cfg, n.sid, n.workload_id, x.name, x.revision
  FROM (SELECT DISTINCT f.rev, f.cfg, u.sid, f.workload_id FROM fresh f CROSS JOIN LATERAL unnest(f.source_snapshot_ids) AS u(sid)) n
  CROSS JOIN LATERAL ({_SNAPSHOT_BY_ID.format(sid="n.sid")}) x
ON CONFLICT DO NOTHING
""")


class _FloorRun:
    """What _Floors.floor_for reads of a run: its configuration, bindings and hardware."""

    __slots__ = ("configuration_key", "bindings", "environment", "hardware")

    def __init__(self, configuration_key: str, bindings: Any, hardware: HardwareFacts):
        self.configuration_key = configuration_key
        self.bindings = bindings
        self.hardware = hardware
        self.environment = self


class _SqlDelta:
    """refresh_after_arrivals' delta for cohorts whose events are deferred (see _DELTA_RUNS above)."""

    def __init__(self, session: AsyncSession, context: _RefreshContext, keys: list[CohortKey], arrived: Collection[int]):
        self.session, self.context, self.keys, self.arrived = session, context, keys, arrived

    async def refresh(self) -> tuple[set[CohortKey], list[int]]:
        """Flags and bests of the cohorts that need no full judgement: those that do, and the runs flagged."""
        session = self.session
        for statement in _DELTA_TABLES:
            await session.execute(text(statement))
        ids = sorted(self.arrived)
        await session.execute(_DELTA_RUNS, {"ids": ids, **cohort_columns(self.keys)})
        await self._floors()
        verdicts = (await session.execute(_DELTA_COHORTS, {
            "arrived": ids, "half_ratio": plausibility.MAX_PLAUSIBLE_SPEEDUP / 2, "least_figure": _LEAST_FIGURE,
        })).all()
        full = {(r[0], r[1], r[2], r[3]) for r in verdicts if r[4]}
        new_flags, flagged = await self._flags()
        if new_flags:
            await session.execute(pg_insert(RunFlag).on_conflict_do_nothing(index_elements=["run_id", "code"]), new_flags)
        await session.execute(_GROW_BESTS, {"held": sorted(set(flagged))})
        return full, flagged

    async def _floors(self) -> None:
        """Each floor the new runs can be judged against, once (_Floors), set on the runs it judges."""
        rows = (await self.session.execute(_FLOOR_KEYS)).all()
        if not rows:
            return
        hardware = self.context.floors.hardware()
        revisions = self.context.revisions
        floors = [self.context.floors.floor_for(_FloorRun(cfg, bindings, hardware[hw]), revisions[rev])  # type: ignore[arg-type]
                  for rev, hw, cfg, _, bindings in rows]
        await self.session.execute(_SET_FLOORS, {
            "revs": [r[0] for r in rows], "hws": [r[1] for r in rows], "cfgs": [r[2] for r in rows],
            "bkeys": [r[3] for r in rows], "floors": floors,
        })

    async def _flags(self) -> tuple[list[dict], list[int]]:
        """The flags of the new runs that could earn one, from plausibility.flags_for on their facts, in
        cohort order (as _write_delta returns them)."""
        candidates = (await self.session.execute(_FLAG_CANDIDATES, {"max_ratio": plausibility.MAX_PLAUSIBLE_SPEEDUP})).all()
        if not candidates:
            return [], []
        wanted = {row[0] for row in candidates} | {row[1] for row in candidates if row[1] is not None}
        facts = {f.id: f for f in await _live_runs_by_id(self.session, self.context.builder, wanted)}
        new_flags: list[dict] = []
        flagged: list[int] = []
        for run_id, baseline_id, floor_ns in candidates:
            run = facts[run_id]
            for flag in plausibility.flags_for(run, facts.get(baseline_id) if baseline_id is not None else None, floor_ns):
                new_flags.append({"run_id": run.id, "code": flag.code, "reason": flag.detail,
                                  "rule_version": plausibility.PLAUSIBILITY_VERSION})
                flagged.append(run.id)
        return new_flags, flagged


# -- an import's record history, in SQL -----------------------------------------------------------------
#
# What refresh_cohorts(history_only=True) makes of the headline cohorts an import touched, once its
# batches have refreshed their flags and bests (each batch's refresh is the full judgement's, so that
# pass found nothing else to write): history-v1's events (rules.history.events_for), from the standing
# holder, the cohort's eligible new runs in observed order and its top (the fastest of its bests). The
# replay is a running minimum: an arrival takes the record when it is faster than the holder and than
# every arrival before it (events_for's holder mean is always the lowest figure seen so far).

# A run that counts in its (headline) cohort: passed, live, in its source's newest snapshot, of its
# workload's current revision, and not held for review (services.eligibility.not_held_clause, written in as text).
_COUNTS_NOW = (
    f"{_LIVE_PASSED} "
    "AND NOT EXISTS (SELECT 1 FROM source_snapshots ss WHERE ss.id = r.source_snapshot_id AND ss.outdated) "
    "AND EXISTS (SELECT 1 FROM workload_revisions wr JOIN workloads w ON w.id = wr.workload_id "
    "WHERE wr.id = r.workload_revision_id AND w.current_revision_id = r.workload_revision_id) "
    f"AND ({not_held_sql('r')})"
)
# The latest event (not a revision's) of the cohort k(rev, cfg, proto, env): its run, the standing holder.
# One probe of ix_record_events_cohort (migration 0024), newest first, however many events are stored:
# read so by _HISTORY and _LATEST_EVENTS.
_LATEST_EVENT_OF_K = (
    "SELECT e.run_id FROM record_events e WHERE e.workload_revision_id = k.rev AND e.configuration_key = k.cfg "
    f"AND e.protocol_id = k.proto AND e.environment_id = k.env AND e.kind <> '{REVISION_CHANGED}' ORDER BY e.id DESC LIMIT 1"
)
_HISTORY = text(f"""
WITH k AS (
    SELECT * FROM unnest(CAST(:revs AS int[]), CAST(:cfgs AS text[]), CAST(:protos AS int[]), CAST(:envs AS int[]))
        AS k(rev, cfg, proto, env)
),
holder AS (
    SELECT k.rev, k.cfg, k.proto, k.env, e.run_id AS holder_id, r.figure AS holder_mean FROM k
      LEFT JOIN LATERAL ({_LATEST_EVENT_OF_K}) e ON true
      LEFT JOIN runs r ON r.id = e.run_id
),
arrivals AS (
    SELECT r.workload_revision_id AS rev, r.configuration_key AS cfg, r.protocol_id AS proto, r.environment_id AS env,
           r.id, {_READABLE_FIGURE} AS figure, r.observed_at FROM runs r
     WHERE r.id = ANY(CAST(:arrived AS bigint[])) AND {_COUNTS_NOW}
),
replay AS (
    SELECT a.*, min(a.figure) OVER w AS lowest_before, row_number() OVER w AS seq FROM arrivals a
      JOIN k ON k.rev = a.rev AND k.cfg = a.cfg AND k.proto = a.proto AND k.env = a.env
     WHERE a.figure IS NOT NULL
    WINDOW w AS (PARTITION BY a.rev, a.cfg, a.proto, a.env ORDER BY a.observed_at, a.figure, a.id
                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
),
taken AS (
    SELECT p.rev, p.cfg, p.proto, p.env, p.seq, p.id, p.figure,
           coalesce(lag(p.id) OVER w, h.holder_id) AS previous_id,
           CASE WHEN lag(p.id) OVER w IS NULL THEN h.holder_mean ELSE lag(p.figure) OVER w END AS previous_mean,
           row_number() OVER (PARTITION BY p.rev, p.cfg, p.proto, p.env ORDER BY p.seq DESC) = 1 AS last
      FROM replay p JOIN holder h ON h.rev = p.rev AND h.cfg = p.cfg AND h.proto = p.proto AND h.env = p.env
     WHERE CASE WHEN h.holder_id IS NULL THEN p.lowest_before IS NULL OR p.figure < p.lowest_before
                WHEN h.holder_mean IS NULL THEN false
                ELSE p.figure < least(h.holder_mean, p.lowest_before) END
    WINDOW w AS (PARTITION BY p.rev, p.cfg, p.proto, p.env ORDER BY p.seq)
),
state AS (
    SELECT h.rev, h.cfg, h.proto, h.env,
           CASE WHEN t.id IS NULL THEN h.holder_id ELSE t.id END AS holder_id,
           CASE WHEN t.id IS NULL THEN h.holder_mean ELSE t.figure END AS holder_mean,
           t.id IS NOT NULL OR EXISTS (SELECT 1 FROM runs r WHERE r.id = h.holder_id AND r.figure <> 'NaN'::float8
                                          AND r.workload_revision_id = h.rev AND r.configuration_key = h.cfg
                                          AND r.protocol_id = h.proto AND r.environment_id = h.env AND {_COUNTS_NOW}) AS present,
           top.run_id AS top_id, top.figure AS top_figure
      FROM holder h
      LEFT JOIN taken t ON t.rev = h.rev AND t.cfg = h.cfg AND t.proto = h.proto AND t.env = h.env AND t.last
      LEFT JOIN LATERAL (
          SELECT b.run_id, b.figure FROM cohort_bests b WHERE b.workload_revision_id = h.rev AND b.configuration_key = h.cfg
             AND b.protocol_id = h.proto AND b.environment_id = h.env AND b.figure IS NOT NULL
           ORDER BY b.figure, b.observed_at, b.run_id LIMIT 1
      ) top ON true
)
SELECT * FROM (
SELECT rev, cfg, proto, env, 0 AS part, seq, '{NEW_RECORD}' AS kind, id AS run_id, previous_id, previous_mean, figure
  FROM taken
UNION ALL
SELECT rev, cfg, proto, env, 1, 0,
       CASE WHEN holder_id IS NULL THEN '{NEW_RECORD}'
            WHEN top_id IS NULL THEN '{RESTORED}'
            WHEN holder_mean IS NOT NULL AND top_figure < holder_mean THEN '{NEW_RECORD}'
            ELSE '{RESTORED}' END,
       top_id, holder_id, holder_mean, top_figure
  FROM state
 WHERE NOT (holder_id IS NULL AND top_id IS NULL) AND top_id IS DISTINCT FROM holder_id
   AND NOT (holder_id IS NOT NULL AND top_id IS NOT NULL AND NOT (holder_mean IS NOT NULL AND top_figure < holder_mean) AND present)
) events ORDER BY rev, cfg COLLATE "C", proto, env, part, seq
""")


async def record_history(
    session: AsyncSession, cohorts: Iterable[CohortKey], *, arrived: Collection[int], now: datetime | None = None,
) -> RefreshSummary:
    """The record events of an import's cohorts once its batches are written (`arrived`: the runs it
    added): those refresh_cohorts(history_only=True) writes, found by one statement (_HISTORY)."""
    now = now or datetime.now(UTC)
    keys = sorted(set(cohorts))
    if not keys:
        return RefreshSummary()
    context = await _RefreshContext.load(session, keys)
    keys = [k for k in keys if context.is_headline(k)]
    summary = RefreshSummary(cohorts=len(keys))
    if not keys:
        return summary
    rows = (await session.execute(_HISTORY, {**cohort_columns(keys), "arrived": sorted(arrived)})).all()
    drafts = [{
        "workload_id": context.revisions[rev].workload_id, "workload_revision_id": rev, "configuration_key": cfg,
        "protocol_id": proto, "environment_id": env, "kind": kind, "run_id": run_id, "previous_run_id": previous_id,
        "improvement_percent": improvement_percent(previous_mean, figure) if previous_id is not None else None,
        "rule_version": HISTORY_VERSION, "created_at": now,
    } for rev, cfg, proto, env, _, _, kind, run_id, previous_id, previous_mean, figure in rows]
    await _write_events(session, drafts)
    summary.events = len(drafts)
    return summary


def _stored_top(bests: dict[int, dict[str, Any]]) -> int | None:
    """The run id of the fastest of these stored bests (ranking.order_key), if any."""
    ranked = [(b["figure"], b["observed_at"], b["run_id"]) for b in bests.values()]
    return min(ranked)[2] if ranked else None


def _merged_best(stored: dict[str, Any] | None, fresh: dict[str, Any]) -> dict[str, Any]:
    """An implementation's best in a cohort, from its stored best (of the stored runs) and the best of
    its new runs: as _append_bests makes it from all of them."""
    if stored is None:
        return fresh
    better = fresh if (fresh["figure"], fresh["observed_at"], fresh["run_id"]) < (
        stored["figure"], stored["observed_at"], stored["run_id"]) else stored
    return {
        **better,
        "run_count": stored["run_count"] + fresh["run_count"],
        "last_observed_at": max(stored["last_observed_at"], fresh["last_observed_at"]),
        "evidence_kinds": sorted(set(stored["evidence_kinds"]) | set(fresh["evidence_kinds"])),
        "source_snapshot_ids": sorted(set(stored["source_snapshot_ids"]) | set(fresh["source_snapshot_ids"])),
    }


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
# The temporary table keyed as cohort_bests is: _write_bests deletes the bests its rows no longer name with a
# NOT EXISTS on it, which without the key PostgreSQL ran as a nested loop over every pair (a full refresh's
# few thousand bests against the touched cohorts' rows: about 0.8 s a call ingesting 100k runs; on a 1M-run
# perf.dataset database, 8,000 bests against their cohorts' 60,000 rows took 22 s, keyed 0.25 s).
_CREATE_REFRESH_BESTS = (
    f"CREATE TEMPORARY TABLE IF NOT EXISTS refresh_bests (LIKE cohort_bests, PRIMARY KEY ({', '.join(_BEST_KEY)})) {SCRATCH}",
    emptied("refresh_bests"),
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

    def hardware(self) -> dict[int, HardwareFacts]:
        """The catalogue's hardware, by id."""
        return {h.id: h for h in self._catalogue}

    def floor_for(self, run: RunFacts, revision: WorkloadRevision) -> float | None:
        canonical = run.configuration_key == revision.canonical_configuration_key
        # Off the canonical configuration the floor is of the run's own bindings (their values as stored).
        bindings = () if canonical else tuple(sorted((k, repr(v)) for k, v in (run.bindings or {}).items()))
        key = (revision.id, run.environment.hardware.id, canonical, bindings)
        if key not in self._known:
            self._known[key] = _floor_for(run, revision, self._catalogue)
        return self._known[key]


def _cohorts(keys: list[CohortKey]) -> Any:
    """These cohorts as a derived table k(rev, cfg, proto, env) of four array parameters
    (kernelindex.db.arrays), joined on ix_runs_cohort."""
    return unnested("k", COHORT_COLUMNS, keys)


def _live_and_passed() -> tuple[Any, ...]:
    """The runs that compete for a record: neither superseded nor retracted, and passed (_LIVE_PASSED in SQL text)."""
    return (_RUN_TABLE.superseded_at.is_(None), _RUN_TABLE.retracted_at.is_(None), _RUN_TABLE.status == "passed")


async def _live_runs_by_id(session: AsyncSession, builder: FactsBuilder, ids: Collection[int]) -> list[RunFacts]:
    """The facts of those of these runs that compete for a record (one statement, the ids as one array)."""
    if not ids:
        return []
    rows = (await session.execute(run_columns_statement().where(
        _RUN_TABLE.id == func.any(bindparam("run_ids", sorted(ids), type_=ARRAY(BigInteger))), *_live_and_passed(),
    ))).all()
    return [builder.run_of_columns(row) for row in rows]


def _arrived_facts(builder: FactsBuilder, passed: Sequence[NewRun]) -> list[RunFacts]:
    """The facts of the new runs that compete for a record, made from the values their writer holds
    (their dimensions loaded: _DeltaState.load), equal to those read back once they are stored."""
    return [builder.run_of_values(run) for run in passed]


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


# Each cohort's latest event, by _LATEST_EVENT_OF_K. As one DISTINCT ON over a join of every event, a
# write of 1,000 new machines' runs into perf.dataset's million (its events growing by a thousand a call)
# took 1.4 s in this statement alone, the planner looping over the events for each cohort.
_LATEST_EVENTS = text(
    "SELECT k.rev, k.cfg, k.proto, k.env, e.run_id, r.figure FROM unnest(CAST(:revs AS int[]), CAST(:cfgs AS text[]), "
    f"CAST(:protos AS int[]), CAST(:envs AS int[])) AS k(rev, cfg, proto, env) CROSS JOIN LATERAL ({_LATEST_EVENT_OF_K}) e "
    "LEFT JOIN runs r ON r.id = e.run_id"
)


async def _latest_events(session: AsyncSession, keys: list[CohortKey]) -> dict[CohortKey, tuple[int | None, float | None]]:
    """The standing holder of each cohort (run id and its mean) from the latest event."""
    rows = (await session.execute(_LATEST_EVENTS, cohort_columns(keys))).all()
    return {(r[0], r[1], r[2], r[3]): (r[4], r[5]) for r in rows}
