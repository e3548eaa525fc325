"""Merging: the staged runs into `runs` with set-based statements, and the records they touch refreshed.

From the stage (kernelindex.ingest.stage): refuse the runs already stated (in this batch, or earlier
in the import), and those that would replace a fleet worker's measurement from outside; then
supersede the live runs whose content changed, insert the runs whose key has no live run, and count
the rest unchanged. A dry run only counts what those statements would do.

Afterwards (`CohortRefresh`) the precomputed records (kernelindex.services.records) of the cohorts
that can hold records (current revision, any configuration) the new runs joined are refreshed
in the same transaction, so readers see a batch's runs and its records together. The record history
(events) is derived from the new runs in observed order; deferred, it is left to one
`record_events()` after the last batch, so an import's events never depend on how it was cut.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.locks import hold_index_writes
from kernelindex.ingest.errors import InputProblem
from kernelindex.ingest.resolve import chunks
from kernelindex.ingest.stage import KEY_COLUMNS, KEYS, RUN_NAMES
from kernelindex.ingest.summary import Refused
from kernelindex.services.facts import NewRun, cohort_columns
from kernelindex.services.records import CohortKey, RefreshSummary, record_history, refresh_after_arrivals

# Cohorts refreshed per statement set: as many as services.records refreshes per call (COHORTS_PER_CALL), so a
# submitRuns call of 1,000 records on 1,000 new machines is one set of statements, not two (its CPU 178 -> 164 ms).
COHORTS_PER_REFRESH = 1000


class RunKey(NamedTuple):
    """A run's natural key, as ids (KEY_COLUMNS)."""

    workload_revision_id: int
    configuration_key: str
    implementation_id: int
    environment_id: int
    protocol_id: int
    source_snapshot_id: int
    upstream_id: str

    @property
    def cohort(self) -> CohortKey:
        return (self.workload_revision_id, self.configuration_key, self.protocol_id, self.environment_id)


@dataclass
class MergeResult:
    """What merging a stage did (or, in a dry run, would do)."""

    inserted: int = 0
    superseded: int = 0
    unchanged: int = 0
    inserted_run_ids: list[int] = field(default_factory=list)
    written: list[RunKey] = field(default_factory=list)  # the natural keys of the runs inserted
    left: set[CohortKey] = field(default_factory=set)  # the cohorts of the runs superseded
    refused: list[Refused] = field(default_factory=list)
    # merge_stage(..., planned=True): the INSERT, not run yet (the counts, ids and keys above are its plan).
    plan: PlannedInsert | None = None


@dataclass
class PlannedInsert:
    """The runs a merge inserts, decided before its INSERT runs (merge_stage(..., planned=True)): the
    staged rows (ords) whose natural key has no live run once the changed ones were superseded, each
    with the id the INSERT gives it. So a caller can judge the new runs while PostgreSQL inserts them
    (kernelindex.services.records.refresh_after_arrivals' `storing`). `insert(session)` runs the INSERT,
    refuses (RuntimeError) any other outcome than the plan, and links the runs it superseded to them."""

    ords: list[int]
    ids: list[int]
    superseded: list[tuple[int, RunKey]]  # (the superseded run's id, its natural key)
    new_of: dict[RunKey, int]  # the id planned for each natural key inserted

    async def insert(self, session: AsyncSession) -> None:
        if self.ords:
            stored = (await session.execute(_INSERT_PLANNED, {"ords": self.ords, "ids": self.ids})).scalars().all()
            if sorted(stored) != self.ids:
                # Under the index write lock no other writer can change what the plan read: a fault, not a race.
                raise RuntimeError(f"the runs inserted ({len(stored)}) are not the {len(self.ids)} planned")
        await _link_superseded(session, self.superseded, self.new_of)


_SAME_KEY = " AND ".join(f"r.{c} = s.{c}" for c in KEY_COLUMNS)


