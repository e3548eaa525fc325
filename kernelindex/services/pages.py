"""Workload pages read from the precomputed cohort bests plus the few runs on show: a fixed, small
number of statements however many runs the workload has.

The rules still decide: records, order and labels come from kernelindex.rules.ranking applied to
the cohort bests (each cohort's record is its fastest implementation best), the comparison ranks
the record cohort's eligible runs, and plausibility holds flagged runs out exactly as the refresh
does. Each loader returns its values and changes nothing it was given: the page (`load_page_evidence`),
then, only for the fields that ask, the record with its whole cohort (`load_comparisons`) and the
latest measurements (`load_measured_runs`). `tests/api/test_page_paths.py` checks this path against
the full computation (kernelindex.services.evidence).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import Integer, Text, any_, column, func, select, values
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.models import (
    CohortBest,
    Environment,
    Hardware,
    Run,
    Source,
    SourceSnapshot,
    Workload,
    WorkloadRevision,
)
from kernelindex.rules import ranking
from kernelindex.rules.facts import HardwareFacts, RunFacts, SourceFacts
from kernelindex.services.facts import CohortKey, FactsBuilder, run_rows_statement, source_facts, workload_facts
from kernelindex.services.holds import with_holds
from kernelindex.services.sql import id_array
from kernelindex.services.workload_page import WorkloadPage, sorted_sources

MEASURED_PER_IMPLEMENTATION_AND_SKU = 5

# A cohort best row is a plain row of the cohort_bests table (see load_page_evidence).
BestRow = Any


class _BestKey:
    """A cohort best row seen by ranking.order_key (mean, then earlier observation, then run id)."""

    __slots__ = ("mean_ms", "observed_at", "id")

    def __init__(self, row: BestRow):
        self.mean_ms, self.observed_at, self.id = row.mean_ms, row.observed_at, row.run_id


def _order(row: BestRow) -> tuple[Any, ...]:
    return ranking.order_key(_BestKey(row))  # type: ignore[arg-type]  # order_key reads only these three


def _cohort_of(row: BestRow) -> CohortKey:
    return (row.workload_revision_id, row.configuration_key, row.protocol_id, row.environment_id)


def _page(
    workload: Workload, revision: WorkloadRevision | None, catalogue: Sequence[HardwareFacts],
    bests: Sequence[BestRow], runs_by_id: dict[int, RunFacts], sources_by_id: dict[int, SourceFacts],
) -> WorkloadPage:
    """The page from one workload's cohort bests and the runs they name."""
    facts = workload_facts(workload, revision)
    by_cohort: dict[CohortKey, list[BestRow]] = defaultdict(list)
    by_impl: dict[int, list[BestRow]] = defaultdict(list)
    kinds: dict[int, set[str]] = defaultdict(set)
    for b in bests:
        by_cohort[_cohort_of(b)].append(b)
        by_impl[b.implementation_id].append(b)
        kinds[b.implementation_id].update(b.evidence_kinds)
    heads = sorted(
        ((runs_by_id[min(rows, key=_order).run_id], sum(b.run_count for b in rows), key) for key, rows in by_cohort.items()),
        key=lambda head: ranking.order_key(head[0]),
    )
    labels = ranking.environment_labels([run for run, _, _ in heads])
    record_cohort = heads[0][2] if heads else None
    records = [
        ranking.CohortRecord(
            run=run, run_count=count, environment_label=labels[run.environment.id],
            cohort=ranking.rank_cohort(runs_by_id[b.run_id] for b in by_cohort[key]) if key == record_cohort else [],
        )
        for run, count, key in heads
    ]
    snapshot_ids = {i for b in bests for i in b.source_snapshot_ids}
    return WorkloadPage(
        workload=workload, revision=revision, facts=facts, catalogue=catalogue, records=records,
        implementation_bests=ranking.implementation_bests(runs_by_id[min(rows, key=_order).run_id] for rows in by_impl.values()),
        eligible_count=sum(b.run_count for b in bests),
        last_observed=max((b.last_observed_at.date() for b in bests), default=None),
        sources=sorted_sources(sources_by_id[i] for i in snapshot_ids if i in sources_by_id),
        measured_hardware_ids=frozenset(b.hardware_id for b in bests),
        evidence_kinds_by_implementation={i: frozenset(k) for i, k in kinds.items()},
        record_cohort=record_cohort,
    )


def _shown_run_ids(bests: Sequence[BestRow]) -> set[int]:
    """The runs a page shows: each cohort's record, each implementation's best, the record cohort's rows."""
    if not bests:
        return set()
    by_cohort: dict[CohortKey, list[BestRow]] = defaultdict(list)
    by_impl: dict[int, list[BestRow]] = defaultdict(list)
    for b in bests:
        by_cohort[_cohort_of(b)].append(b)
        by_impl[b.implementation_id].append(b)
    heads = [min(rows, key=_order) for rows in by_cohort.values()]
    wanted = {b.run_id for b in heads}
    wanted.update(min(rows, key=_order).run_id for rows in by_impl.values())
    wanted.update(b.run_id for b in by_cohort[_cohort_of(min(heads, key=_order))])
    return wanted


