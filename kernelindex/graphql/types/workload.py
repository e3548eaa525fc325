"""Workloads: a reference module's forward pass, its semantics, and everything computed from its runs."""

from __future__ import annotations

from collections.abc import Awaitable
from datetime import date
from typing import Annotated

import strawberry

from kernelindex.db.models import Workload as WorkloadRow
from kernelindex.graphql.context import Context
from kernelindex.graphql.cost import LONG_TEXT, cost_weight
from kernelindex.graphql.enums import AxisBehaviour, Determinism, Evidence, Metric, RunOrder, WorkloadKind, of_rules
from kernelindex.graphql.errors import UserInputError
from kernelindex.graphql.node import Node, to_global_id
from kernelindex.graphql.pagination import (
    LIST_DEFAULT,
    AfterArg,
    BeforeArg,
    Connection,
    FirstArg,
    LastArg,
    first_of,
    page_window,
)
from kernelindex.graphql.plan import PAGE_VALUE
from kernelindex.graphql.queries.runs import run_connection
from kernelindex.graphql.text import SHORT_TEXT_KIB, short_text, text_piece, text_size
from kernelindex.graphql.types.catalogue import Source
from kernelindex.graphql.types.headroom import Headroom, RooflineFloor
from kernelindex.graphql.types.history import RecordEvent, record_events_page
from kernelindex.graphql.types.page import Comparison, HardwareGap, Headline, ImplementationSummary
from kernelindex.graphql.types.policy import Policy
from kernelindex.graphql.types.records import EnvironmentRecord, RecordConfiguration
from kernelindex.graphql.types.revision import WorkloadRevision
from kernelindex.graphql.types.run import Configuration, Run
from kernelindex.rules.display import format_date, plural
from kernelindex.rules.eligibility import HEADLINE, RecordScope
from kernelindex.rules.headroom_inputs import best_record_by_hardware, record_headroom_v1
from kernelindex.rules.headroom_v2 import floors_for_catalogue, roofline_floor
from kernelindex.rules.identity import IDENTITY_VERSION, short_digest
from kernelindex.rules.plausibility import held_summary
from kernelindex.rules.suites import suite_title
from kernelindex.rules.trust_context import implementation_context
from kernelindex.services.read_model import MISSING
from kernelindex.services.run_filters import RunFilters
from kernelindex.services.workload_page import WorkloadPage

# The lists of a workload page are computed whole from its runs and capped by `first` (at most the
# server's page size, 100): one per environment, implementation, catalogued SKU or source.
FIRST_DOC = "How many, at most (1 to 100; default 100)."


@strawberry.type(description="A declared input or output tensor.")
class TensorSpec:
    name: str = strawberry.field(description="Name, e.g. 'input_1'.")
    dtype: str = strawberry.field(description="Data type, e.g. 'fp32' ('float' when only the kind is declared).")
    shape: list[str] = strawberry.field(description="Symbolic shape: axis names or integers, as text.")

    @strawberry.field(description="'fp32 [batch_size, 3, 224, 224]'.")
    def display(self) -> str:
        return f"{self.dtype} [{', '.join(self.shape)}]"


@strawberry.type(description="An axis and how it behaves.")
class Axis:
    name: str = strawberry.field(description="Axis name.")
    behaviour: AxisBehaviour = strawberry.field(description="Whether a configuration may bind it.")
    value: int | None = strawberry.field(description="The value of a constant axis.")
    expression: str | None = strawberry.field(description="How a derived axis is computed, as the source writes it ('k // 128').")


@strawberry.type(description="What the computation takes and gives, and the promises it makes.")
class Semantics:
    inputs: list[TensorSpec] = strawberry.field(description="Ordered inputs.")
    outputs: list[TensorSpec] = strawberry.field(description="Ordered outputs.")
    axes: list[Axis] = strawberry.field(description="Axes and their behaviour.")
    determinism: Determinism = strawberry.field(description="Whether the same input gives the same output.")
    constraints: list[str] = strawberry.field(description="Constraints, e.g. 'No mutation or aliasing'.")

    @staticmethod
    def of(data: dict) -> Semantics:
        def tensors(items):
            return [TensorSpec(name=t["name"], dtype=t["dtype"], shape=[str(d) for d in t["shape"]]) for t in items]

        return Semantics(
            inputs=tensors(data.get("inputs", [])),
            outputs=tensors(data.get("outputs", [])),
            axes=[Axis(name=a["name"], behaviour=of_rules(AxisBehaviour, a["behaviour"]), value=a.get("value"),
                       expression=a.get("expression"))
                  for a in data.get("axes", [])],
            determinism=of_rules(Determinism, data.get("determinism", "unspecified")),
            constraints=list(data.get("constraints", [])),
        )


