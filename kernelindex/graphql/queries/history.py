"""Record history: a workload's events and the global feed of the newest records."""

from __future__ import annotations

import strawberry
from sqlalchemy import select

from kernelindex.db.models import RecordEvent as RecordEventRow
from kernelindex.db.models import Run as RunRow
from kernelindex.db.models import Workload as WorkloadRow
from kernelindex.graphql.pagination import Connection, keyset_page
from kernelindex.graphql.types.judgement import RecordEvent
from kernelindex.services.evidence import FactsBuilder, run_rows_statement


async def record_events_page(info: strawberry.Info, first: int, after: str | None, workload_id: int | None = None,
                             kinds: tuple[str, ...] | None = None) -> Connection[RecordEvent]:
    statement = select(RecordEventRow, WorkloadRow.slug).join(WorkloadRow, WorkloadRow.id == RecordEventRow.workload_id)
    if workload_id is not None:
        statement = statement.where(RecordEventRow.workload_id == workload_id)
    if kinds:
        statement = statement.where(RecordEventRow.kind.in_(kinds))
    session = info.context.session
    connection = await keyset_page(
        session, statement, kind="record-event", order=(-RecordEventRow.id,), key_of=lambda row: (-row[0].id,),
        make_node=lambda row: row, first=first, after=after,
        max_page_size=info.context.settings.max_page_size, count_from=statement,
    )
    run_ids = {i for edge in connection.edges for i in (edge.node[0].run_id, edge.node[0].previous_run_id) if i}
    builder = FactsBuilder()
    facts = {}
    if run_ids:
        facts = {row[0].id: builder.run(*row) for row in (await session.execute(run_rows_statement().where(RunRow.id.in_(run_ids)))).all()}
    for edge in connection.edges:
        row, slug = edge.node
        edge.node = RecordEvent(row=row, run_facts=facts.get(row.run_id), previous_facts=facts.get(row.previous_run_id),
                                workload_slug_value=slug)
    return connection


@strawberry.type
class HistoryQueries:
    @strawberry.field(description="The newest record events across all workloads (new records and restorations), newest first.")
    async def record_feed(self, info: strawberry.Info, first: int = 20, after: str | None = None) -> Connection[RecordEvent]:
        return await record_events_page(info, first, after)