def _live_of_staged(more: str = "", *, left: bool = False) -> str:
    """The live run of each staged row's natural key, joined onto the stage as `r` (id, fleet_worker_id,
    content_sha256), `more` narrowing it; left: a staged row without one is kept (r's columns null).

    One probe of uq_runs_natural_key_live a row (a LATERAL subquery: at most one live run has a key). As a
    plain join, a young index's statistics (runs thought to hold a few rows: no ANALYZE since they came)
    had PostgreSQL hash every live run of the index for each batch, a cost that grew with the index: 7-9 ms
    a statement of a submitRuns call 20,000 runs into a new index, against 1-2 at the start."""
    probe = (f"(SELECT r.id, r.fleet_worker_id, r.content_sha256 FROM runs r WHERE r.superseded_at IS NULL AND {_SAME_KEY} "
             f"{more}LIMIT 1) r")
    return f"LEFT JOIN LATERAL {probe} ON true" if left else f"CROSS JOIN LATERAL {probe}"


_CLAIM_KEYS = text(
    f"INSERT INTO ingest_keys ({KEYS}, ord, place) SELECT {KEYS}, ord, place FROM ingest_stage "
    "ORDER BY ord ON CONFLICT DO NOTHING RETURNING ord"
)
_FIRST_PLACES = text(
    "SELECT s.ord, k.place FROM ingest_stage s JOIN ingest_keys k USING "
    f"({KEYS}) WHERE s.ord = ANY(CAST(:ords AS int[]))"
)
_DROP_STAGED = text("DELETE FROM ingest_stage WHERE ord = ANY(CAST(:ords AS int[]))")
# A record from outside never replaces what a fleet worker measured (its figures would inherit the
# run's place while the rung goes): such records are refused first (_FLEET_HELD), and the clause
# here keeps it so whatever the caller does. Without a registered worker there is nothing to look
# for: the uncorrelated EXISTS is a one-time filter, so an index without a fleet pays no join.
_FLEET_HELD = text(
    f"SELECT s.ord, r.id FROM ingest_stage s {_live_of_staged()} "
    "WHERE EXISTS (SELECT 1 FROM fleet_workers) "
    "AND s.fleet_worker_id IS NULL AND r.fleet_worker_id IS NOT NULL AND r.content_sha256 <> s.content_sha256"
)
# The live runs whose staged row states other content, by id (an index scan of the primary key).
_SUPERSEDE = text(
    "UPDATE runs SET superseded_at = :now WHERE id = ANY(ARRAY(SELECT r.id FROM ingest_stage s "
    + _live_of_staged("AND (r.fleet_worker_id IS NULL OR s.fleet_worker_id IS NOT NULL) AND r.content_sha256 <> s.content_sha256 ")
    + f")) AND superseded_at IS NULL RETURNING id, {KEYS}"
)
# Superseded runs have left the live-key index by now, so "no live run" is new or changed content.
# Decided by the live-key index itself (ON CONFLICT … DO NOTHING, as the floor inserts): each row
# probes the index its insert maintains anyway, where a NOT EXISTS join hashed every live run of
# the index for each batch (a cost that grew with the index, not the batch). Index writes are
# serialized (hold_index_writes), so no other writer's row can be what a row conflicts with.
_INSERT_NEW = text(
    f"INSERT INTO runs ({', '.join(RUN_NAMES)}) SELECT {', '.join(f's.{c}' for c in RUN_NAMES)} FROM ingest_stage s "
    f"ORDER BY s.ord ON CONFLICT ({KEYS}) WHERE superseded_at IS NULL DO NOTHING RETURNING id, {KEYS}"
)
# The same insert with the ids planned before it (plan_insert): one per staged row, in stage order, as the
# sequence gives them to the INSERT above (ON CONFLICT takes one for a row it skips, too), so the ids are
# the same either way.
_INSERT_PLANNED = text(
    f"INSERT INTO runs (id, {', '.join(RUN_NAMES)}) SELECT v.id, {', '.join(f's.{c}' for c in RUN_NAMES)} FROM ingest_stage s "
    "JOIN unnest(CAST(:ords AS int[]), CAST(:ids AS bigint[])) AS v(ord, id) ON v.ord = s.ord "
    f"ORDER BY s.ord ON CONFLICT ({KEYS}) WHERE superseded_at IS NULL DO NOTHING RETURNING id"
)
_STAGED_LIVE = text(f"SELECT s.ord FROM ingest_stage s {_live_of_staged()}")
_RUN_IDS = text("SELECT nextval(pg_get_serial_sequence('runs', 'id')) FROM generate_series(1, :n)")
_LINK_SUPERSEDED = text(
    "UPDATE runs SET superseded_by_id = v.new_id FROM unnest(CAST(:old AS bigint[]), CAST(:new AS bigint[])) "
    "AS v(old_id, new_id) WHERE runs.id = v.old_id"
)
# A dry run's merge: what the statements above would do, counted.
_COUNT_MERGE = text(
    "SELECT count(*) FILTER (WHERE r.id IS NULL), count(*) FILTER (WHERE r.content_sha256 <> s.content_sha256), "
    f"count(*) FILTER (WHERE r.content_sha256 = s.content_sha256) FROM ingest_stage s {_live_of_staged(left=True)}"
)


