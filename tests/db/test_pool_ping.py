"""The pool pings a connection before use only when it sat idle (kernelindex.db.engine.ping_when_idle):
no round trips for a connection handed back a moment ago, and a dead one that idled is replaced unseen."""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager

import asyncpg
from sqlalchemy import text

from kernelindex.db import engine as engine_module
from kernelindex.db.engine import make_engine
from kernelindex.db.urls import to_libpq_url


async def _backend_pid(engine) -> int:
    async with engine.connect() as conn:
        return (await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one()


def _count_pings(engine, monkeypatch) -> list[int]:
    dialect = engine.sync_engine.dialect
    calls: list[int] = []
    real = dialect.do_ping

    def counted(dbapi_connection):
        calls.append(1)
        return real(dbapi_connection)

    monkeypatch.setattr(dialect, "do_ping", counted)
    return calls


@asynccontextmanager
async def _pool_of_one(db_url: str, monkeypatch, ping_after_idle_s: float):
    """An engine of one pooled connection and the list its pings are counted in; disposed after."""
    engine = make_engine(db_url, pool_size=1, max_overflow=0, ping_after_idle_s=ping_after_idle_s)
    try:
        yield engine, _count_pings(engine, monkeypatch)
    finally:
        await engine.dispose()


async def _terminate(db_url: str, pid: int) -> None:
    admin = await asyncpg.connect(to_libpq_url(db_url))
    try:
        assert await admin.fetchval("SELECT pg_terminate_backend($1)", pid)
        # Wait until the backend is gone, so the pool's connection is surely dead.
        for _ in range(200):
            if not await admin.fetchval("SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid):
                break
            await admin.execute("SELECT pg_sleep(0.01)")
    finally:
        await admin.close()


async def test_a_connection_handed_back_a_moment_ago_is_not_pinged(db_url, monkeypatch):
    async with _pool_of_one(db_url, monkeypatch, 60.0) as (engine, pings):
        first = await _backend_pid(engine)
        for _ in range(5):
            assert await _backend_pid(engine) == first  # the same pooled connection, reused
        assert pings == []


async def test_a_connection_that_idled_is_pinged_once_per_checkout(db_url, monkeypatch):
    async with _pool_of_one(db_url, monkeypatch, 0.0) as (engine, pings):
        await _backend_pid(engine)  # opened now: no ping
        assert pings == []
        await _backend_pid(engine)
        await _backend_pid(engine)
        assert len(pings) == 2


async def test_a_dead_connection_that_idled_is_replaced_before_use(db_url, monkeypatch):
    async with _pool_of_one(db_url, monkeypatch, 0.0) as (engine, pings):
        first = await _backend_pid(engine)
        # A connection dead without this side knowing (a dropped network path, a server gone without a word):
        # the backend ends, and the check without a round trip is made to see it open, so only a ping can tell.
        monkeypatch.setattr(engine_module, "_closed_here", lambda driver: False)
        await _terminate(db_url, first)
        second = await _backend_pid(engine)  # no error: the ping found it dead and the pool opened another
        assert second != first
        assert len(pings) == 1


async def test_a_connection_the_server_closed_a_moment_ago_is_replaced_without_a_ping(db_url, monkeypatch):
    # The other order: killed within the moment no ping is made. PostgreSQL closes the socket of a backend it
    # ends (pg_terminate_backend, a shutdown), asyncpg sees it close, and the pool replaces the connection at
    # checkout without a round trip.
    async with _pool_of_one(db_url, monkeypatch, 60.0) as (engine, pings):
        first = await _backend_pid(engine)
        await _terminate(db_url, first)
        await asyncio.sleep(0.05)  # the event loop reads the socket's end (it has, long before, in a server)
        assert await _backend_pid(engine) != first
        assert pings == []


async def test_a_connection_terminated_here_is_replaced_without_a_ping(db_url, monkeypatch):
    # discard_connections terminates a request's connections on this side and may hand them back to the
    # pool: the next checkout, however soon, must not get one.
    async with _pool_of_one(db_url, monkeypatch, 60.0) as (engine, pings):
        async with engine.connect() as conn:
            first = (await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one()
            driver = (await conn.get_raw_connection()).driver_connection
        driver.terminate()  # after it was handed back, as when discard_connections' invalidation is refused
        assert await _backend_pid(engine) != first
        assert pings == []