async def load_page_evidence(
    session: AsyncSession, workloads: Sequence[Workload], catalogue: Sequence[Hardware]
) -> dict[int, WorkloadPage]:
    """The page of each workload, by workload id."""
    builder = FactsBuilder()
    catalogue_facts = [builder.hardware(h) for h in catalogue]
    revision_ids = [w.current_revision_id for w in workloads if w.current_revision_id]
    revisions = (
        {r.id: r for r in (await session.scalars(select(WorkloadRevision).where(WorkloadRevision.id.in_(revision_ids)))).all()}
        if revision_ids else {}
    )
    bests_of: dict[int, list[BestRow]] = {w.id: [] for w in workloads}
    runs_by_id: dict[int, RunFacts] = {}
    sources_by_id: dict[int, SourceFacts] = {}
    if revision_ids:
        # Plain rows, not ORM entities: a list page reads ~80 per workload, and building and
        # identity-mapping thousands of entities was a third of the list query's time.
        bests = (
            await session.execute(
                select(*CohortBest.__table__.c)
                .join(WorkloadRevision, WorkloadRevision.id == CohortBest.workload_revision_id)
                .where(
                    CohortBest.workload_revision_id.in_(revision_ids),
                    CohortBest.configuration_key == WorkloadRevision.canonical_configuration_key,
                )
            )
        ).all()
        for b in bests:
            bests_of[b.workload_id].append(b)
        wanted = set().union(*(_shown_run_ids(rows) for rows in bests_of.values()))
        if wanted:
            rows = (await session.execute(run_rows_statement().where(Run.id == any_(id_array(wanted))))).all()
            runs_by_id = {row[0].id: builder.run(*row) for row in rows}
        snapshot_ids = sorted({i for b in bests for i in b.source_snapshot_ids})
        if snapshot_ids:
            sources = await session.execute(
                select(SourceSnapshot, Source).join(Source, Source.id == SourceSnapshot.source_id)
                .where(SourceSnapshot.id.in_(snapshot_ids))
            )
            sources_by_id = {snapshot.id: source_facts(snapshot, source) for snapshot, source in sources}
    return {
        w.id: _page(w, revisions.get(w.current_revision_id) if w.current_revision_id else None, catalogue_facts,
                    bests_of[w.id], runs_by_id, sources_by_id)
        for w in workloads
    }


async def load_comparisons(session: AsyncSession, pages: Iterable[WorkloadPage]) -> dict[int, ranking.CohortRecord | None]:
    """Each page's overall record with every eligible run of its cohort ranked (only the comparison
    asks for them), by workload id; None for a page with no record."""
    pages = list(pages)
    keys = [p.record_cohort for p in pages if p.record_cohort]
    out: dict[int, ranking.CohortRecord | None] = {p.workload.id: None for p in pages}
    if not keys:
        return out
    cohorts = values(
        column("rev", Integer), column("cfg", Text), column("proto", Integer), column("env", Integer), name="cohorts"
    ).data(keys)
    statement = run_rows_statement().join(
        cohorts,
        (Run.workload_revision_id == cohorts.c.rev) & (Run.configuration_key == cohorts.c.cfg)
        & (Run.protocol_id == cohorts.c.proto) & (Run.environment_id == cohorts.c.env),
    ).where(Run.status == "passed", Run.superseded_at.is_(None), Run.retracted_at.is_(None))
    builder = FactsBuilder()
    facts = await with_holds(session, [builder.run(*row[:7]) for row in (await session.execute(statement)).all()])
    for page in pages:
        record = page.overall_record
        if record is None:
            continue
        mine = [f for f in facts if f.cohort_key == page.record_cohort]
        out[page.workload.id] = replace(record, cohort=ranking.rank_cohort(ranking.eligible_runs(mine, page.facts)))
    return out


async def load_measured_runs(session: AsyncSession, pages: Iterable[WorkloadPage]) -> dict[int, list[RunFacts]]:
    """Eligible KernelIndex measurements of these workloads, for the trust ladder and cross-checks,
    by workload id: the latest few per implementation and SKU (what the ladder's rules look at: a
    passed measurement, two agreeing ones in different environments, the latest one to cross-check)."""
    pages = list(pages)
    out: dict[int, list[RunFacts]] = {p.workload.id: [] for p in pages}
    revision_ids = [p.workload.current_revision_id for p in pages if p.workload.current_revision_id]
    if not revision_ids:
        return out
    ranked = (
        select(
            Run.id,
            func.row_number().over(
                partition_by=(Run.workload_revision_id, Run.configuration_key, Run.implementation_id, Environment.hardware_id),
                order_by=(Run.observed_at.desc(), Run.id.desc()),
            ).label("n"),
        )
        .join(Environment, Environment.id == Run.environment_id)
        .join(WorkloadRevision, WorkloadRevision.id == Run.workload_revision_id)
        .where(
            Run.workload_revision_id == any_(id_array(revision_ids)), Run.evidence == "measured",
            Run.configuration_key == WorkloadRevision.canonical_configuration_key,
            Run.status == "passed", Run.superseded_at.is_(None), Run.retracted_at.is_(None),
        )
        .subquery()
    )
    latest = select(ranked.c.id).where(ranked.c.n <= MEASURED_PER_IMPLEMENTATION_AND_SKU)
    builder = FactsBuilder()
    rows = (await session.execute(run_rows_statement().where(Run.id.in_(latest)))).all()
    facts = await with_holds(session, [builder.run(*row) for row in rows])
    for page in pages:
        out[page.workload.id] = ranking.eligible_runs([f for f in facts if f.workload_id == page.workload.id], page.facts)
    return out
