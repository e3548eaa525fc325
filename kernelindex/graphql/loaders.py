"""DataLoaders, created per request: each batches its keys into one statement with IN (...)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import cached_property

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from strawberry.dataloader import DataLoader

from kernelindex.db.models import Hardware, Workload
from kernelindex.services.evidence import WorkloadEvidence, load_catalogue, load_evidence
from kernelindex.services.pages import PageEvidence, load_comparison_runs, load_measured_runs, load_page_evidence


class Loaders:
    def __init__(self, session: AsyncSession, now: datetime):
        self.session = session
        self.now = now
        self._catalogue: list[Hardware] | None = None

    # Each loader is made on first use: a request answered from the response cache uses none.
    @cached_property
    def workload_by_slug(self) -> DataLoader[str, Workload | None]:
        return DataLoader(self._workloads_by_slug)

    @cached_property
    def workload_by_id(self) -> DataLoader[int, Workload | None]:
        return DataLoader(self._workloads_by_id)

    @cached_property
    def evidence_by_workload_id(self) -> DataLoader[int, PageEvidence]:
        return DataLoader(self._page_evidence_by_workload_id)

    @cached_property
    def full_evidence_by_workload_id(self) -> DataLoader[int, WorkloadEvidence]:
        return DataLoader(self._evidence_by_workload_id)

    @cached_property
    def review_state_by_run_id(self) -> DataLoader[int, tuple[list, list]]:
        return DataLoader(self._review_state_by_run_id)

    @cached_property
    def measured_runs_by_workload_id(self) -> DataLoader[int, list]:
        return DataLoader(self._measured_runs_by_workload_id)

    @cached_property
    def comparison_runs_by_workload_id(self) -> DataLoader[int, list]:
        return DataLoader(self._comparison_runs_by_workload_id)

    async def catalogue(self) -> list[Hardware]:
        """The hardware catalogue, read once per request."""
        if self._catalogue is None:
            self._catalogue = await load_catalogue(self.session)
        return self._catalogue

    async def _workloads_by_slug(self, slugs: Sequence[str]) -> list[Workload | None]:
        rows = (await self.session.scalars(select(Workload).where(Workload.slug.in_(slugs)))).all()
        by_slug = {w.slug: w for w in rows}
        for w in rows:
            self.workload_by_id.prime(w.id, w)
        return [by_slug.get(s) for s in slugs]

    async def _workloads_by_id(self, ids: Sequence[int]) -> list[Workload | None]:
        rows = (await self.session.scalars(select(Workload).where(Workload.id.in_(ids)))).all()
        by_id = {w.id: w for w in rows}
        return [by_id.get(i) for i in ids]

    async def _page_evidence_by_workload_id(self, ids: Sequence[int]) -> list[PageEvidence]:
        workloads = [w for w in await self.workload_by_id.load_many(list(ids)) if w is not None]
        evidence = await load_page_evidence(self.session, workloads, await self.catalogue(), self.now)
        return [evidence[i] for i in ids]

    async def _comparison_runs_by_workload_id(self, ids: Sequence[int]) -> list[list]:
        """Loads every eligible run of each page's record cohort (only the comparison asks)."""
        pages = await self.evidence_by_workload_id.load_many(list(ids))
        await load_comparison_runs(self.session, {p.workload.id: p for p in pages})
        return [p.comparison_runs for p in pages]

    async def _measured_runs_by_workload_id(self, ids: Sequence[int]) -> list[list]:
        """Loads the measured runs into each page's evidence (only the fields that judge trust ask)."""
        pages = await self.evidence_by_workload_id.load_many(list(ids))
        await load_measured_runs(self.session, {p.workload.id: p for p in pages})
        return [p.measured_runs for p in pages]

    async def _evidence_by_workload_id(self, ids: Sequence[int]) -> list[WorkloadEvidence]:
        workloads = [w for w in await self.workload_by_id.load_many(list(ids)) if w is not None]
        evidence = await load_evidence(self.session, workloads, await self.catalogue(), self.now)
        return [evidence[i] for i in ids]

    async def _review_state_by_run_id(self, ids: Sequence[int]) -> list[tuple[list, list]]:
        """(flags, reviews) of each run, as plausibility-v1 values."""
        from kernelindex.db.models import RunFlag, RunReview
        from kernelindex.rules import plausibility

        flags = {i: [] for i in ids}
        reviews = {i: [] for i in ids}
        for f in (await self.session.scalars(select(RunFlag).where(RunFlag.run_id.in_(ids)).order_by(RunFlag.id))).all():
            flags[f.run_id].append(plausibility.Flag(f.run_id, f.code, plausibility.FLAG_WORDS.get(f.code, f.code), f.reason))
        for r in (await self.session.scalars(select(RunReview).where(RunReview.run_id.in_(ids)).order_by(RunReview.id))).all():
            reviews[r.run_id].append(
                plausibility.Review(run_id=r.run_id, decision=r.decision, reviewed_at=r.created_at, reviewer=r.reviewer, note=r.note)
            )
        return [(flags[i], reviews[i]) for i in ids]
