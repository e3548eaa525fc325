"""What a workload page needs, read from the precomputed cohort bests plus the few runs on show:
a fixed, small number of statements however many runs the workload has.

The rules still decide: records, order and labels come from kernelindex.rules.ranking applied to
the cohort bests (each cohort's record is its fastest implementation best), the comparison ranks
the record cohort's eligible runs, and plausibility holds flagged runs out exactly as the refresh
does. `tests/api/test_page_paths.py` checks this path against the full computation.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from functools import cached_property
from typing import Sequence

from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.models import CohortBest, Hardware, Run, RunFlag, RunReview, Source, SourceSnapshot, Workload, WorkloadRevision
from kernelindex.rules import plausibility, ranking
from kernelindex.rules.facts import HardwareFacts, RunFacts, SourceFacts, WorkloadFacts
from kernelindex.rules.identity import configuration_key
from kernelindex.services.evidence import FactsBuilder, run_rows_statement


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

    @cached_property
    def facts(self) -> WorkloadFacts:
        rev = self.revision
        bindings = rev.canonical_bindings if rev else {}
        dtype = rev.canonical_dtype if rev else "fp32"
        return WorkloadFacts(
            id=self.workload.id, slug=self.workload.slug, current_revision_id=self.workload.current_revision_id,
            canonical_bindings=bindings, canonical_dtype=dtype, canonical_configuration_key=configuration_key(bindings, dtype),
        )

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

    @cached_property
    def records(self) -> list[ranking.CohortRecord]:
        by_cohort: dict[tuple, list[CohortBest]] = defaultdict(list)
        for b in self.bests:
            by_cohort[(b.workload_revision_id, b.configuration_key, b.protocol_id, b.environment_id)].append(b)
        heads = []
        for key, rows in by_cohort.items():
            fastest = min((self.runs_by_id[b.run_id] for b in rows), key=ranking.order_key)
            heads.append((fastest, sum(b.run_count for b in rows), key))
        heads.sort(key=lambda h: ranking.order_key(h[0]))
        labels = ranking.environment_labels([h[0] for h in heads])
        record_key = heads[0][2] if heads else None
        out = []
        for run, count, key in heads:
            cohort = ranking.rank_cohort(self.comparison_runs) if key == record_key else []
            out.append(ranking.CohortRecord(run=run, run_count=count, environment_label=labels[run.environment.id], cohort=cohort))
        return out

    @property
    def overall_record(self) -> ranking.CohortRecord | None:
        return self.records[0] if self.records else None

    @cached_property
    def implementation_bests(self) -> list[ranking.ImplementationBest]:
        return ranking.implementation_bests(self.runs_by_id[b.run_id] for b in self.bests)

    def evidence_kinds(self, implementation_id: int) -> set[str]:
        return {k for b in self.bests if b.implementation_id == implementation_id for k in b.evidence_kinds}

    def runs_of_implementation(self, implementation_id: int) -> list[RunFacts]:
        """The runs the trust ladder sees for an implementation: its measured runs and its best run."""
        runs = {r.id: r for r in self.measured_runs if r.implementation.id == implementation_id}
        for b in self.bests:
            if b.implementation_id == implementation_id:
                runs.setdefault(b.run_id, self.runs_by_id[b.run_id])
        return list(runs.values())


async def held_run_ids(session: AsyncSession, run_ids: Sequence[int]) -> set[int]:
    """Runs flagged by plausibility-v1 whose latest review did not approve them."""
    if not run_ids:
        return set()
    flags: dict[int, list[plausibility.Flag]] = defaultdict(list)
    reviews: dict[int, list[plausibility.Review]] = defaultdict(list)
    seen_reviews: set[int] = set()
    rows = await session.execute(
        select(RunFlag.run_id, RunFlag.code, RunReview.decision, RunReview.created_at, RunReview.id)
        .outerjoin(RunReview, RunReview.run_id == RunFlag.run_id)
        .where(RunFlag.run_id.in_(run_ids))
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
    bests = (
        await session.scalars(
            select(CohortBest)
            .join(WorkloadRevision, WorkloadRevision.id == CohortBest.workload_revision_id)
            .where(
                CohortBest.workload_revision_id.in_(revision_ids),
                CohortBest.configuration_key == WorkloadRevision.canonical_configuration_key,
            )
        )
    ).all()
    for b in bests:
        pages[b.workload_id].bests.append(b)
    # The record cohort of each page: the cohort holding the fastest implementation best.
    record_cohorts = {}
    for page in pages.values():
        if page.bests:
            top = min(page.bests, key=lambda b: (b.mean_ms, b.observed_at, b.run_id))
            record_cohorts[page.workload.id] = (top.workload_revision_id, top.configuration_key, top.protocol_id, top.environment_id)
    cohort_condition = or_(*(
        (Run.workload_revision_id == k[0]) & (Run.configuration_key == k[1]) & (Run.protocol_id == k[2]) & (Run.environment_id == k[3])
        for k in record_cohorts.values()
    )) if record_cohorts else None
    wanted_ids = [b.run_id for b in bests]
    conditions = [Run.id.in_(wanted_ids)] if wanted_ids else []
    if cohort_condition is not None:
        conditions.append(
            cohort_condition & (Run.status == "passed") & Run.superseded_at.is_(None) & Run.retracted_at.is_(None)
        )
    measured = (
        (Run.workload_revision_id.in_(revision_ids)) & (Run.evidence == "measured") & (Run.status == "passed")
        & Run.superseded_at.is_(None) & Run.retracted_at.is_(None)
    )
    conditions.append(measured)
    rows = (await session.execute(run_rows_statement().where(or_(*conditions)))).all()
    facts_by_id = {row[0].id: builder.run(*row) for row in rows}
    held = await held_run_ids(session, list(facts_by_id))
    if held:
        facts_by_id = {i: replace(f, held_for_review=i in held) for i, f in facts_by_id.items()}
    for page in pages.values():
        page.runs_by_id = {b.run_id: facts_by_id[b.run_id] for b in page.bests}
        key = record_cohorts.get(page.workload.id)
        candidates = [
            f for f in facts_by_id.values()
            if key and (f.workload_revision_id, f.configuration_key, f.protocol.id, f.environment.id) == key
        ]
        page.comparison_runs = ranking.eligible_runs(candidates, page.facts)
        page.measured_runs = ranking.eligible_runs(
            [f for f in facts_by_id.values() if f.workload_id == page.workload.id and f.evidence == "measured"], page.facts
        )
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