@strawberry.type(description="The workload's identity: sha256 over the canonical JSON of its semantics and reference source.")
class Identity:
    sha256: str = strawberry.field(description="Full digest.")
    version: str = strawberry.field(description="Identity rule version.")

    @strawberry.field(description="'245e5928b637…'.")
    def short(self) -> str:
        return short_digest(self.sha256)


async def scoped_page(info: strawberry.Info[Context, None], row: WorkloadRow, configuration: str | None, metric: Metric) -> WorkloadPage:
    """A workload's page of records at `configuration` (its key; None: the canonical one) for `metric`
    (eligibility-v3); a key at which it holds no records of that metric is an error naming where to find
    those it holds."""
    wanted = str(metric.value)  # the rules' word (an enum_value's value is typed loosely)
    scope = RecordScope(configuration, wanted)
    if configuration is not None:
        scopes = await info.context.loaders.record_scopes_by_workload_id.load(row.id)
        found = next((s for s in scopes if s.configuration_key == configuration and s.metric == wanted), None)
        if found is None:
            raise UserInputError(
                f"{row.slug} holds no {wanted} records at configuration {configuration!r}: "
                f"Workload.configurations lists the {len(scopes)} configuration and metric pairs that hold records")
        scope = found.scope
    if scope == HEADLINE:
        return await info.context.loaders.page_by_workload_id.load(row.id)
    return await info.context.loaders.page_by_scope.load((row.id, scope))


CONFIGURATION_DOC = "A configuration's key, as Workload.configurations gives it; null: the canonical configuration."


def _headline_of(page: WorkloadPage) -> Headline | None:
    return Headline(page=page, record=page.overall_record) if page.overall_record else None


def _records_of(page: WorkloadPage, first: int, max_page_size: int) -> list[EnvironmentRecord]:
    return [EnvironmentRecord(record=r) for r in first_of(page.records, first, max_page_size)]


