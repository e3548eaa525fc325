"""Record history: the global feed of the newest records."""

from __future__ import annotations

import strawberry

from kernelindex.graphql.context import Context
from kernelindex.graphql.pagination import AfterArg, BeforeArg, Connection, FirstArg, LastArg
from kernelindex.graphql.types.history import RecordEvent, record_events_page


@strawberry.type
class HistoryQueries:
    @strawberry.field(description="The newest record events across all workloads (new records and restorations), newest first.")
    async def record_feed(self, info: strawberry.Info[Context, None], first: FirstArg = None, after: AfterArg = None,
                          last: LastArg = None, before: BeforeArg = None) -> Connection[RecordEvent]:
        return await record_events_page(info, first, after, last, before)
