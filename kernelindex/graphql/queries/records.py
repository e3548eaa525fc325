"""Current records on one piece of hardware, across workloads."""

from __future__ import annotations

from typing import Annotated

import strawberry
from sqlalchemy import select

from kernelindex.db.models import Hardware as HardwareRow
from kernelindex.db.models import Workload as WorkloadRow
from kernelindex.graphql.context import Context
from kernelindex.graphql.enums import Metric
from kernelindex.graphql.errors import UserInputError
from kernelindex.graphql.node import Node, workload_records_id
from kernelindex.graphql.pagination import (
    LIST_DEFAULT,
    AfterArg,
    BeforeArg,
    Connection,
    FirstArg,
    LastArg,
    first_of,
    keyset_page,
)
from kernelindex.graphql.queries.workloads import measured_on_clause
from kernelindex.graphql.types.records import EnvironmentRecord
from kernelindex.graphql.types.workload import CONFIGURATION_DOC, Workload, scoped_page
from kernelindex.services.run_filters import FilterError, check_names, hardware_matches


@strawberry.type(description="A workload's current records on the hardware asked for.")
class WorkloadRecords(Node):
    workload_row: strawberry.Private[WorkloadRow]
    hardware_ids: strawberry.Private[frozenset[int]]  # the hardware the name asked for matches

    @strawberry.field(description="Opaque global ID: the workload and the hardware the name matched.")
    def id(self) -> strawberry.ID:
        return workload_records_id(self.workload_row.id, self.hardware_ids)

    @strawberry.field(description="The workload.")
    def workload(self) -> Workload:
        return Workload(row=self.workload_row)

    @strawberry.field(description="Its records (one per environment) on that hardware, fastest first: the headline records, or those at another configuration or for another metric (Workload.recordsAt). A capped list: the first `first` of them (at most 100).")
    async def records(
        self, info: strawberry.Info[Context, None],
        first: Annotated[int, strawberry.argument(description="How many, at most (1 to 100; default 100).")] = LIST_DEFAULT,
        configuration: Annotated[str | None, strawberry.argument(description=CONFIGURATION_DOC)] = None,
        metric: Annotated[Metric, strawberry.argument(description="The metric whose records to show.")] = Metric.LATENCY,
    ) -> list[EnvironmentRecord]:
        evidence = await scoped_page(info, self.workload_row, configuration, metric)
        mine = [r for r in evidence.records if r.run.environment.hardware.id in self.hardware_ids]
        return [EnvironmentRecord(record=r) for r in first_of(mine, first, info.context.settings.max_page_size)]


@strawberry.type
class RecordQueries:
    @strawberry.field(description="Current records on a hardware SKU or family, workload by workload.")
    async def records(
        self,
        info: strawberry.Info[Context, None],
        hardware: Annotated[str, strawberry.argument(description="Hardware SKU, short name, family (every SKU of it) or driver product name, e.g. 'NVIDIA H100'; a name that matches nothing is an error listing the close matches.")],
        first: FirstArg = None,
        after: AfterArg = None,
        last: LastArg = None,
        before: BeforeArg = None,
        workload: Annotated[str | None, strawberry.argument(description="Only this workload (slug): its records on that hardware, or an empty list when it has none there.")] = None,
    ) -> Connection[WorkloadRecords]:
        # The hardware the name matches, once (run_filters.hardware_matches): none is an error that
        # lists the close matches, not an empty list.
        hardware_ids = frozenset((await info.context.session.scalars(
            select(HardwareRow.id).where(hardware_matches(hardware)))).all())
        if not hardware_ids:
            try:
                await check_names(info.context.session, hardware=hardware)
            except FilterError as exc:
                raise UserInputError(str(exc)) from exc
        statement = select(WorkloadRow).where(measured_on_clause(hardware))
        if workload is not None:
            # One workload's records on the hardware (the MCP server's "fastest on" asks this way): the same
            # records as the full list's, so its answer is this list's and never a second opinion.
            statement = statement.where(WorkloadRow.slug == workload)
        loaders = info.context.loaders

        def make_node(row):
            loaders.workload_by_id.prime(row[0].id, row[0])
            return WorkloadRecords(workload_row=row[0], hardware_ids=hardware_ids)

        return await keyset_page(
            info.context.session, statement, kind="records",
            order=(WorkloadRow.suite, WorkloadRow.level, WorkloadRow.problem_number, WorkloadRow.id),
            key_of=lambda row: (row[0].suite, row[0].level, row[0].problem_number, row[0].id),
            make_node=make_node, first=first, after=after, last=last, before=before,
            max_page_size=info.context.settings.max_page_size, count_from=statement,
        )
