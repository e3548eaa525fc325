"""What a workload page needs, read from the precomputed cohort bests plus the few runs on show:
a fixed, small number of statements however many runs the workload has.

The rules still decide: records, order and labels come from kernelindex.rules.ranking applied to
the cohort bests (each cohort's record is its fastest implementation best), the comparison ranks
the record cohort's eligible runs, and plausibility holds flagged runs out exactly as the refresh
does. `tests/api/test_page_paths.py` checks this path against the full computation.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from functools import cached_property

from sqlalchemy import Integer, Text, any_, column, select, values
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.models import (
    CohortBest,
    Hardware,
    Run,
    RunFlag,
    RunReview,
    Source,
    SourceSnapshot,
    Workload,
    WorkloadRevision,
)
from kernelindex.rules import plausibility, ranking
from kernelindex.rules.facts import HardwareFacts, RunFacts, SourceFacts, WorkloadFacts
from kernelindex.services.evidence import FactsBuilder, run_rows_statement, workload_facts
from kernelindex.services.records import id_array


@dataclass
class PageEvidence:
    workload: Workload
    revision: WorkloadRevision | None
    catalogue: list[HardwareFacts]
    now: datetime
    bests: list[CohortBest] = field(default_factory=list)
    runs_by_id: dict[int, RunFacts] = field(default_factory=dict)
    comparison_runs: list[RunFacts] = field(default_factory=list)
    measured_runs: list[RunFacts] = field(default_factory=list)
    sources_by_id: dict[int, SourceFacts] = field(default_factory=dict)
    shown_bests: list[CohortBest] = field(default_factory=list)
    comparison_loaded: bool = False
    record_cohort: tuple | None = None
    _records_cache: dict = field(default_factory=dict)

    @cached_property
    def facts(self) -> WorkloadFacts:
        return workload_facts(self.workload, self.revision)

    @property
    def eligible_count(self) -> int:
        return sum(b.run_count for b in self.bests)

    @property
    def last_observed(self) -> date | None:
        return max((b.last_observed_at.date() for b in self.bests), default=None)

    @property
    def sources(self) -> list[SourceFacts]:
        ids = {i for b in self.bests for i in b.source_snapshot_ids}
        return sorted((self.sources_by_id[i] for i in ids if i in self.sources_by_id), key=lambda s: (s.name, s.revision or ""))

    @property
    def measured_hardware_ids(self) -> set[int]:
        return {b.hardware_id for b in self.bests}

    @property
    def records(self) -> list[ranking.CohortRecord]:
        """Per cohort its record; the record cohort carries its ranked rows: every eligible run once
        the comparison runs are loaded, otherwise each implementation's best (enough for the headline's
        baseline)."""
        key = self.comparison_loaded
        if key not in self._records_cache:
            self._records_cache[key] = self._compute_records()
        return self._records_cache[key]

    def _compute_records(self) -> list[ranking.CohortRecord]:
        by_cohort: dict[tuple, list[CohortBest]] = defaultdict(list)
        for b in self.bests:
            by_cohort[(b.workload_revision_id, b.configuration_key, b.protocol_id, b.environment_id)].append(b)
        heads = []
        for key, rows in by_cohort.items():
            fastest = self.runs_by_id[min(rows, key=_order).run_id]
            heads.append((fastest, sum(b.run_count for b in rows), key))
        heads.sort(key=lambda h: ranking.order_key(h[0]))
        labels = ranking.environment_labels([h[0] for h in heads])
        record_key = heads[0][2] if heads else None
        out = []
        for run, count, key in heads:
            if key != record_key:
                cohort = []
            elif self.comparison_loaded:
                cohort = ranking.rank_cohort(self.comparison_runs)
            else:
                cohort = ranking.rank_cohort(self.runs_by_id[b.run_id] for b in by_cohort[key])
            out.append(ranking.CohortRecord(run=run, run_count=count, environment_label=labels[run.environment.id], cohort=cohort))
        return out

    @property
    def overall_record(self) -> ranking.CohortRecord | None:
        return self.records[0] if self.records else None

    @cached_property
    def implementation_bests(self) -> list[ranking.ImplementationBest]:
        by_impl: dict[int, list[CohortBest]] = defaultdict(list)
        for b in self.bests:
            by_impl[b.implementation_id].append(b)
        return ranking.implementation_bests(self.runs_by_id[min(rows, key=_order).run_id] for rows in by_impl.values())

    def evidence_kinds(self, implementation_id: int) -> set[str]:
        return {k for b in self.bests if b.implementation_id == implementation_id for k in b.evidence_kinds}

    def runs_of_implementation(self, implementation_id: int) -> list[RunFacts]:
        """The runs the trust ladder sees for an implementation: its measured runs and its best run."""
        runs = {r.id: r for r in self.measured_runs if r.implementation.id == implementation_id}
        for best in self.implementation_bests:
            if best.run.implementation.id == implementation_id:
                runs.setdefault(best.run.id, best.run)
        return list(runs.values())


class _BestKey:
    """A cohort best row seen by ranking.order_key (mean, then earlier observation, then run id)."""

    __slots__ = ("mean_ms", "observed_at", "id")

    def __init__(self, row: CohortBest):
        self.mean_ms, self.observed_at, self.id = row.mean_ms, row.observed_at, row.run_id


def _order(row: CohortBest) -> tuple:
    return ranking.order_key(_BestKey(row))


async def load_comparison_runs(session: AsyncSession, pages: dict[int, PageEvidence]) -> None:
    """The eligible runs of each page's record cohort (only the comparison asks for them)."""
    keys = [p.record_cohort for p in pages.values() if p.record_cohort]
    if not keys:
        return
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
    for page in pages.values():
        key = page.record_cohort
        mine = [f for f in facts if (f.workload_revision_id, f.configuration_key, f.protocol.id, f.environment.id) == key]
        page.comparison_runs = ranking.eligible_runs(mine, page.facts)
        page.comparison_loaded = True


