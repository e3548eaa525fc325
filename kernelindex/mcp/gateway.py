"""One tool call, one GraphQL operation: a planned document executed in-process against the API's own
schema, with the same context, limits, token check and errors as a request to /graphql.

Why through the schema and not the services: the schema is where the services' answers are mapped,
rounded (numbers-v1), limited (depth, cost, page sizes, text sizes) and refused (codes). A tool that
executes a document gets all of that as /graphql has it, so an agent and a GraphQL client can never
read two figures for one question.

The session is the tool call's own (the HTTP request that carried the call may already be answered:
streamable HTTP runs tools in the session manager's tasks), opened and ended here as
kernelindex.web.middleware does for /graphql: a query rolls back, a mutation without errors commits,
and a call cut short by the time limit discards its connection rather than hand it back mid-statement.

A query's answer may come from the server's response cache (`cache`: the web server passes one in front
of its ResponseCache, kernelindex.web.app.CachedOperations): the same entry, under the same key and data
version, as the same operation POSTed to /graphql.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import strawberry
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from kernelindex.db.engine import discard_connections
from kernelindex.db.errors import is_unavailable, unavailable_message
from kernelindex.graphql.context import Context
from kernelindex.graphql.errors import INTERNAL, SERVICE_UNAVAILABLE, TIMEOUT, UNAVAILABLE_MESSAGE, code_of
from kernelindex.graphql.request_state import Reads, RequestState
from kernelindex.services.read_model import ReadModel
from kernelindex.settings import Settings


@dataclass(frozen=True)
class Document:
    """A GraphQL operation a tool runs: its text (one named operation) and whether it writes."""

    name: str
    text: str
    writes: bool = False


class GatewayError(Exception):
    """The operation answered with an error: its code (kernelindex.graphql.errors) and message, as
    /graphql would have sent them."""

    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


# execute(version): run the operation with the data version read before it (None: read when a loader
# needs it, or never); its data and what it read. GatewayError when it answered with an error.
Execute = Callable[[int | None], Awaitable[tuple[dict[str, Any], Reads]]]
# cache(document, variables, execute): the operation's data, from a cache or from execute().
Cache = Callable[[Document, dict[str, Any], Execute], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Gateway:
    schema: strawberry.Schema
    sessionmaker: async_sessionmaker[AsyncSession]
    settings: Settings
    clock: Callable[[], datetime]
    # The process's read model, and how to read the data version its values are kept under (the web
    # server's DataVersionReader.current); without both, every value is computed for the call.
    read_model: ReadModel | None = None
    data_version: Callable[[], Awaitable[int | None]] | None = None
    # Queries' answers kept across calls (None: every call executes); never a write's.
    cache: Cache | None = None

    async def execute(self, document: Document, variables: dict[str, Any], *,
                      authorization: str | None = None) -> dict[str, Any]:
        """The operation's data; GatewayError when it answered with any error."""

        async def execute(version: int | None) -> tuple[dict[str, Any], Reads]:
            return await self._execute(document, variables, authorization, version)

        if self.cache is None or document.writes:
            data, _ = await execute(None)
            return data
        return await self.cache(document, variables, execute)

    async def _execute(self, document: Document, variables: dict[str, Any], authorization: str | None,
                       version: int | None) -> tuple[dict[str, Any], Reads]:
        request_id = secrets.token_hex(8)  # as kernelindex.web.http.new_request_id: ties an error to the log
        session = self.sessionmaker()
        interrupted = False
        try:
            # The version the cache read before execution, as /graphql sets it for a cacheable query.
            state = RequestState(request_id=request_id, session=session, data_version=version)
            context = Context(session=session, now=self.clock(), settings=self.settings, state=state,
                              read_model=self.read_model, authorization=authorization)
            if version is None and not document.writes and self.data_version is not None \
                    and self.read_model is not None and self.read_model.enabled:
                # As /graphql does for a query it does not cache: the version is read when a loader needs it.
                state.read_data_version_with(self.data_version)
            limit = self.settings.request_timeout_s
            try:
                async with asyncio.timeout(limit if limit > 0 else None):
                    result = await self.schema.execute(document.text, variable_values=variables,
                                                       context_value=context, operation_name=document.name)
            except TimeoutError:
                interrupted = True
                raise GatewayError(TIMEOUT, f"the call took longer than {limit:g} s") from None
            except BaseException:
                interrupted = True
                raise
            if result.errors:
                await session.rollback()
                error = result.errors[0]
                raise GatewayError(code_of(error) or INTERNAL, error.message)
            if document.writes and not state.read_only:
                try:
                    await session.commit()
                except Exception as exc:
                    # As kernelindex.web.middleware answers a failed commit: an outage said as one, nothing kept.
                    await session.rollback()
                    if is_unavailable(exc):
                        raise GatewayError(SERVICE_UNAVAILABLE, unavailable_message(exc) or UNAVAILABLE_MESSAGE) from exc
                    raise GatewayError(SERVICE_UNAVAILABLE, "the database did not accept the change; retry shortly.") from exc
            else:
                await session.rollback()
            assert result.data is not None  # no errors: the operation's data is there
            return result.data, state.reads
        finally:
            if interrupted:
                await discard_connections(session)
            else:
                await session.close()
