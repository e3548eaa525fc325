"""The request's database connection, taken before any resolver runs.

graphql-core resolves the root fields of a query concurrently. One AsyncSession may not acquire
its connection from two coroutines at once ("This session is provisioning a new connection;
concurrent operations are not permitted"); once it holds one, the driver serialises statements on
it. So the connection is taken here, once, before execution: a query with several root fields
(`{ a: workload(…) { … } b: runs { … } }`) no longer fails by chance. A database that does not
answer is reported here too, and ErrorPolicy turns that into SERVICE_UNAVAILABLE with HTTP 503.

A query's connection is taken in autocommit: no BEGIN before its first statement and no ROLLBACK
after its last (two of the round trips of every query that executes). What its statements see does
not change: under READ COMMITTED, PostgreSQL's default and the pool's, a transaction takes a new
snapshot for every statement anyway, so each statement still sees every transaction committed
before it began, among them every write counted by the data version the response cache read before
execution (kernelindex.web.response_cache): no response shows less than the version it is stored
under. A database whose default isolation is stricter keeps the transaction, since there a query's
statements share one snapshot. Without a transaction, the request middleware's rollback no longer
touches the connection, so it can no longer find one that a cancelled sibling field left mid-statement
(its failed rollback is what discarded such a connection): a query that ends with errors discards its
connection here instead, without a round trip, and the pool opens a fresh one when it is next needed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from graphql import ExecutionResult, GraphQLError
from strawberry.extensions import SchemaExtension
from strawberry.types.graphql import OperationType

from kernelindex.db.engine import discard_connections

# How a query's connection is taken (see the module's docstring).
READ_ONLY_EXECUTION = {"isolation_level": "AUTOCOMMIT"}
# The default isolation under which autocommit statements see what a transaction's would: SQLAlchemy
# reads the server's default on the pool's first connection (no attribute before it: the transaction is kept).
_PER_STATEMENT_SNAPSHOTS = "READ COMMITTED"


class SessionConnection(SchemaExtension):
    async def on_execute(self) -> AsyncIterator[None]:
        ctx = self.execution_context
        query = ctx.graphql_document is not None and ctx.operation_type is OperationType.QUERY
        if query:
            # Queries write nothing: the request's state says so, and the request middleware rolls back
            # instead of committing. When a field error cancels sibling fields
            # mid-statement, graphql-core's cancellation leaves the connection closed; a commit would
            # then fail and turn a user error into a 503.
            ctx.context.state.read_only = True
        if ctx.operation_type is OperationType.SUBSCRIPTION:
            # A subscription reads when an event comes and gives its connection back between events
            # (kernelindex.graphql.subscriptions): it takes none for its whole life here.
            yield
            return
        autocommit = False
        if ctx.result is None:
            refusal, autocommit = await take_connection(ctx.context)
            if refusal is not None:
                ctx.result = refusal
        failed = True
        try:
            yield
            failed = ctx.result is None or bool(ctx.result.errors)
        finally:
            await release_connection(ctx.context.session, autocommit=autocommit, failed=failed)


async def take_connection(context) -> tuple[ExecutionResult | None, bool]:
    """The operation's connection, taken before it runs (SessionConnection, and kernelindex.graphql.plan's
    execute_ready for a document the view keeps ready): in autocommit for a read-only request where
    reads are alike there. (A result that says the database did not answer, or None; whether the
    connection is in autocommit.)"""
    session = context.session
    try:
        if context.state.read_only and _autocommit_reads_alike(session):
            await session.connection(execution_options=READ_ONLY_EXECUTION)
            context.state.reads_in_autocommit = True
            return None, True
        await session.connection()
    except Exception as exc:  # ErrorPolicy decides what the client sees
        return ExecutionResult(data=None, errors=[GraphQLError(str(exc), original_error=exc)]), False
    return None, False


async def release_connection(session, *, autocommit: bool, failed: bool) -> None:
    """After the operation: an autocommit connection whose operation failed is discarded."""
    if autocommit and failed:
        # A failed field cancels its siblings, possibly mid-statement: the connection's state is unknown.
        await discard_connections(getattr(session, "raw", session))


def _autocommit_reads_alike(session) -> bool:
    """Whether this session may read in autocommit: it has not begun a transaction (nothing ran on it
    before the operation) and the server's default isolation takes a snapshot per statement."""
    if session.in_transaction():
        return False
    bind = session.bind
    return bind is not None and getattr(bind.dialect, "default_isolation_level", None) == _PER_STATEMENT_SNAPSHOTS