class _Stated(Protocol):
    """Where a staged run was stated: its file and place ("line 12")."""

    @property
    def file(self) -> str: ...
    @property
    def where(self) -> str: ...


class Placed(Protocol):
    """A staged run's origin: its index in its batch and where it was stated (a ResolvedRecord, or a
    source adapter's run: kernelindex.ingest.source_import)."""

    @property
    def index(self) -> int: ...
    @property
    def record(self) -> _Stated: ...


def _stated_twice(item: Placed, first: str | None) -> Refused:
    return Refused(item.index, InputProblem(
        item.record.file, item.record.where, f"the same run as {first or 'an earlier one'} (same natural key)",
    ))


async def merge_stage(
    session: AsyncSession, staged: Sequence[Placed], *, now: datetime, fleet_worker: bool, dry_run: bool,
    keys: Sequence[tuple[RunKey, str]] | None = None, planned: bool = False,
) -> MergeResult:
    """Merge the stage, whose row `ord` is the record staged[ord]: refuse the runs already stated
    (in this batch, or earlier in the import), then insert, supersede or count each as unchanged.
    keys: each staged row's natural key and place, in stage order, from a writer that refuses only a
    batch's own repeats (no keys kept across batches): those are found here, not through ingest_keys
    (an INSERT of every key, ~5 ms of a submitRuns call of 1,000 records).
    planned (with keys): everything but the INSERT, which is planned (PlannedInsert, in result.plan) for
    the caller to run; the result's counts, ids and keys are the plan's."""
    if planned and (keys is None or dry_run):
        raise ValueError("a planned insert needs the staged rows' keys, and writes")
    result = MergeResult()
    if keys is None:
        claimed = set((await session.execute(_CLAIM_KEYS)).scalars().all())
        again = [ord_ for ord_ in range(len(staged)) if ord_ not in claimed] if len(claimed) < len(staged) else []
        first: dict[int, str] = dict((await session.execute(_FIRST_PLACES, {"ords": again})).all()) if again else {}
    else:
        claimed, again, first = _claimed_in_batch(keys)
    if again:
        result.refused += [_stated_twice(staged[ord_], first.get(ord_)) for ord_ in again]
        await session.execute(_DROP_STAGED, {"ords": again})
    if not fleet_worker:
        held = (await session.execute(_FLEET_HELD)).all()
        if held:
            for ord_, run_id in held:
                item = staged[ord_]
                result.refused.append(Refused(item.index, InputProblem(
                    item.record.file, item.record.where,
                    f"run {run_id} with this natural key was measured by the fleet; a record from outside cannot replace it",
                )))
            await session.execute(_DROP_STAGED, {"ords": [row[0] for row in held]})
            claimed -= {row[0] for row in held}
    if dry_run:
        new, changed, same = (await session.execute(_COUNT_MERGE)).one()
        result.inserted = new + changed
        result.superseded = changed
        result.unchanged = same
        return result
    superseded = (await session.execute(_SUPERSEDE, {"now": now})).all()
    if planned:
        assert keys is not None
        return await _plan_insert(session, result, sorted(claimed), keys, superseded)
    inserted = (await session.execute(_INSERT_NEW)).all()
    old = _superseded(result, superseded)
    result.inserted = len(inserted)
    result.unchanged = len(claimed) - len(inserted)
    result.inserted_run_ids = [row[0] for row in inserted]
    result.written = [RunKey(*row[1:]) for row in inserted]
    await _link_superseded(session, old, dict(zip(result.written, result.inserted_run_ids)))
    return result


