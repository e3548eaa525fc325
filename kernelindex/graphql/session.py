"""The request's database connection, taken before any resolver runs.

graphql-core resolves the root fields of a query concurrently. One AsyncSession may not acquire
its connection from two coroutines at once ("This session is provisioning a new connection;
concurrent operations are not permitted"); once it holds one, the driver serialises statements on
it. So the connection is taken here, once, before execution: a query with several root fields
(`{ a: workload(…) { … } b: runs { … } }`) no longer fails by chance. A database that does not
answer is reported here too, and ErrorPolicy turns that into SERVICE_UNAVAILABLE with HTTP 503.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from graphql import ExecutionResult, GraphQLError
from strawberry.extensions import SchemaExtension


class SessionConnection(SchemaExtension):
    async def on_execute(self) -> AsyncIterator[None]:
        ctx = self.execution_context
        session = getattr(ctx.context, "session", None)
        if session is not None and ctx.result is None:
            try:
                await session.connection()
            except Exception as exc:  # ErrorPolicy decides what the client sees
                ctx.result = ExecutionResult(data=None, errors=[GraphQLError(str(exc), original_error=exc)])
        yield
