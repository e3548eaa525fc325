"""Record history: the global feed of the newest records."""

from __future__ import annotations

import strawberry

from kernelindex.graphql.context import Context
from kernelindex.graphql.pagination import Connection
from kernelindex.graphql.types.history import RecordEvent, record_events_page


@strawberry.type
class HistoryQueries:
    @strawberry.field(description="The newest record events across all workloads (new records and restorations), newest first.")
    async def record_feed(self, info: strawberry.Info[Context, None], first: int = 20, after: str | None = None) -> Connection[RecordEvent]:
        return await record_events_page(info, first, after)