class SerializedSession:
    """The request's AsyncSession, one operation at a time.

    graphql-core resolves sibling fields concurrently, and each DataLoader dispatches its batch in a
    task of its own, so two coroutines can reach the session at once. An AsyncSession runs the ORM in
    greenlets and must not be used concurrently: two interleaved loads corrupt its identity map (seen
    under load as crashes inside object loading). Every awaited call goes through one lock; results
    are buffered, so nothing reads from the session after the lock is released.
    """

    def __init__(self, session):
        self._session = session
        self._lock = asyncio.Lock()
        # The connection connection() last returned, with the session's transaction it belongs to (driver_fetch).
        self._taken = None

    @property
    def raw(self):
        return self._session

    async def execute(self, *args, **kwargs):
        async with self._lock:
            return await self._session.execute(*args, **kwargs)

    async def scalars(self, *args, **kwargs):
        async with self._lock:
            return await self._session.scalars(*args, **kwargs)

    async def scalar(self, *args, **kwargs):
        async with self._lock:
            return await self._session.scalar(*args, **kwargs)

    async def get(self, *args, **kwargs):
        async with self._lock:
            return await self._session.get(*args, **kwargs)

    async def flush(self, *args, **kwargs):
        async with self._lock:
            return await self._session.flush(*args, **kwargs)

    async def connection(self, *args, **kwargs):
        async with self._lock:
            connection = await self._session.connection(*args, **kwargs)
            self._taken = (self._session.sync_session.get_transaction(), connection)
            return connection

    async def driver_fetch(self, sql: str, parameters: tuple):
        """The rows of one statement in the driver's own SQL (asyncpg's: $1 parameters), run by the driver on
        the session's connection, as its records: no SQLAlchemy result processing (kernelindex.graphql.runs_page
        reads only columns that have none)."""
        return await self.driver_call(lambda driver: driver.fetch(sql, *parameters))

    async def driver_call(self, call):
        """`call(driver)` awaited on the driver's connection of the session's connection, under the session's
        lock (driver_fetch; kernelindex.db.driver.fetch_rows)."""
        async with self._lock:
            adapter = self._taken_adapter()
            if adapter is None:
                connection = await self._session.connection()
                adapter = (await connection.get_raw_connection()).dbapi_connection
            # As SQLAlchemy's asyncpg adapter runs each of its own statements: under the adapter's mutex (anything
            # that reaches the connection through SQLAlchemy without this session's lock waits, rather than
            # meeting "another operation is in progress"), in the adapter's transaction, begun if not yet.
            async with adapter._execute_mutex:
                if adapter._transaction is None:
                    await adapter._start_transaction()
                return await call(adapter.driver_connection)

    def _taken_adapter(self):
        """SQLAlchemy's asyncpg adapter of the connection taken for the session's current transaction (a query's,
        SessionConnection), where it is that transaction's still, open and valid: what session.connection()
        and get_raw_connection() would return, without their two trips through SQLAlchemy's greenlet (a tenth
        of a small page's request). None otherwise."""
        if self._taken is None:
            return None
        transaction, connection = self._taken
        if transaction is None or self._session.sync_session.get_transaction() is not transaction:
            return None
        sync = connection.sync_connection
        if sync is None or sync.closed or sync.invalidated:
            return None
        return sync.connection.dbapi_connection  # a valid connection's pooled connection: no I/O

    async def begin_nested(self):
        async with self._lock:
            return await self._session.begin_nested()

    def __getattr__(self, name):
        return getattr(self._session, name)
