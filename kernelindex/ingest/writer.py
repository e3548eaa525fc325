"""Writing run records: resolve, stage, merge, refresh, in the caller's transaction.

`RunWriter.write(session, records)` is one batch; the caller owns the transaction, so a batch lands
whole or not at all. Idempotent: a record whose natural key (workload revision, configuration,
implementation, environment, protocol, source revision) is already live with the same content is
"unchanged"; with other content it becomes a new run that supersedes the old one. The steps are
modules of their own, with typed values between them:

    records ─ resolve (kernelindex.ingest.resolve) → ResolvedRecord + DimensionIds
            ─ stage (kernelindex.ingest.stage)     → StagedRun rows, COPYed into the stage
            ─ merge (kernelindex.ingest.merge)     → MergeResult; the touched cohorts' records refreshed
            ─ IngestSummary (kernelindex.ingest.summary)

A batch costs a fixed number of round trips whatever its size. A writer keeps what it resolved, the
stage's connection and the cohorts whose events it defers, so one writer serves every batch of an
import (each batch in the session it is given; call `forget()` after a rollback). With
defer_events the record history is left to one `record_events(session)` after the last batch, so an
import's events never depend on how it was cut into batches.

With dry_run nothing is written at all: dimensions not in the database get placeholder ids (below
zero), and a run with any of them is counted as inserted. A dry run of a file with catalogue lines
resolves against `known` (kernelindex.ingest.resolve.References: the database with those lines laid
over it), so it finds what the real run will without writing it.

Hardware is never added here: a record naming hardware the catalogue lacks is refused (new hardware
comes in through kernelindex.hardware/1 catalogue lines).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from operator import attrgetter

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.locks import hold_index_writes
from kernelindex.ingest.errors import InputProblem
from kernelindex.ingest.merge import CohortRefresh, MergeResult, RunKey, claim_known_lines, first_places_known, merge_stage
from kernelindex.ingest.record_types import LineProbe, workload_reference
from kernelindex.ingest.records import PendingLine, RunRecord
from kernelindex.ingest.resolve import DimensionIds, References, ResolvedRecord, ResolvedWorkload, Resolver
from kernelindex.ingest.snapshots import mark_outdated
from kernelindex.ingest.stage import KEY_COLUMNS, KnownLineCandidate, Stage, StagedRun, new_run, staged_run
from kernelindex.ingest.summary import IngestSummary, Refused
from kernelindex.services.facts import NewRun
from kernelindex.services.records import CohortKey, RefreshSummary, refresh_workloads

# A staged row's natural key, as a tuple in one C call (a generator of getattr calls cost 2.5 times as much).
_key_of = attrgetter(*KEY_COLUMNS)


class RunWriter:
    """Resolves and writes run records inside the transaction of the session each call is given."""

    def __init__(
        self, *, now: datetime | None = None, dry_run: bool = False, defer_events: bool = False,
        track_keys: bool = False, known: References | None = None, fleet_worker: tuple[int, str] | None = None,
    ):
        """defer_events: batches refresh the records but leave the history to `record_events()`, which
        the caller runs once after its last batch, so batch boundaries never make events (history-v1).
        track_keys: a run whose natural key an earlier batch of this writer staged is refused as stated
        twice (an import's batches: the keys are kept in a temporary table of the one connection the
        import writes with, not in memory); without it only a batch's own repeats are.
        known: what records name, to resolve them against instead of the database: a dry run's, with
        the input's catalogue lines laid over the database (placeholder ids).
        fleet_worker: (id, machine id) of the registered fleet worker storing its own measurements
        (kernelindex.fleet.worker, the only caller that passes it); every other route is outside."""
        self.now = now or datetime.now(UTC)
        self.dry_run = dry_run
        self.fleet_worker = fleet_worker
        self.resolver = Resolver(known)
        self.stage = Stage(track_keys=track_keys)
        self.refresh = CohortRefresh(now=self.now, defer_events=defer_events, spill=track_keys)
        self.statistics = RunStatistics() if track_keys else None  # an import's batches grow runs

    def forget(self) -> None:
        """Drop every id this writer has resolved (after a rollback they may name rows that are gone)."""
        self.resolver.forget()

    async def write(
        self, session: AsyncSession, records: list[RunRecord], *, dry_run: bool = False, merging: Callable[[], None] | None = None,
    ) -> IngestSummary:
        """One batch (see the module). merging: called once the batch is staged, as PostgreSQL starts merging
        it, the longest stretch in which this thread only waits (the `ingest runs` reader starts on its next
        part then, so that its Python runs while the database works, not against this batch's for the GIL)."""
        dry_run = dry_run or self.dry_run
        if not records:
            return IngestSummary()
        if not dry_run:
            await hold_index_writes(session)
        resolved, refused = await self.resolver.resolve(session, records)
        ids = await self.resolver.ensure(session, resolved, dry_run=dry_run)
        rows = [staged_run(ord_, item, dims, self.fleet_worker) for ord_, (item, dims) in enumerate(zip(resolved, ids))]
        row_keys = [RunKey._make(_key_of(row)) for row in rows]
        merged = MergeResult()
        if rows:
            await self.stage.runs(session, rows)
            if merging is not None:
                merging()
            merged = await merge_stage(
                session, resolved, now=self.now, fleet_worker=self.fleet_worker is not None, dry_run=dry_run,
                # Without keys kept across batches a batch's own repeats are all there is to refuse.
                keys=None if self.stage.track_keys else [(key, row.place) for key, row in zip(row_keys, rows)],
                # Where the refresh judges the new runs in Python (a write of its own: submitRuns, the fleet,
                # seed), their INSERT is planned, ids and all, and runs while they are judged (after_merge).
                planned=self.refresh.judges_in_python and not dry_run and not self.stage.track_keys,
            )
            if self.statistics is not None and not dry_run:
                await self.statistics.grew(session, merged.inserted)
        record_cohorts = _record_cohorts(resolved, rows)
        arrivals: dict[CohortKey, list[int]] = defaultdict(list)
        for run_id, key in zip(merged.inserted_run_ids, merged.written, strict=True):
            if key.cohort in record_cohorts:
                arrivals[key.cohort].append(run_id)
        new_runs: dict[int, NewRun] | None = None
        if self.refresh.judges_in_python and arrivals:
            # The row each inserted run was staged as: of the rows stating one natural key, the first claims
            # it (merge_stage refuses the others as stated twice), so the first of each key is the one written.
            # Made only where the refresh reads them: an import's batches are judged in SQL (0.6 s of 100,000 runs).
            staged_as: dict[RunKey, StagedRun] = {}
            for key, row in zip(row_keys, rows):
                staged_as.setdefault(key, row)
            new_runs = {run_id: new_run(run_id, staged_as[key])
                        for run_id, key in zip(merged.inserted_run_ids, merged.written) if key.cohort in record_cohorts}
        plan = merged.plan
        await self.refresh.after_merge(session, arrivals, left=merged.left, new_runs=new_runs,
                                       storing=None if plan is None else lambda: plan.insert(session),
                                       new_environments=self.resolver.new_environments)
        if self.resolver.whole_sources and not dry_run:
            # A whole snapshot of a source (a record in the stated form names one) outdates the older
            # ones, or is outdated by a newer one, as when an adapter imports it (source_import).
            moved = await mark_outdated(session, sorted(self.resolver.whole_sources))
            self.resolver.whole_sources.clear()
            if moved:
                await refresh_workloads(session, moved, now=self.now)
        return _summary(len(records), resolved, ids, refused + merged.refused, merged)

    async def record_events(self, session: AsyncSession) -> RefreshSummary:
        """The record events of everything this writer wrote since the last call (with defer_events):
        once, over every cohort its batches touched, the new runs taken in observed order. In the
        caller's transaction."""
        return await self.refresh.record_events(session, dry_run=self.dry_run)

    async def skip_known(self, session: AsyncSession, lines: list[PendingLine], file: str) -> tuple[IngestSummary, list[PendingLine]]:
        """The lines whose very bytes made a live run of the revision they name now: unchanged, and
        not checked again (the same bytes passed the same checks, CHECKS_VERSION, before; hardware,
        implementation, protocol and source names resolve as they did). Their natural keys are
        claimed like any staged run's, so a line stating one again is refused. Returns what they
        count for and the other lines, to check and write. In the caller's transaction."""
        summary = IngestSummary()
        if not lines:
            return summary, []
        if not self.dry_run:
            await hold_index_writes(session)
        # Resolved once per workload reference and source revision the batch names, not per line.
        probes = dict.fromkeys(line.probe for line in lines)
        references = {workload: workload_reference(workload) for workload in dict.fromkeys(probe.workload for probe in probes)}
        resolve = await self.resolver.workload_resolver(session, ({"workload": ref} for ref in references.values()))
        revision_of: dict[LineProbe, int] = {}
        for probe in probes:
            stated = probe.source.revision
            try:
                resolved = resolve(references[probe.workload], stated if isinstance(stated, str) else None)
            except KeyError:  # a reference of no shape a record may take (slug, suite and level and problem, suite and key)
                continue  # the check says why
            if isinstance(resolved, ResolvedWorkload):
                revision_of[probe] = resolved.revision_id
        candidates = [
            KnownLineCandidate(ord_, line.where, line.digest, revision)
            for ord_, line in enumerate(lines) if (revision := revision_of.get(line.probe)) is not None
        ]
        if not candidates:
            return summary, lines
        await self.stage.lines(session, candidates)
        known = await claim_known_lines(session)
        if not known:
            return summary, lines
        found = {run.ord for run in known}
        again = sorted(run.ord for run in known if not run.claimed)
        if again:
            first = await first_places_known(session, again)
            for ord_ in again:
                summary.problems.append(InputProblem(
                    file, lines[ord_].where, f"the same run as {first.get(ord_, 'an earlier one')} (same natural key)",
                ))
            summary.rejected = len(again)
        summary.found = len(known)  # every known line is unchanged or stated twice: rejected
        for run in known:
            if run.claimed:
                summary.unchanged += 1
                summary.workloads.add(run.workload_id)
                summary.implementations.add(run.implementation_id)
                summary.environments.add(run.environment_id)
        return summary, [line for ord_, line in enumerate(lines) if ord_ not in found]


class RunStatistics:
    """ANALYZE runs whenever an import has inserted more runs than the planner's statistics knew of.

    A fresh or young index's statistics say `runs` holds next to nothing, and an import does not
    commit long enough for autovacuum to catch up: the planner then reads a cohort's runs through
    whichever index comes first (every run of the configuration, thousands, for each cohort of the
    refresh). Re-analysed each time the table has doubled (a few times an import, each a sample of
    at most 30,000 rows), plans follow the table, and a batch's cost does not grow with the index.
    ANALYZE in the import's transaction counts its own uncommitted rows and rolls back with it."""

    def __init__(self) -> None:
        self._known: int | None = None  # the live runs the statistics were last taken over
        self._since = 0  # inserted since

    async def grew(self, session: AsyncSession, inserted: int) -> None:
        if self._known is None:
            self._known = (await session.execute(_RUNS_ESTIMATE)).scalar_one()
        self._since += inserted
        if self._since > max(ANALYZE_AFTER_RUNS, self._known):
            # The records the runs make grow with them (and are read back by each refresh).
            await session.execute(text("ANALYZE runs, cohort_bests, workload_sources"))
            self._known += self._since
            self._since = 0


ANALYZE_AFTER_RUNS = 2000
_RUNS_ESTIMATE = text("SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = 'runs'::regclass")


def _record_cohorts(resolved: list[ResolvedRecord], rows: list[StagedRun]) -> set[CohortKey]:
    """The cohorts of these runs that can hold records (the workload's current revision, at any
    configuration: eligibility-v3): the same cohorts refresh_workloads rebuilds, so records never
    depend on whether a run came in an import or in a rebuild."""
    return {
        (row.workload_revision_id, row.configuration_key, row.protocol_id, row.environment_id)
        for item, row in zip(resolved, rows)
        if item.revision_id == item.workload.current_revision_id
    }


def _summary(
    found: int, resolved: list[ResolvedRecord], ids: list[DimensionIds], refused: list[Refused], merged: MergeResult,
) -> IngestSummary:
    """A batch's summary: every record found, the merge's counts, and its problems in input order."""
    problems = [r.problem for r in sorted(refused, key=lambda r: r.index)]
    return IngestSummary(
        found=found,
        inserted=merged.inserted,
        unchanged=merged.unchanged,
        superseded=merged.superseded,
        rejected=len({(p.file, p.where) for p in problems}),
        workloads={item.workload.id for item in resolved},
        implementations={dims.implementation_id for dims in ids},
        environments={dims.environment_id for dims in ids},
        problems=problems,
        inserted_run_ids=merged.inserted_run_ids,
    ).check()
