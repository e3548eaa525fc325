"""The request's DataLoaders: each batches its keys into a fixed number of statements and returns
values (it changes nothing it is given), named for what it returns and what it is keyed by."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from functools import cached_property
from typing import Any, Generic, TypeVar

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import object_session
from strawberry.dataloader import DataLoader

from kernelindex.db.models import Hardware, Workload
from kernelindex.graphql.request_state import RequestState
from kernelindex.rules.eligibility import RecordScope
from kernelindex.rules.facts import HardwareFacts, RunFacts
from kernelindex.services.facts import load_catalogue, load_catalogue_facts
from kernelindex.services.holds import HeldRun, RunHolds, load_holds
from kernelindex.services.pages import (
    CohortTop,
    CohortTopKey,
    PageRuns,
    ScopeSummary,
    Subject,
    load_cohort_tops,
    load_page_evidence,
    load_page_runs,
    load_record_scopes,
    load_subject_measurements,
)
from kernelindex.services.read_model import MISSING, ReadModel
from kernelindex.services.revisions import RevisionFacts, load_revisions, load_revisions_of_workloads
from kernelindex.services.workload_page import WorkloadPage

K = TypeVar("K")
V = TypeVar("V")
KH = TypeVar("KH", bound=Hashable)


class Loader(DataLoader[K, V]):
    """A DataLoader whose batch function is its `batch_load` method, with the request's loaders at hand
    (a loader may build on another: the comparison on the page)."""

    def __init__(self, loaders: Loaders):
        self.loaders = loaders
        self.session = loaders.session
        super().__init__(load_fn=self.batch_load)

    async def batch_load(self, keys: list[K]) -> Sequence[V]:
        raise NotImplementedError

    def loaded(self, key: K) -> Any:
        """The value of `key` when this request has loaded it already, or MISSING (not asked for yet,
        still loading, or failed: `load` gives it, or its error, as before)."""
        future = self.cache_map.get(key) if self.cache else None
        if future is None or not future.done() or future.cancelled() or future.exception() is not None:
            return MISSING
        return future.result()


class ReadModelLoader(Loader[KH, V], Generic[KH, V]):
    """A loader whose values are a workload's, kept in the read model (kernelindex.services.read_model)
    once computed: each key is looked up there first, the missing ones computed in one batch and kept
    for the next request (when this request read a data version, and the value's workload is known)."""

    kind = ""  # the name the read model keeps this loader's values under

    def workload_of(self, key: KH) -> int | None:
        """The workload whose writes change the value of `key` (None: not known, so not kept)."""
        raise NotImplementedError

    async def compute(self, keys: list[KH]) -> Mapping[KH, V]:
        raise NotImplementedError

    def kept(self, model: ReadModel, workload: int, key: KH, version: int) -> Any:
        """The value the read model keeps for `key`, or MISSING (None may be a value)."""
        return model.value(workload, (self.kind, key), version)

    def keep(self, model: ReadModel, workload: int, key: KH, version: int, value: V) -> None:
        model.put_value(workload, (self.kind, key), version, value)

    async def batch_load(self, keys: list[KH]) -> list[V]:
        model, version = self.loaders.read_model, await self.loaders.state.read_data_version()
        found: dict[KH, V] = {}
        if model is not None and version is not None:
            for key in keys:
                workload = self.workload_of(key)
                if workload is not None and (value := self.kept(model, workload, key, version)) is not MISSING:
                    found[key] = value
        missing = [k for k in dict.fromkeys(keys) if k not in found]
        if missing:
            computed = await self.compute(missing)
            if model is not None and version is not None:
                for key, value in computed.items():
                    workload = self.workload_of(key)
                    if workload is not None:
                        self.keep(model, workload, key, version, value)
            found.update(computed)
        return [found[k] for k in keys]


class WorkloadBySlugLoader(Loader[str, Workload | None]):
    async def batch_load(self, keys: list[str]) -> list[Workload | None]:
        rows = (await self.session.scalars(select(Workload).where(Workload.slug.in_(keys)))).all()
        self.loaders.state.reads.found(rows, len(set(keys)))
        by_slug = {w.slug: w for w in rows}
        for w in rows:
            self.loaders.workload_by_id.prime(w.id, w)
        return [by_slug.get(s) for s in keys]


class WorkloadByIdLoader(Loader[int, Workload | None]):
    async def batch_load(self, keys: list[int]) -> list[Workload | None]:
        rows = (await self.session.scalars(select(Workload).where(Workload.id.in_(keys)))).all()
        self.loaders.state.reads.found(rows, len(set(keys)))
        by_id = {w.id: w for w in rows}
        return [by_id.get(i) for i in keys]


class PageByWorkloadIdLoader(ReadModelLoader[int, WorkloadPage]):
    """A workload's page from the precomputed cohort bests: from the read model when it holds the
    workload's current page, else computed and kept there."""

    def workload_of(self, key: int) -> int | None:
        return key

    async def compute(self, keys: list[int]) -> Mapping[int, WorkloadPage]:
        workloads = [w for w in await self.loaders.workload_by_id.load_many(keys) if w is not None]
        return await load_page_evidence(self.session, workloads, await self.loaders.catalogue_facts())

    def kept(self, model: ReadModel, workload: int, key: int, version: int) -> Any:
        page = model.page(workload, version)
        return MISSING if page is None else page

    def keep(self, model: ReadModel, workload: int, key: int, version: int, value: WorkloadPage) -> None:
        _out_of_session(self.session, value)
        model.put_page(workload, version, value)


def _out_of_session(session: AsyncSession, page: WorkloadPage) -> None:
    """A page's rows out of this request's session before the read model keeps it: the session's
    rollback at the end expires the rows in it, and a later request would meet a detached row it
    cannot refresh."""
    for row in (page.workload, page.revision):
        if row is not None and object_session(row) is not None:
            session.expunge(row)


class PageByScopeLoader(ReadModelLoader[tuple[int, RecordScope], WorkloadPage]):
    """A workload's records at another configuration or for another metric (eligibility-v3), as a page
    of that scope: built like the headline page, from that scope's cohort bests."""

    kind = "scoped_page"

    def workload_of(self, key: tuple[int, RecordScope]) -> int | None:
        return key[0]

    async def compute(self, keys: list[tuple[int, RecordScope]]) -> Mapping[tuple[int, RecordScope], WorkloadPage]:
        by_scope: dict[RecordScope, list[int]] = defaultdict(list)
        for workload_id, scope in keys:
            by_scope[scope].append(workload_id)
        out: dict[tuple[int, RecordScope], WorkloadPage] = {}
        for scope, ids in by_scope.items():
            workloads = [w for w in await self.loaders.workload_by_id.load_many(ids) if w is not None]
            pages = await load_page_evidence(self.session, workloads, await self.loaders.catalogue_facts(), scope)
            out.update({(workload_id, scope): page for workload_id, page in pages.items()})
        return out

    def keep(self, model: ReadModel, workload: int, key: tuple[int, RecordScope], version: int, value: WorkloadPage) -> None:
        _out_of_session(self.session, value)
        model.put_value(workload, (self.kind, key), version, value)


class RecordScopesByWorkloadIdLoader(ReadModelLoader[int, list[ScopeSummary]]):
    """The configurations and metrics a workload holds records at (Workload.configurations)."""

    kind = "record_scopes"

    def workload_of(self, key: int) -> int | None:
        return key

    async def compute(self, keys: list[int]) -> Mapping[int, list[ScopeSummary]]:
        return await load_record_scopes(self.session, keys)


class CohortTopLoader(ReadModelLoader[CohortTopKey, CohortTop]):
    """The rows a comparison of a cohort shows (its first `limit`), its baseline and cross-check runs."""

    kind = "cohort_top"

    def workload_of(self, key: CohortTopKey) -> int | None:
        return self.loaders.workload_of_revision(key[0][0])

    async def compute(self, keys: list[CohortTopKey]) -> Mapping[CohortTopKey, CohortTop]:
        return await load_cohort_tops(self.session, keys)


class SubjectMeasurementsLoader(ReadModelLoader[Subject, list[RunFacts]]):
    """Every eligible measurement of a workload revision, configuration, implementation and hardware."""

    kind = "subject_measurements"

    def workload_of(self, key: Subject) -> int | None:
        return self.loaders.workload_of_revision(key[0])

    async def compute(self, keys: list[Subject]) -> Mapping[Subject, list[RunFacts]]:
        return await load_subject_measurements(self.session, keys)


class PageRunsByWorkloadIdLoader(ReadModelLoader[int, PageRuns]):
    """A workload's latest eligible measurements per implementation and SKU and its runs held for review,
    read together (pages.load_page_runs): a page that shows both asks the database once."""

    kind = "page_runs"

    def workload_of(self, key: int) -> int | None:
        return key

    async def compute(self, keys: list[int]) -> Mapping[int, PageRuns]:
        return await load_page_runs(self.session, await self.loaders.page_by_workload_id.load_many(keys))


class MeasuredRunsByWorkloadIdLoader(Loader[int, list[RunFacts]]):
    """A workload's latest eligible measurements per implementation and SKU (for the trust ladder)."""

    async def batch_load(self, keys: list[int]) -> list[list[RunFacts]]:
        return [runs.measured for runs in await self.loaders.page_runs_by_workload_id.load_many(keys)]


class HeldRunsByWorkloadIdLoader(Loader[int, list[HeldRun]]):
    """A workload's runs held for review (current revision, canonical configuration), fastest first."""

    async def batch_load(self, keys: list[int]) -> list[list[HeldRun]]:
        return [runs.held for runs in await self.loaders.page_runs_by_workload_id.load_many(keys)]


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


class RevisionsByWorkloadIdLoader(ReadModelLoader[int, list[RevisionFacts]]):
    """Every revision of a workload, oldest first."""

    kind = "revisions"

    def workload_of(self, key: int) -> int | None:
        return key

    async def compute(self, keys: list[int]) -> Mapping[int, list[RevisionFacts]]:
        return await load_revisions_of_workloads(self.session, keys)


class Loaders:
    """The loaders of one request; each is made on first use (a request answered from the response
    cache uses none). They record what they read, and read the data version the read model's values are
    looked up and kept at, on the request's state (kernelindex.graphql.request_state): the version the
    response cache's look-up read, or read by the first loader that needs it; none read, the read model
    is not used."""

    def __init__(self, session: AsyncSession, state: RequestState, read_model: ReadModel | None = None):
        self.session = session
        self.state = state
        self._catalogue: list[Hardware] | None = None
        self._catalogue_facts: list[HardwareFacts] | None = None
        self.read_model = read_model if read_model is not None and read_model.enabled else None

    def workload_of_revision(self, revision_id: int) -> int | None:
        """The workload of a current revision whose page the read model holds (None: not known)."""
        return self.read_model.workload_of_revision(revision_id) if self.read_model is not None else None

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
    def page_by_scope(self) -> PageByScopeLoader:
        return PageByScopeLoader(self)

    @cached_property
    def record_scopes_by_workload_id(self) -> RecordScopesByWorkloadIdLoader:
        return RecordScopesByWorkloadIdLoader(self)

    @cached_property
    def cohort_top(self) -> CohortTopLoader:
        return CohortTopLoader(self)

    @cached_property
    def subject_measurements(self) -> SubjectMeasurementsLoader:
        return SubjectMeasurementsLoader(self)

    @cached_property
    def page_runs_by_workload_id(self) -> PageRunsByWorkloadIdLoader:
        return PageRunsByWorkloadIdLoader(self)

    @cached_property
    def measured_runs_by_workload_id(self) -> MeasuredRunsByWorkloadIdLoader:
        return MeasuredRunsByWorkloadIdLoader(self)

    @cached_property
    def held_runs_by_workload_id(self) -> HeldRunsByWorkloadIdLoader:
        return HeldRunsByWorkloadIdLoader(self)

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

    async def catalogue_facts(self) -> list[HardwareFacts]:
        """The hardware catalogue's facts (what a page holds), read once per request as columns."""
        if self._catalogue_facts is None:
            self._catalogue_facts = await load_catalogue_facts(self.session)
        return self._catalogue_facts
