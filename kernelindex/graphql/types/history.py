"""Record history: changes of record holder, appended as they happen, and how a page of them is read."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import strawberry
from sqlalchemy import Select, select
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.models import RecordEvent as RecordEventRow
from kernelindex.db.models import Run as RunRow
from kernelindex.db.models import Workload as WorkloadRow
from kernelindex.graphql.context import Context
from kernelindex.graphql.enums import RecordEventKind, of_rules
from kernelindex.graphql.node import Node, to_global_id
from kernelindex.graphql.pagination import Connection, keyset_page
from kernelindex.graphql.types.run import Run
from kernelindex.rules.display import computed_or_none
from kernelindex.rules.facts import RunFacts
from kernelindex.rules.history import EventDraft
from kernelindex.services.facts import FactsBuilder, run_rows_statement


@strawberry.type(description="A change of record holder in one cohort. Events are appended, never deleted.")
class RecordEvent(Node):
    row: strawberry.Private[RecordEventRow]
    run_facts: strawberry.Private[RunFacts | None]
    previous_facts: strawberry.Private[RunFacts | None]
    workload_slug_value: strawberry.Private[str]

    @strawberry.field(description="Opaque global ID.")
    def id(self) -> strawberry.ID:
        return to_global_id("RecordEvent", self.row.id)

    @strawberry.field(description="Database id (stable, for scripts).")
    def database_id(self) -> int:
        return self.row.id

    @strawberry.field(description="What changed the record.")
    def kind(self) -> RecordEventKind:
        return of_rules(RecordEventKind, self.row.kind)

    @strawberry.field(description="Workload slug.")
    def workload_slug(self) -> str:
        return self.workload_slug_value

    @strawberry.field(description="The holder after the event; null when no eligible run remains.")
    def run(self) -> Run | None:
        return Run(facts=self.run_facts) if self.run_facts else None

    @strawberry.field(description="The holder before the event.")
    def previous_run(self) -> Run | None:
        return Run(facts=self.previous_facts) if self.previous_facts else None

    @strawberry.field(description="(previous − new) / previous × 100; negative when a restore is slower. A number for "
                                  "computing: 12 significant figures, no binary noise (`words` says it rounded).")
    def improvement_percent(self) -> float | None:
        # Events stored before display-v1 keep their raw double; the API returns every one alike.
        return computed_or_none(self.row.improvement_percent)

    @strawberry.field(description="When it happened.")
    def created_at(self) -> datetime:
        return self.row.created_at

    @strawberry.field(description="Why, where the event gives a reason: a retracted snapshot's, e.g. "
                                  "'kernelbench snapshot abc1234 retracted: imported under the wrong revision'; null otherwise.")
    def reason(self) -> str | None:
        return self.row.reason

    @strawberry.field(description="The event in words.")
    def words(self) -> str:
        if self.row.reason:
            # The rule's sentence, then the reason on record.
            return f"{EventDraft(self.row.kind, None, None, None).words} {self.row.reason}"
        draft = EventDraft(
            self.row.kind, self.row.run_id, self.row.previous_run_id, self.row.improvement_percent,
            self.run_facts.figure if self.run_facts else None,
            self.previous_facts.figure if self.previous_facts else None,
        )
        return draft.words



async def record_events_page(
    info: strawberry.Info[Context, None], first: int | None, after: str | None, last: int | None = None,
    before: str | None = None, workload_id: int | None = None, kinds: tuple[str, ...] | None = None,
) -> Connection[RecordEvent]:
    """A page of record events, newest first, for one workload or all; each with its runs' facts."""
    statement = record_events_statement()
    if workload_id is not None:
        statement = statement.where(RecordEventRow.workload_id == workload_id)
    if kinds:
        statement = statement.where(RecordEventRow.kind.in_(kinds))
    session = info.context.session
    connection = await keyset_page(
        session, statement, kind="record-event", order=(-RecordEventRow.id,), key_of=lambda row: (-row[0].id,),
        make_node=lambda row: row, first=first, after=after, last=last, before=before,
        max_page_size=info.context.settings.max_page_size, count_from=statement,
    )
    events = await record_events(session, [edge.node for edge in connection.edges])
    for edge, event in zip(connection.edges, events, strict=True):
        edge.node = event
    return connection


async def record_events(session: AsyncSession, rows: Sequence[Any]) -> list[RecordEvent]:
    """RecordEvents of (event row, workload slug) rows, their runs' facts read in one statement."""
    run_ids = {i for event, _ in rows for i in (event.run_id, event.previous_run_id) if i}
    builder = FactsBuilder()
    facts: dict[int, RunFacts] = {}
    if run_ids:
        facts = {row[0].id: builder.run(*row) for row in (await session.execute(run_rows_statement().where(RunRow.id.in_(run_ids)))).all()}
    return [
        RecordEvent(row=event, run_facts=facts.get(event.run_id), previous_facts=facts.get(event.previous_run_id),
                    workload_slug_value=slug)
        for event, slug in rows
    ]


def record_events_statement() -> Select:
    return select(RecordEventRow, WorkloadRow.slug).join(WorkloadRow, WorkloadRow.id == RecordEventRow.workload_id)