def _superseded(result: MergeResult, rows: Sequence[Any]) -> list[tuple[int, RunKey]]:
    """_SUPERSEDE's rows as (the superseded run's id, its natural key), counted into the result with the
    cohorts they left."""
    old = [(row[0], RunKey(*row[1:])) for row in rows]
    result.superseded = len(old)
    result.left = {key.cohort for _, key in old}
    return old


async def _link_superseded(session: AsyncSession, old: list[tuple[int, RunKey]], new_of: Mapping[RunKey, int]) -> None:
    """Each superseded run linked to the new run of its natural key."""
    if old:
        await session.execute(_LINK_SUPERSEDED, {"old": [run_id for run_id, _ in old], "new": [new_of[key] for _, key in old]})


async def _plan_insert(
    session: AsyncSession, result: MergeResult, staged: list[int], keys: Sequence[tuple[RunKey, str]], superseded: Sequence[Any],
) -> MergeResult:
    """The rest of merge_stage with the INSERT planned (PlannedInsert): the staged rows still without a live
    run of their key (the changed ones' were superseded) are the ones it will insert; one id per staged row,
    in stage order, is what the sequence gives the INSERT (ON CONFLICT takes one for a row it skips too)."""
    live = set((await session.execute(_STAGED_LIVE)).scalars().all())
    ids = list((await session.execute(_RUN_IDS, {"n": len(staged)})).scalars().all()) if staged else []
    planned = [(ord_, run_id) for ord_, run_id in zip(staged, ids, strict=True) if ord_ not in live]
    old = _superseded(result, superseded)
    result.inserted = len(planned)
    result.unchanged = len(staged) - len(planned)
    result.inserted_run_ids = [run_id for _, run_id in planned]
    result.written = [keys[ord_][0] for ord_, _ in planned]
    result.plan = PlannedInsert([ord_ for ord_, _ in planned], result.inserted_run_ids, old,
                                dict(zip(result.written, result.inserted_run_ids)))
    return result


def _claimed_in_batch(keys: Sequence[tuple[RunKey, str]]) -> tuple[set[int], list[int], dict[int, str]]:
    """What _CLAIM_KEYS and _FIRST_PLACES find in a stage of its own (ingest_keys empty): the first row
    of each key claims it; each later one is stated again, its first place the claimer's."""
    place_of: dict[RunKey, str] = {}
    again: list[int] = []
    first: dict[int, str] = {}
    for ord_, (key, place) in enumerate(keys):
        if key in place_of:
            again.append(ord_)
            first[ord_] = place_of[key]
        else:
            place_of[key] = place
    return set(range(len(keys))) - set(again), again, first


# -- lines whose very bytes are live runs already ---------------------------------------------------

# The live runs some lines' very bytes made (skip_known), and the claim of their natural keys. One
# index probe per line (ix_runs_line_sha_live, whose predicate is stated): as a plain join PostgreSQL
# hashed every live run for each part of lines, a cost that grew with the index, not the file.
_SAME_LINE = (
    "FROM ingest_lines s CROSS JOIN LATERAL (SELECT r.workload_id, r.workload_revision_id, r.configuration_key, "
    "r.implementation_id, r.environment_id, r.protocol_id, r.source_snapshot_id, r.upstream_id FROM runs r "
    "WHERE r.line_sha = s.line_sha AND r.workload_revision_id = s.workload_revision_id "
    "AND r.superseded_at IS NULL AND r.line_sha IS NOT NULL OFFSET 0) r"
)
# One join: the live runs found, and which of their keys this line is the first to claim.
_CLAIM_KNOWN = text(
    f"WITH found AS (SELECT s.ord, s.place, r.workload_id, "
    f"{', '.join(f'r.{c}' for c in KEY_COLUMNS)} {_SAME_LINE}), "
    f"claimed AS (INSERT INTO ingest_keys ({KEYS}, ord, place) SELECT {KEYS}, ord, place FROM found ORDER BY ord "
    "ON CONFLICT DO NOTHING RETURNING ord) "
    "SELECT f.ord, f.workload_id, f.implementation_id, f.environment_id, c.ord IS NOT NULL "
    "FROM found f LEFT JOIN claimed c ON c.ord = f.ord"
)
_FIRST_PLACES_KNOWN = text(
    f"SELECT s.ord, k.place {_SAME_LINE} JOIN ingest_keys k ON {' AND '.join(f'k.{c} = r.{c}' for c in KEY_COLUMNS)} "
    "WHERE s.ord = ANY(CAST(:ords AS int[]))"
)