MEASURED_PER_IMPLEMENTATION_AND_SKU = 5


async def load_measured_runs(session: AsyncSession, pages: dict[int, PageEvidence]) -> None:
    """Eligible KernelIndex measurements of these workloads, for the trust ladder and cross-checks:
    the latest few per implementation and SKU (what the ladder's rules look at: a passed
    measurement, two agreeing ones in different environments, the latest one to cross-check)."""
    from sqlalchemy import func as sa_func

    from kernelindex.db.models import Environment

    revision_ids = [p.workload.current_revision_id for p in pages.values() if p.workload.current_revision_id]
    if not revision_ids:
        return
    ranked = (
        select(
            Run.id,
            sa_func.row_number().over(
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
    for page in pages.values():
        page.measured_runs = ranking.eligible_runs([f for f in facts if f.workload_id == page.workload.id], page.facts)


async def with_holds(session: AsyncSession, facts: list[RunFacts]) -> list[RunFacts]:
    """The runs, with held_for_review set from their flags and reviews (one statement)."""
    held = await held_run_ids(session, [f.id for f in facts])
    return [replace(f, held_for_review=True) if f.id in held else f for f in facts]


async def held_run_ids(session: AsyncSession, run_ids: Sequence[int]) -> set[int]:
    """Runs flagged by plausibility-v1 whose latest review did not approve them.

    Always one statement, even for no runs, so a request's statement count does not depend on data."""
    flags: dict[int, list[plausibility.Flag]] = defaultdict(list)
    reviews: dict[int, list[plausibility.Review]] = defaultdict(list)
    seen_reviews: set[int] = set()
    rows = await session.execute(
        select(RunFlag.run_id, RunFlag.code, RunReview.decision, RunReview.created_at, RunReview.id)
        .outerjoin(RunReview, RunReview.run_id == RunFlag.run_id)
        .where(RunFlag.run_id == any_(id_array(run_ids)))
        .order_by(RunReview.id)
    )
    for run_id, code, decision, reviewed_at, review_id in rows:
        if code not in {f.code for f in flags[run_id]}:
            flags[run_id].append(plausibility.Flag(run_id, code, code, ""))
        if review_id is not None and review_id not in seen_reviews:
            seen_reviews.add(review_id)
            reviews[run_id].append(plausibility.Review(run_id=run_id, decision=decision, reviewed_at=reviewed_at))
    return {run_id for run_id, f in flags.items() if plausibility.is_held_for_review(f, reviews[run_id])}


async def load_page_evidence(
    session: AsyncSession, workloads: Sequence[Workload], catalogue: Sequence[Hardware], now: datetime
) -> dict[int, PageEvidence]:
    builder = FactsBuilder()
    catalogue_facts = [builder.hardware(h) for h in catalogue]
    revision_ids = [w.current_revision_id for w in workloads if w.current_revision_id]
    revisions = (
        {r.id: r for r in (await session.scalars(select(WorkloadRevision).where(WorkloadRevision.id.in_(revision_ids)))).all()}
        if revision_ids else {}
    )
    pages = {
        w.id: PageEvidence(workload=w, revision=revisions.get(w.current_revision_id), catalogue=catalogue_facts, now=now)
        for w in workloads
    }
    if not revision_ids:
        return pages
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
        pages[b.workload_id].bests.append(b)
    # Only the runs on show: each cohort's record, each implementation's best, the record cohort's rows.
    wanted: set[int] = set()
    record_cohorts = {}
    for page in pages.values():
        if not page.bests:
            continue
        by_cohort: dict[tuple, list[CohortBest]] = defaultdict(list)
        by_impl: dict[int, list[CohortBest]] = defaultdict(list)
        for b in page.bests:
            by_cohort[(b.workload_revision_id, b.configuration_key, b.protocol_id, b.environment_id)].append(b)
            by_impl[b.implementation_id].append(b)
        heads = [min(rows, key=_order) for rows in by_cohort.values()]
        wanted.update(b.run_id for b in heads)
        wanted.update(min(rows, key=_order).run_id for rows in by_impl.values())
        top = min(heads, key=_order)
        record_key = (top.workload_revision_id, top.configuration_key, top.protocol_id, top.environment_id)
        record_cohorts[page.workload.id] = record_key
        wanted.update(b.run_id for b in by_cohort[record_key])
        page.shown_bests = heads + [min(rows, key=_order) for rows in by_impl.values()] + by_cohort[record_key]
    facts_by_id: dict[int, RunFacts] = {}
    if wanted:
        rows = (await session.execute(run_rows_statement().where(Run.id == any_(id_array(wanted))))).all()
        facts_by_id = {row[0].id: builder.run(*row) for row in rows}
    for page in pages.values():
        page.runs_by_id = {i: facts_by_id[i] for i in {b.run_id for b in page.shown_bests}}
        page.record_cohort = record_cohorts.get(page.workload.id)
    snapshot_ids = sorted({i for b in bests for i in b.source_snapshot_ids})
    if snapshot_ids:
        for snapshot, source in (
            await session.execute(
                select(SourceSnapshot, Source).join(Source, Source.id == SourceSnapshot.source_id).where(SourceSnapshot.id.in_(snapshot_ids))
            )
        ).all():
            facts = SourceFacts(id=snapshot.id, name=source.name, licence=source.licence, url=source.url,
                                revision=snapshot.revision or None, revision_date=snapshot.revision_date)
            for page in pages.values():
                page.sources_by_id[snapshot.id] = facts
    return pages
