"""The request's DataLoaders: each batches its keys into a fixed number of statements and returns
values (it changes nothing it is given), named for what it returns and what it is keyed by."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import TypeVar

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from strawberry.dataloader import DataLoader

from kernelindex.db.models import Hardware, Workload
from kernelindex.rules.facts import RunFacts
from kernelindex.services.facts import load_catalogue
from kernelindex.services.holds import RunHolds, load_holds
from kernelindex.services.pages import (
    CohortTop,
    CohortTopKey,
    Subject,
    load_cohort_tops,
    load_measured_runs,
    load_page_evidence,
    load_subject_measurements,
)
from kernelindex.services.revisions import RevisionFacts, load_revisions, load_revisions_of_workloads
from kernelindex.services.workload_page import WorkloadPage

K = TypeVar("K")
V = TypeVar("V")


class Loader(DataLoader[K, V]):
    """A DataLoader whose batch function is its `batch_load` method, with the request's loaders at hand
    (a loader may build on another: the comparison on the page)."""

    def __init__(self, loaders: Loaders):
        self.loaders = loaders
        self.session = loaders.session
        super().__init__(load_fn=self.batch_load)

    async def batch_load(self, keys: list[K]) -> Sequence[V]:
        raise NotImplementedError


class Reads:
    """The workloads this request's workload loaders looked up: what the response cache keys a
    workload page's entry on (kernelindex.web.response_cache). A look-up that found nothing makes
    the request unscoped: a workload created later would change its answer."""

    def __init__(self) -> None:
        self.workloads: set[int] = set()
        self.unscoped = False
        # Read something the data version does not follow (a fleet job: it moves while it is read):
        # the response is never stored.
        self.volatile = False

    def found(self, rows: Sequence[Workload], wanted: int) -> None:
        self.workloads.update(w.id for w in rows)
        if len(rows) < wanted:
            self.unscoped = True


class WorkloadBySlugLoader(Loader[str, Workload | None]):
    async def batch_load(self, keys: list[str]) -> list[Workload | None]:
        rows = (await self.session.scalars(select(Workload).where(Workload.slug.in_(keys)))).all()
        self.loaders.reads.found(rows, len(set(keys)))
        by_slug = {w.slug: w for w in rows}
        for w in rows:
            self.loaders.workload_by_id.prime(w.id, w)
        return [by_slug.get(s) for s in keys]


class WorkloadByIdLoader(Loader[int, Workload | None]):
    async def batch_load(self, keys: list[int]) -> list[Workload | None]:
        rows = (await self.session.scalars(select(Workload).where(Workload.id.in_(keys)))).all()
        self.loaders.reads.found(rows, len(set(keys)))
        by_id = {w.id: w for w in rows}
        return [by_id.get(i) for i in keys]


class PageByWorkloadIdLoader(Loader[int, WorkloadPage]):
    """A workload's page from the precomputed cohort bests."""

    async def batch_load(self, keys: list[int]) -> list[WorkloadPage]:
        workloads = [w for w in await self.loaders.workload_by_id.load_many(keys) if w is not None]
        pages = await load_page_evidence(self.session, workloads, await self.loaders.catalogue())
        return [pages[i] for i in keys]


class CohortTopLoader(Loader[CohortTopKey, CohortTop]):
    """The rows a comparison of a cohort shows (its first `limit`), its baseline and cross-check runs."""

    async def batch_load(self, keys: list[CohortTopKey]) -> list[CohortTop]:
        tops = await load_cohort_tops(self.session, keys)
        return [tops[k] for k in keys]


class SubjectMeasurementsLoader(Loader[Subject, list[RunFacts]]):
    """Every eligible measurement of a workload revision, configuration, implementation and hardware."""

    async def batch_load(self, keys: list[Subject]) -> list[list[RunFacts]]:
        measured = await load_subject_measurements(self.session, keys)
        return [measured[k] for k in keys]


class MeasuredRunsByWorkloadIdLoader(Loader[int, list[RunFacts]]):
    """A workload's latest eligible measurements per implementation and SKU (for the trust ladder)."""

    async def batch_load(self, keys: list[int]) -> list[list[RunFacts]]:
        measured = await load_measured_runs(self.session, await self.loaders.page_by_workload_id.load_many(keys))
        return [measured[i] for i in keys]


class HoldsByRunIdLoader(Loader[int, RunHolds]):
    """A run's plausibility flags and reviews."""

    async def batch_load(self, keys: list[int]) -> list[RunHolds]:
        holds = await load_holds(self.session, keys)
        return [holds[i] for i in keys]


class RevisionByIdLoader(Loader[int, RevisionFacts | None]):
    """A workload revision with its upstream snapshots."""

    async def batch_load(self, keys: list[int]) -> list[RevisionFacts | None]:
        found = await load_revisions(self.session, keys)
        return [found.get(i) for i in keys]


class RevisionsByWorkloadIdLoader(Loader[int, list[RevisionFacts]]):
    """Every revision of a workload, oldest first."""

    async def batch_load(self, keys: list[int]) -> list[list[RevisionFacts]]:
        found = await load_revisions_of_workloads(self.session, keys)
        return [found[i] for i in keys]


class Loaders:
    """The loaders of one request; each is made on first use (a request answered from the response
    cache uses none)."""

    def __init__(self, session: AsyncSession):
        self.session = session
        self._catalogue: list[Hardware] | None = None
        self.reads = Reads()

    @cached_property
    def workload_by_slug(self) -> WorkloadBySlugLoader:
        return WorkloadBySlugLoader(self)

    @cached_property
    def workload_by_id(self) -> WorkloadByIdLoader:
        return WorkloadByIdLoader(self)

    @cached_property
    def page_by_workload_id(self) -> PageByWorkloadIdLoader:
        return PageByWorkloadIdLoader(self)

    @cached_property
    def cohort_top(self) -> CohortTopLoader:
        return CohortTopLoader(self)

    @cached_property
    def subject_measurements(self) -> SubjectMeasurementsLoader:
        return SubjectMeasurementsLoader(self)

    @cached_property
    def measured_runs_by_workload_id(self) -> MeasuredRunsByWorkloadIdLoader:
        return MeasuredRunsByWorkloadIdLoader(self)

    @cached_property
    def holds_by_run_id(self) -> HoldsByRunIdLoader:
        return HoldsByRunIdLoader(self)

    @cached_property
    def revision_by_id(self) -> RevisionByIdLoader:
        return RevisionByIdLoader(self)

    @cached_property
    def revisions_by_workload_id(self) -> RevisionsByWorkloadIdLoader:
        return RevisionsByWorkloadIdLoader(self)

    async def catalogue(self) -> list[Hardware]:
        """The hardware catalogue, read once per request."""
        if self._catalogue is None:
            self._catalogue = await load_catalogue(self.session)
        return self._catalogue