@strawberry.type(description="A benchmark problem: a reference PyTorch module's forward pass at a canonical configuration.")
class Workload(Node):
    row: strawberry.Private[WorkloadRow]

    # Written by hand (as the catalogue types are): the row's own fields are plain fields, filled
    # once (a list shows them for every workload); what comes from the page stays resolvers.
    def __init__(self, row: WorkloadRow) -> None:
        self.row = row
        self._page_value_key: tuple[WorkloadPage, int] | None = None
        self.id = to_global_id("Workload", row.id)
        self.database_id = row.id
        self.slug = row.slug
        self.suite = row.suite
        self.level = row.level
        self.problem_number = row.problem_number
        self.suite_key = row.suite_key
        self.family = row.family
        self.reference = row.reference
        self.aliases = list(row.aliases or ())
        self.name = row.name
        self.kind = of_rules(WorkloadKind, row.kind)
        suite = suite_title(row.suite)
        self.title = (f"{suite} level{row.level} problem {row.problem_number}: {row.name}." if row.level is not None
                      else f"{suite}: {row.name}.")

    async def _page(self, info: strawberry.Info[Context, None]) -> WorkloadPage:
        return await info.context.loaders.page_by_workload_id.load(self.row.id)

    def _page_loaded(self, info: strawberry.Info[Context, None]) -> WorkloadPage | None:
        """The page when this request has loaded it already (a list loads its workloads' pages before
        their fields are resolved: queries.workloads), so that the fields a list shows are answered
        without a coroutine each; None: `_page` loads it (or gives its error)."""
        return self._loaded_page(info.context)

    def _loaded_page(self, context: Context) -> WorkloadPage | None:
        page = context.loaders.page_by_workload_id.loaded(self.row.id)
        return None if page is MISSING else page

    def page_value_key(self, context: Context) -> tuple[WorkloadPage, int] | None:
        """For the plan's PAGE_VALUE fields (kernelindex.graphql.plan): the page their values are a
        function of, and what else they read (the server's page size, which caps `records`); None while
        this request has not loaded the page."""
        found = self._page_value_key
        if found is None:
            page = self._loaded_page(context)
            if page is None:
                return None
            # Kept for this request's other fields of this object: a loaded page stays loaded.
            found = self._page_value_key = (page, context.settings.max_page_size)
        return found

    id: strawberry.ID = strawberry.field(description="Opaque global ID.")
    database_id: int = strawberry.field(description="Database id (stable, for scripts).")
    slug: str = strawberry.field(description="Stable slug, e.g. 'kernelbench-l3-p9-resnet18'.")
    suite: str = strawberry.field(description="Suite, e.g. 'kernelbench'.")
    level: int | None = strawberry.field(description="Level within the suite (KernelBench); null for a suite without levels.")
    problem_number: int | None = strawberry.field(description="Problem number within the level (KernelBench); null for a suite without levels.")
    suite_key: str | None = strawberry.field(
        description="The suite's own name for the workload, e.g. FlashInfer-Bench's operation name (null for KernelBench, "
                    "named by level and problem number).")
    family: str | None = strawberry.field(description="The operation family the suite states, e.g. 'gqa-paged-attention'.")
    aliases: list[str] = strawberry.field(description="Other names the suite gives the workload (nameContains finds them).")
    reference: str | None = strawberry.field(
        description="What the workload's reference is, in its source's words; null for KernelBench, whose reference is the "
                    "problem file's PyTorch module.")
    name: str = strawberry.field(description="Name, e.g. 'ResNet18'.")
    kind: WorkloadKind = strawberry.field(description="Model, operator or fusion.")
    title: str = strawberry.field(description="'KernelBench level3 problem 9: ResNet18.'; for a suite without levels, 'Suite: name.'")

    @strawberry.field(description="What the computation is (at most 2 KiB; longer text is cut, with a marker).",
                      metadata=cost_weight(SHORT_TEXT_KIB))
    def description(self) -> str | None:
        return short_text(self.row.description)

    @strawberry.field(
        description="The reference module's source (current revision): at most 256 KiB of it (the server's "
        "max_text_bytes), in UTF-8 bytes from `offset`, cut at character boundaries. referenceSourceSizeBytes says "
        "how long it is; read the rest with offset = the previous offset + the UTF-8 size of the piece returned.",
        metadata=cost_weight(LONG_TEXT),
    )
    async def reference_source(
        self, info: strawberry.Info[Context, None],
        offset: Annotated[int, strawberry.argument(description="Byte offset to start from (0: the start).")] = 0,
    ) -> str | None:
        page = await self._page(info)
        if page.revision is None or page.revision.reference_source is None:
            return None
        return text_piece(page.revision.reference_source, offset, info.context.settings.max_text_bytes)

    @strawberry.field(description="Size of the stored reference source in UTF-8 bytes; null when there is none.")
    async def reference_source_size_bytes(self, info: strawberry.Info[Context, None]) -> int | None:
        page = await self._page(info)
        if page.revision is None or page.revision.reference_source is None:
            return None
        return text_size(page.revision.reference_source)

    @strawberry.field(description="True when the reference source is longer than one piece of referenceSource (256 KiB): read the rest with its `offset`.")
    async def reference_source_truncated(self, info: strawberry.Info[Context, None]) -> bool:
        size = await self.reference_source_size_bytes(info)
        return size is not None and size > info.context.settings.max_text_bytes

    @strawberry.field(description="sha256 of the upstream reference file (current revision): the revision's identity. While the stored source is a stand-in (see revisions), it is not the digest of referenceSource.")
    async def source_sha256(self, info: strawberry.Info[Context, None]) -> str | None:
        page = await self._page(info)
        return page.revision.source_sha256 if page.revision else None

    @strawberry.field(description="In its suite's latest complete upstream snapshot; false once upstream replaced, renamed or removed the problem (the workload and its runs stay); null while no complete snapshot of the suite is known.")
    def in_latest_snapshot(self) -> bool | None:
        return self.row.in_latest_snapshot

    @strawberry.field(description="Every revision of the reference source, oldest first; only the current one's runs count for records. A capped list: the first `first` of them (at most 100).")
    async def revisions(self, info: strawberry.Info[Context, None], first: Annotated[int, strawberry.argument(description=FIRST_DOC)] = LIST_DEFAULT) -> list[WorkloadRevision]:
        revisions = await info.context.loaders.revisions_by_workload_id.load(self.row.id)
        return [WorkloadRevision(facts=f) for f in first_of(revisions, first, info.context.settings.max_page_size)]

    @strawberry.field(description="The configuration records are measured at.")
    async def canonical_configuration(self, info: strawberry.Info[Context, None]) -> Configuration:
        page = await self._page(info)
        return Configuration.of(page.facts.canonical_bindings, page.facts.canonical_dtype)

    @strawberry.field(description="Declared semantics; null when the reference could not be traced.")
    async def semantics(self, info: strawberry.Info[Context, None]) -> Semantics | None:
        page = await self._page(info)
        return Semantics.of(page.revision.semantics) if page.revision and page.revision.semantics else None

    @strawberry.field(description="Why semantics are missing, when they are (at most 2 KiB; longer text is cut, with a marker).",
                      metadata=cost_weight(SHORT_TEXT_KIB))
    async def semantics_error(self, info: strawberry.Info[Context, None]) -> str | None:
        page = await self._page(info)
        return short_text(page.revision.semantics_error) if page.revision else None

    @strawberry.field(description="Identity digest over semantics and reference source.")
    async def identity(self, info: strawberry.Info[Context, None]) -> Identity | None:
        page = await self._page(info)
        return Identity(sha256=page.revision.identity_sha256, version=IDENTITY_VERSION) if page.revision else None

    @strawberry.field(description="Passed live runs of the current revision at the canonical configuration, not held for review.",
                      graphql_type=int, metadata={PAGE_VALUE: True})
    def eligible_run_count(self, info: strawberry.Info[Context, None]) -> int | Awaitable[int]:
        page = self._page_loaded(info)
        return self._eligible_run_count(info) if page is None else page.eligible_count

    async def _eligible_run_count(self, info: strawberry.Info[Context, None]) -> int:
        return (await self._page(info)).eligible_count

    @strawberry.field(description="'4 eligible runs'.")
    async def eligible_run_count_display(self, info: strawberry.Info[Context, None]) -> str:
        return plural((await self._page(info)).eligible_count, "eligible run")

    @strawberry.field(description="Passed live runs of the current revision at the canonical configuration held for review (plausibility-v2): not counted in eligibleRunCount, not in any record until a review approves them.")
    async def held_run_count(self, info: strawberry.Info[Context, None]) -> int:
        return len(await info.context.loaders.held_runs_by_workload_id.load(self.row.id))

    @strawberry.field(description="The held runs in words, e.g. '1 faster run held for review: implausible speedup' ('faster': than the record its cohort shows, or its cohort shows none); null when none is held.")
    async def held_summary(self, info: strawberry.Info[Context, None]) -> str | None:
        held = await info.context.loaders.held_runs_by_workload_id.load(self.row.id)
        return held_summary(h.summary_item for h in held)

    @strawberry.field(description="Who holds the overall record; null with no eligible run.", graphql_type=Headline | None,
                      metadata={PAGE_VALUE: True})
    def headline(self, info: strawberry.Info[Context, None]) -> Headline | None | Awaitable[Headline | None]:
        page = self._page_loaded(info)
        return self._headline(info) if page is None else _headline_of(page)

    async def _headline(self, info: strawberry.Info[Context, None]) -> Headline | None:
        return _headline_of(await self._page(info))

    @strawberry.field(description="Per environment, the fastest eligible run, fastest first. A capped list: the first `first` of them (at most 100).",
                      graphql_type=list[EnvironmentRecord], metadata={PAGE_VALUE: True})
    def records(self, info: strawberry.Info[Context, None], first: Annotated[int, strawberry.argument(description=FIRST_DOC)] = LIST_DEFAULT
                ) -> list[EnvironmentRecord] | Awaitable[list[EnvironmentRecord]]:
        page = self._page_loaded(info)
        return self._records(info, first) if page is None else _records_of(page, first, info.context.settings.max_page_size)

    async def _records(self, info: strawberry.Info[Context, None], first: int) -> list[EnvironmentRecord]:
        return _records_of(await self._page(info), first, info.context.settings.max_page_size)

    @strawberry.field(description="The ranked cohort of the overall record's environment.")
    async def comparison(self, info: strawberry.Info[Context, None]) -> Comparison | None:
        page = await self._page(info)
        record = page.overall_record
        if record is None:
            return None
        # The rows' trust levels weigh the latest measurements per implementation and SKU, as the
        # implementation summaries do.
        measured = await info.context.loaders.measured_runs_by_workload_id.load(self.row.id)
        return Comparison(record=record, summary=page.cohort_summaries[record.run.cohort_key],
                          canonical_configuration_key=page.facts.canonical_configuration_key, measured_runs=measured)

    @strawberry.field(description="Every environment's ranked cohort, in record order. A capped list: the first `first` of them (at most 100).")
    async def comparisons(self, info: strawberry.Info[Context, None], first: Annotated[int, strawberry.argument(description=FIRST_DOC)] = LIST_DEFAULT) -> list[Comparison]:
        page = await self._page(info)
        canonical = page.facts.canonical_configuration_key
        records = first_of(page.records, first, info.context.settings.max_page_size)
        # measured_runs=None: each row's trust level weighs every eligible measurement of its
        # implementation on its SKU, read for the rows shown.
        return [
            Comparison(record=r, summary=page.cohort_summaries[r.run.cohort_key], canonical_configuration_key=canonical,
                       measured_runs=None)
            for r in records
        ]

    @strawberry.field(description="The configurations and metrics of the current revision that hold records (eligibility-v3), the canonical configuration first: each has records of its own, compared only with its like (recordsAt, comparisonsAt). A capped list: the first `first` of them (at most 100).")
    async def configurations(self, info: strawberry.Info[Context, None], first: Annotated[int, strawberry.argument(description=FIRST_DOC)] = LIST_DEFAULT) -> list[RecordConfiguration]:
        scopes = await info.context.loaders.record_scopes_by_workload_id.load(self.row.id)
        shown = first_of(scopes, first, info.context.settings.max_page_size)
        catalogue = (await self._page(info)).catalogue if shown else ()
        return [RecordConfiguration(summary=s, hardware_facts=[h for h in catalogue if h.id in s.hardware_ids]) for s in shown]

    async def _scoped_page(self, info: strawberry.Info[Context, None], configuration: str | None, metric: Metric) -> WorkloadPage:
        return await scoped_page(info, self.row, configuration, metric)

    @strawberry.field(description="Per environment, the best eligible run at a configuration for a metric (eligibility-v3), best first: the headline records (records) when both are left out. A capped list: the first `first` of them (at most 100).")
    async def records_at(
        self, info: strawberry.Info[Context, None],
        configuration: Annotated[str | None, strawberry.argument(description=CONFIGURATION_DOC)] = None,
        metric: Annotated[Metric, strawberry.argument(description="The metric whose records to show.")] = Metric.LATENCY,
        first: Annotated[int, strawberry.argument(description=FIRST_DOC)] = LIST_DEFAULT,
    ) -> list[EnvironmentRecord]:
        page = await self._scoped_page(info, configuration, metric)
        return [EnvironmentRecord(record=r) for r in first_of(page.records, first, info.context.settings.max_page_size)]

    @strawberry.field(description="Every environment's ranked cohort of latencies at a configuration (eligibility-v3), in record order, each row with its speedup over the source's baseline: comparisons at another configuration. A capped list: the first `first` of them (at most 100).")
    async def comparisons_at(
        self, info: strawberry.Info[Context, None],
        configuration: Annotated[str | None, strawberry.argument(description=CONFIGURATION_DOC)] = None,
        first: Annotated[int, strawberry.argument(description=FIRST_DOC)] = LIST_DEFAULT,
    ) -> list[Comparison]:
        page = await self._scoped_page(info, configuration, Metric.LATENCY)
        records = first_of(page.records, first, info.context.settings.max_page_size)
        # Every row of a cohort is at the scope's configuration: 'exact' against it, as against the
        # canonical one on the headline page.
        at = configuration if configuration is not None else page.facts.canonical_configuration_key
        return [
            Comparison(record=r, summary=page.cohort_summaries[r.run.cohort_key], canonical_configuration_key=at,
                       measured_runs=None)
            for r in records
        ]

    @strawberry.field(description="Each implementation's best latency over all environments and its ratio to the best. A capped list: the first `first` of them (at most 100).")
    async def implementations(self, info: strawberry.Info[Context, None], first: Annotated[int, strawberry.argument(description=FIRST_DOC)] = LIST_DEFAULT) -> list[ImplementationSummary]:
        page = await self._page(info)
        bests = first_of(page.implementation_bests, first, info.context.settings.max_page_size)
        measured = await info.context.loaders.measured_runs_by_workload_id.load(self.row.id)
        return [
            ImplementationSummary(best=b, evidence_kinds_found=[of_rules(Evidence, e) for e in sorted(page.evidence_kinds(b.run.implementation.id))],
                                  runs=implementation_context(measured, b.run))
            for b in bests
        ]

    @strawberry.field(description="Priority hardware with no run of this workload to show: neither an eligible run nor one held for review (heldSummary counts those). A capped list: the first `first` of them (at most 100).")
    async def not_measured(self, info: strawberry.Info[Context, None], first: Annotated[int, strawberry.argument(description=FIRST_DOC)] = LIST_DEFAULT) -> list[HardwareGap]:
        page = await self._page(info)
        measured = set(page.measured_hardware_ids)
        if any(h.priority and h.id not in measured for h in page.catalogue):
            # A SKU whose only runs are held was measured: "Not measured" would be false there.
            held = await info.context.loaders.held_runs_by_workload_id.load(self.row.id)
            measured.update(h.run.environment.hardware.id for h in held)
        gaps = [h for h in page.catalogue if h.priority and h.id not in measured]
        return [HardwareGap(hardware_facts=h) for h in first_of(gaps, first, info.context.settings.max_page_size)]

    @strawberry.field(description="headroom-v1 floor for the overall record's hardware family.")
    async def headroom(self, info: strawberry.Info[Context, None]) -> Headroom:
        page = await self._page(info)
        semantics = page.revision.semantics if page.revision else None
        return Headroom(result=record_headroom_v1(semantics, page.facts.canonical_bindings, page.overall_record, page.catalogue))

    @strawberry.field(description="headroom-v3 on the overall record's exact SKU: a roofline floor from bytes and FLOPs counted on the meta device.")
    async def roofline(self, info: strawberry.Info[Context, None]) -> RooflineFloor | None:
        page = await self._page(info)
        record = page.overall_record
        if record is None or page.revision is None:
            return None
        floor = roofline_floor(page.revision.analysis, record.run.environment.hardware, record.run.figure)
        return RooflineFloor(floor=floor, record_run=record.run)

    @strawberry.field(description="headroom-v3 on every catalogued SKU, with the record on that SKU where there is one: what each GPU could at best do. A capped list: the first `first` of them (at most 100).")
    async def floors(self, info: strawberry.Info[Context, None], first: Annotated[int, strawberry.argument(description=FIRST_DOC)] = LIST_DEFAULT) -> list[RooflineFloor]:
        page = await self._page(info)
        analysis = page.revision.analysis if page.revision else None
        best_on = best_record_by_hardware(page.records)
        floors = first_of(floors_for_catalogue(analysis, page.catalogue), first, info.context.settings.max_page_size)
        out = []
        for f in floors:
            best = best_on.get(f.hardware.id)
            out.append(RooflineFloor(floor=f.with_record(best.figure if best else None), record_run=best))
        return out

    @strawberry.field(description="Changes of record holder for this workload, newest first.")
    async def record_history(self, info: strawberry.Info[Context, None], first: FirstArg = None, after: AfterArg = None,
                             last: LastArg = None, before: BeforeArg = None) -> Connection[RecordEvent]:
        return await record_events_page(info, first, after, last, before, workload_id=self.row.id)

    @strawberry.field(description="Sources of the eligible runs. A capped list: the first `first` of them (at most 100).")
    async def sources(self, info: strawberry.Info[Context, None], first: Annotated[int, strawberry.argument(description=FIRST_DOC)] = LIST_DEFAULT) -> list[Source]:
        sources = first_of((await self._page(info)).sources, first, info.context.settings.max_page_size)
        return [Source(facts=s) for s in sources]

    @strawberry.field(description="Latest observation among the eligible runs.")
    async def last_observed(self, info: strawberry.Info[Context, None]) -> date | None:
        return (await self._page(info)).last_observed

    @strawberry.field(description="'last observed 2026-03-05'.")
    async def last_observed_display(self, info: strawberry.Info[Context, None]) -> str | None:
        last = await self.last_observed(info)
        return f"last observed {format_date(last)}" if last else None

    @strawberry.field(description="Every live (not superseded) run of this workload, any revision, configuration or status; fastest first unless ordered otherwise. `Query.runs(workload:)` has the filters.")
    async def runs(
        self, info: strawberry.Info[Context, None], first: FirstArg = None, after: AfterArg = None,
        last: LastArg = None, before: BeforeArg = None,
        order_by: Annotated[RunOrder, strawberry.argument(description="Sort order.")] = RunOrder.FASTEST,
    ) -> Connection[Run]:
        window = page_window(first, after, last, before, info.context.settings.max_page_size)
        return await run_connection(info, RunFilters(workload=self.row.slug), window=window, order_by=order_by)

    @strawberry.field(description="The written policy that decides records.")
    def policy(self) -> Policy:
        return Policy()
