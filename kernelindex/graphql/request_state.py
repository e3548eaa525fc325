"""The state of one request, typed: its id, its database session, the response cache's key and the data
version it was looked up at, what its loaders read (the response's dependencies), whether it wrote, and
the media type and status of its GraphQL response.

Made once per request, by the outermost middleware (kernelindex.web.http.RequestIdMiddleware), and kept
under one key of the ASGI scope's state; the request's GraphQL context holds the same object
(kernelindex.graphql.context), and its loaders record into it. An operation without an HTTP request of its
own (an MCP tool call, a subscription) has one of its own. Here, below the web and MCP rooms, because
the GraphQL context holds it and both of them make contexts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import HTTPConnection

from kernelindex.db.models import Workload

# The one key of the ASGI scope's state this application uses: the request's RequestState.
SCOPE_KEY = "kernelindex.request"


@dataclass(slots=True)
class Reads:
    """The workloads this request's workload loaders looked up: what the response cache keys a
    workload page's entry on (kernelindex.web.response_cache). A look-up that found nothing makes
    the request unscoped: a workload created later would change its answer."""

    workloads: set[int] = field(default_factory=set)
    unscoped: bool = False
    # Read something the data version does not follow (a fleet job: it moves while it is read):
    # the response is never stored.
    volatile: bool = False

    def found(self, rows: Sequence[Workload], wanted: int) -> None:
        self.workloads.update(w.id for w in rows)
        if len(rows) < wanted:
            self.unscoped = True


@dataclass(slots=True, eq=False)
class RequestState:
    request_id: str = ""
    # The request's session: the request pool's (kernelindex.web.middleware) or the export pool's
    # (kernelindex.web.exports); None where the request has none (/healthz, /mcp, a websocket).
    session: AsyncSession | None = None
    # The response cache's key for this request (kernelindex.web.response_cache.CacheKey, typed loosely
    # here: the response cache lives in the web room above); None: the answer is not cached.
    cache_key: Hashable | None = None
    # The data version the response cache and the read model use for this request: read before any of its
    # statements when it is cached, else when a loader first needs it (read_data_version_with); None:
    # not read, so the read model is not used.
    data_version: int | None = None
    # What the request's loaders read: the dependencies of its response.
    reads: Reads = field(default_factory=Reads)
    # The request wrote nothing (a GraphQL query, or its cached answer): its transaction is rolled back
    # instead of committed (kernelindex.web.middleware).
    read_only: bool = False
    # Its session's connection was taken in autocommit for a query (kernelindex.graphql.session): no
    # transaction to roll back before the response (kernelindex.web.middleware closes the session after it).
    reads_in_autocommit: bool = False
    # Its answer must not be stored by any cache (errors, a fleet job read): Cache-Control: no-store.
    no_store: bool = False
    # The media type its GraphQL response is sent in, and the status that response calls for
    # (application/graphql-response+json only; None: the status the view chose).
    media_type: str | None = None
    status: int | None = None
    # The request body's `variables` where the whole body is known to hold only values PostgreSQL
    # stores (kernelindex.web.app.KernelIndexGraphQL.decode_json: strict JSON, no escapes, no
    # integer past 64 bits); None: not known. submitRuns skips walking the records found in it.
    plain_variables: dict[str, Any] | None = None
    # The document its operation was answered by a plan (kernelindex.graphql.plan.PlannedExecution); None:
    # not planned. The GraphQL view keeps such a document ready for its next request (kernelindex.web.app).
    planned: Any = None
    _version_source: Callable[[], Awaitable[int | None]] | None = None
    _version_read: asyncio.Future[int | None] | None = None

    def read_data_version_with(self, source: Callable[[], Awaitable[int | None]]) -> None:
        """Read the data version with `source` when a loader first needs it. Read then, after some of
        the request's statements, it is still exact: the values computed afterwards are at that version
        or newer, and a value kept is kept at it (a statement before it saw older data, as any two
        statements of a READ COMMITTED request may)."""
        self._version_source = source

    async def read_data_version(self) -> int | None:
        """The data version (read once for every loader of the request; None: none to read)."""
        if self.data_version is None and self._version_source is not None:
            if self._version_read is None:
                self._version_read = asyncio.ensure_future(self._version_source())
            self.data_version = await asyncio.shield(self._version_read)
        return self.data_version

    def plain_values(self) -> set[int]:
        """The ids of the items of the list-valued plain variables (the records a client passed as a
        variable, not a literal of the query): each holds only values PostgreSQL stores."""
        variables = self.plain_variables
        if not variables:
            return set()
        return {id(item) for value in variables.values() if isinstance(value, list) for item in value}

    def forget_reads(self) -> None:
        """Between two events of a subscription: the next event reads afresh, at no version read before."""
        self.reads = Reads()
        self.data_version = None
        self._version_source = None
        self._version_read = None


def request_state(connection: HTTPConnection | MutableMapping[str, Any]) -> RequestState:
    """The request's state, from its connection or its ASGI scope: the one RequestIdMiddleware made,
    or a new one kept there for the rest of the request where no such middleware ran (an app mounted
    bare in a test)."""
    scope = connection.scope if isinstance(connection, HTTPConnection) else connection
    state = scope.setdefault("state", {})
    found = state.get(SCOPE_KEY)
    if found is None:
        found = state[SCOPE_KEY] = RequestState()
    assert isinstance(found, RequestState)
    return found