@dataclass(slots=True)
class KnownLine:
    """A staged line whose bytes made a live run: the run's rows, and whether the line is the first
    of the import to claim its natural key (else it states a run again)."""

    ord: int
    workload_id: int
    implementation_id: int
    environment_id: int
    claimed: bool


async def claim_known_lines(session: AsyncSession) -> list[KnownLine]:
    """The staged lines (`ingest_lines`) that are live runs, each claiming its run's natural key."""
    return [KnownLine(*row) for row in (await session.execute(_CLAIM_KNOWN)).all()]


async def first_places_known(session: AsyncSession, ords: list[int]) -> dict[int, str]:
    """Where the lines at these ords' natural keys were first stated."""
    return dict((await session.execute(_FIRST_PLACES_KNOWN, {"ords": ords})).all())


# -- the records the new runs touch --------------------------------------------------------------

# What a deferred record_events will replay, for an import of any size (CohortRefresh._remember).
_CREATE_PENDING = (
    "CREATE TEMPORARY TABLE IF NOT EXISTS ingest_cohorts (rev int, cfg text, proto int, env int, PRIMARY KEY (rev, cfg, proto, env))",
    "CREATE TEMPORARY TABLE IF NOT EXISTS ingest_arrived (id bigint PRIMARY KEY)",
)
_PENDING_COHORTS = text(
    "INSERT INTO ingest_cohorts SELECT * FROM unnest(CAST(:revs AS int[]), CAST(:cfgs AS text[]), CAST(:protos AS int[]), "
    "CAST(:envs AS int[])) ON CONFLICT DO NOTHING"
)
_ARRIVED = text("INSERT INTO ingest_arrived SELECT unnest(CAST(:ids AS bigint[])) ON CONFLICT DO NOTHING")
_FIRST_PENDING = text(f"SELECT rev, cfg, proto, env FROM ingest_cohorts ORDER BY rev, cfg, proto, env LIMIT {COHORTS_PER_REFRESH}")
_NEXT_PENDING = text(
    "SELECT rev, cfg, proto, env FROM ingest_cohorts WHERE (rev, cfg, proto, env) > (:rev, :cfg, :proto, :env) "
    f"ORDER BY rev, cfg, proto, env LIMIT {COHORTS_PER_REFRESH}"
)
_ARRIVED_IN = text(
    "SELECT a.id FROM ingest_arrived a JOIN runs r ON r.id = a.id JOIN unnest(CAST(:revs AS int[]), CAST(:cfgs AS text[]), "
    "CAST(:protos AS int[]), CAST(:envs AS int[])) AS k(rev, cfg, proto, env) ON r.workload_revision_id = k.rev "
    "AND r.configuration_key = k.cfg AND r.protocol_id = k.proto AND r.environment_id = k.env"
)


def _once(run: Callable[[], Awaitable[None]] | None) -> Callable[[], Awaitable[None]]:
    """run() the first time the result is awaited, nothing after (and nothing at all for None)."""
    done = run is None

    async def once() -> None:
        nonlocal done
        if not done:
            done = True
            assert run is not None
            await run()

    return once


def _after(key: CohortKey | None) -> dict[str, Any]:
    return {} if key is None else {"rev": key[0], "cfg": key[1], "proto": key[2], "env": key[3]}


async def _listed_chunks(cohorts: list[CohortKey], arrived: set[int]) -> AsyncIterator[tuple[list[CohortKey], set[int]]]:
    for chunk in chunks(cohorts, COHORTS_PER_REFRESH):
        yield list(chunk), arrived


