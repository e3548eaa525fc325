"""Engines and sessions. Sessions never commit on their own: the request middleware or the command
that opened them commits or rolls back, in one place."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import msgspec
from sqlalchemy import event
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from kernelindex.db.urls import to_async_url

_JSON = msgspec.json.Decoder()

# A pooled connection is pinged before use only when it sat idle in the pool at least this long (see
# ping_when_idle).
PING_AFTER_IDLE_S = 1.0


def decode_json(text: str) -> Any:
    """A JSON/JSONB value as Python values, decoded in C (msgspec): runs' bindings and correctness are
    read by the hundred thousand when records are refreshed (386,000 rows for 100,000 new runs), and
    json.loads took about 7% of such an import under the profiler.
    The same values json.loads gives; a number msgspec will not take (a JSONB numeric beyond a double,
    1e400) is read by json.loads as before."""
    try:
        return _JSON.decode(text)
    except msgspec.DecodeError:
        return json.loads(text)


def make_engine(
    database_url: str, *, pool_size: int = 10, max_overflow: int = 10, echo: bool = False,
    statement_timeout_s: float | None = None, idle_in_transaction_timeout_s: float | None = None,
    pool_timeout_s: float = 30.0, ping_after_idle_s: float = PING_AFTER_IDLE_S, generic_plans: bool = False,
) -> AsyncEngine:
    """An engine with a pool of its own. `statement_timeout_s` and `idle_in_transaction_timeout_s` are
    set on every connection the pool opens (PostgreSQL's own limits, in the server): the web server's
    engines use them so that a statement or a transaction left behind by a cancelled request cannot
    run on in the database past its request; commands (migrate, ingest) leave them unset.

    `generic_plans`: each prepared statement is planned once per connection and its plan kept
    (plan_cache_mode = force_generic_plan). The server's reads are a fixed set of statements whose
    values are all bound (ids, id arrays, cursors), written so that a plan without the values still
    uses the right index (constants in the text where a partial index or an index expression needs
    them: services.pages); left to itself PostgreSQL plans them again on every execution, because an
    array parameter's generic cost estimate is higher than a custom plan's: 2-8 ms a statement for the
    three largest of a cold workload page at 1M runs, against about 1 ms with the kept plan, the same
    rows (`python -m perf.plan_cache`)."""
    server_settings: dict[str, str] = {}
    if generic_plans:
        server_settings["plan_cache_mode"] = "force_generic_plan"
    if statement_timeout_s is not None:
        server_settings["statement_timeout"] = str(max(1, round(statement_timeout_s * 1000)))
    if idle_in_transaction_timeout_s is not None:
        server_settings["idle_in_transaction_session_timeout"] = str(max(1, round(idle_in_transaction_timeout_s * 1000)))
    connect_args: dict[str, Any] = {"server_settings": server_settings} if server_settings else {}
    engine = create_async_engine(
        to_async_url(database_url),
        pool_size=pool_size,
        max_overflow=max_overflow,
        pool_timeout=pool_timeout_s,
        echo=echo,
        connect_args=connect_args,
        json_deserializer=decode_json,
    )
    ping_when_idle(engine, ping_after_idle_s)
    return engine


def ping_when_idle(engine: AsyncEngine, after_s: float) -> None:
    """Ping a pooled connection before it is used only when it sat in the pool at least ``after_s``.

    After a PostgreSQL restart the pool's connections are dead, and a connection found dead at checkout is
    replaced before anyone uses it. SQLAlchemy's own pool_pre_ping does that on every checkout, and with
    asyncpg its ping is three round trips (BEGIN, a ';', ROLLBACK): measured on the 2-core VM, that was
    the most of a `runs(first: 16)` request's database time. A connection handed back a moment ago (every
    one, under load) was alive then; one idle longer is pinged as before. A restart inside that moment
    costs at most the statements already on their way: the first to find its connection dead invalidates
    the pool (SQLAlchemy's disconnect handling), as it always did for connections in use at the restart."""
    pool = engine.sync_engine.pool
    dialect = engine.sync_engine.dialect

    @event.listens_for(pool, "checkin")
    def handed_back(dbapi_connection: Any, record: Any) -> None:
        if dbapi_connection is not None:
            record.info["idle_since"] = time.monotonic()

    @event.listens_for(pool, "checkout")
    def taken(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        idle_since = record.info.pop("idle_since", None)
        if _closed_here(dialect.get_driver_connection(dbapi_connection)):
            # Terminated on this side (discard_connections): known without a round trip.
            raise DisconnectionError("a pooled connection was closed by this process")
        if idle_since is None or time.monotonic() - idle_since < after_s:
            return  # opened just now, or handed back a moment ago
        try:
            alive = dialect.do_ping(dbapi_connection)
        except dialect.loaded_dbapi.Error as exc:
            if not dialect.is_disconnect(exc, dbapi_connection, None):
                raise
            alive = False
        if not alive:
            # The pool discards it and takes (or opens) another, as its own pre-ping does.
            raise DisconnectionError("a pooled connection was found closed (PostgreSQL restarted?)")


def _closed_here(driver: Any) -> bool:
    """Whether the driver already knows its connection is closed (asyncpg's is_closed(): no round trip)."""
    is_closed = getattr(driver, "is_closed", None)
    return bool(is_closed()) if callable(is_closed) else False


async def discard_connections(session: AsyncSession) -> None:
    """End the session by closing its connections for good, not handing them back to the pool.

    For a session whose work was interrupted (a request cancelled by its timeout, a client gone in the
    middle of an export): asyncpg may still be waiting on a statement, so a rollback would fail ("another
    operation is in progress") or wait for it, and SQLAlchemy would then return a connection to the pool
    with a transaction still open on it, to break the next, unrelated request. The driver connections
    are terminated first (no round trip, so this cannot wait on the database), then invalidated: the pool
    opens fresh ones when they are next needed. PostgreSQL ends the statement itself at the engine's
    statement_timeout."""
    transaction = session.sync_session.get_transaction()
    if transaction is not None:
        for connection in transaction.connections:
            if connection.closed or connection.invalidated:
                continue
            driver = connection.connection.driver_connection
            if driver is not None and hasattr(driver, "terminate"):
                driver.terminate()
    try:
        await session.invalidate()
    except Exception:
        # Another task still inside the session (a DataLoader batch) can make invalidation refuse.
        # Its connections are terminated already: closing hands them back, and the pool replaces
        # them before anyone uses them (ping_when_idle sees them closed, without a round trip).
        await session.close()


def make_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False, autoflush=False)


@asynccontextmanager
async def transaction(sessionmaker: async_sessionmaker[AsyncSession]) -> AsyncIterator[AsyncSession]:
    """One unit of work: commit when the block succeeds, roll back when it raises."""
    async with sessionmaker() as session:
        try:
            yield session
        except BaseException:
            await session.rollback()
            raise
        else:
            await session.commit()


T = TypeVar("T")


async def in_own_transaction(database_url: str, work: Callable[[AsyncSession], Awaitable[T]]) -> T:
    """`work(session)` as one transaction on a one-connection engine of its own, disposed after: for
    commands and scripts that do one unit of work against a database URL."""
    engine = make_engine(database_url, pool_size=1, max_overflow=0)
    try:
        async with transaction(make_sessionmaker(engine)) as session:
            return await work(session)
    finally:
        await engine.dispose()