class CohortRefresh:
    """The refresh hook after a merge, and the deferred record events (see the module)."""

    def __init__(self, *, now: datetime, defer_events: bool, spill: bool):
        """spill: what record_events will replay is kept in temporary tables of the one connection
        (an import of any size: its memory does not grow with the runs it wrote), else in memory."""
        self.now = now
        self.defer_events = defer_events
        self.spill = spill
        self._pending_cohorts: set[CohortKey] = set()
        self._arrived: set[int] = set()

    @property
    def judges_in_python(self) -> bool:
        """Whether after_merge judges the new runs from the values their writer holds (it needs them,
        `new_runs`): with the events made per batch. Deferred, the delta is SQL over the stored runs."""
        return not self.defer_events

    async def after_merge(
        self, session: AsyncSession, arrivals: Mapping[CohortKey, Sequence[int]], *, left: set[CohortKey],
        new_runs: Mapping[int, NewRun] | None, storing: Callable[[], Awaitable[None]] | None = None,
        new_environments: Mapping[int, Mapping[str, Any]] | None = None,
    ) -> None:
        """The precomputed records (cohort_bests, flags, record events) of the cohorts runs joined
        (`arrivals`: each cohort's new runs), in the same transaction: from the new runs and the stored
        bests, except in the cohorts a run left (`left`), which are judged again in full
        (services.records.refresh_after_arrivals). In chunks: cohorts are independent, and one call's
        multi-row statements must stay under PostgreSQL's 32,767 parameters. new_runs: the arrived runs
        as the writer staged them (by id), so their facts are not read back; None where the refresh
        never reads them (`judges_in_python` false: the deferred batches' delta, in SQL, reads the new
        runs where they are stored). storing: the statement that stores the new runs, not run yet
        (merge_stage's PlannedInsert): the refresh runs it while it judges them, and it has run, once,
        by the time this returns. new_environments: the environments this batch created, with the values it inserted
        (Resolver.new_environments): nothing stored is read for their cohorts, which hold none of it."""
        stored = _once(storing)
        for chunk in chunks(sorted(arrivals), COHORTS_PER_REFRESH):
            ids = [run_id for key in chunk for run_id in arrivals[key]]
            arrived: Collection[int] = ids if new_runs is None else {run_id: new_runs[run_id] for run_id in ids}
            # None where nothing waits to be stored: the refresh then judges here, with no thread beside a no-op.
            await refresh_after_arrivals(session, chunk, arrived, left=left, now=self.now, events=not self.defer_events,
                                         storing=None if storing is None else stored, new_environments=new_environments)
        await stored()  # no cohort to refresh (runs of an older revision, say): stored all the same
        if not arrivals:
            return
        if self.defer_events:
            await self._remember(session, set(arrivals), {run_id for ids in arrivals.values() for run_id in ids})

    async def record_events(self, session: AsyncSession, *, dry_run: bool) -> RefreshSummary:
        """The record events of everything written since the last call (with defer_events): once,
        over every cohort the batches touched, the new runs taken in observed order."""
        if not dry_run:
            await hold_index_writes(session)
        summary = RefreshSummary()
        if self.spill:
            pending = self._spilled(session)
        else:
            cohorts, arrived = sorted(self._pending_cohorts), set(self._arrived)
            self._pending_cohorts.clear()
            self._arrived.clear()
            pending = _listed_chunks(cohorts, arrived)
        async for chunk, arrived in pending:
            part = await record_history(session, chunk, now=self.now, arrived=arrived)
            summary.cohorts += part.cohorts
            summary.events += part.events
            summary.flagged_runs += part.flagged_runs
        return summary

    async def _remember(self, session: AsyncSession, cohorts: set[CohortKey], arrived: set[int]) -> None:
        """What record_events will replay."""
        if not self.spill:
            self._pending_cohorts |= cohorts
            self._arrived |= arrived
            return
        for statement in _CREATE_PENDING:
            await session.execute(text(statement))
        await session.execute(_PENDING_COHORTS, cohort_columns(sorted(cohorts)))
        await session.execute(_ARRIVED, {"ids": sorted(arrived)})

    async def _spilled(self, session: AsyncSession) -> AsyncIterator[tuple[list[CohortKey], set[int]]]:
        """The remembered cohorts in chunks, in key order, each with the runs that arrived in it."""
        for statement in _CREATE_PENDING:
            await session.execute(text(statement))
        after: CohortKey | None = None
        while True:
            rows = (await session.execute(_NEXT_PENDING if after else _FIRST_PENDING, _after(after))).all()
            if not rows:
                break
            chunk = [(r[0], r[1], r[2], r[3]) for r in rows]
            after = chunk[-1]
            arrived = set((await session.execute(_ARRIVED_IN, cohort_columns(chunk))).scalars().all())
            yield chunk, arrived
        await session.execute(text("TRUNCATE ingest_cohorts, ingest_arrived"))
