"""The health check: is the database answering? Asked over a connection of its own, so that nothing the
request pools are doing (every export slot taken, GraphQL queued for a connection) can make /healthz
wait or fail while the database is fine."""

from __future__ import annotations

import asyncio

import asyncpg

from kernelindex.db.urls import to_libpq_url

# A database that takes longer than this to answer `SELECT 1` is reported unavailable: a health check
# has to answer while the orchestrator still waits for it.
HEALTH_TIMEOUT_S = 1.0


class HealthCheck:
    """`SELECT 1` over one dedicated connection, reopened after any failure. Callers that arrive while
    a probe is on the wire share its answer, so a burst of probes is one statement, and the connection
    is never used by two at once."""

    def __init__(self, database_url: str, timeout_s: float = HEALTH_TIMEOUT_S):
        self._dsn = to_libpq_url(database_url)
        self._timeout_s = timeout_s
        self._conn: asyncpg.Connection | None = None
        self._running: asyncio.Future[str | None] | None = None
        self.probes = 0  # statements sent, for tests

    async def problem(self) -> str | None:
        """None when the database answers; otherwise what went wrong, as an exception's type name
        (never its message, which can carry SQL or a host name)."""
        if self._running is None:
            self._running = asyncio.ensure_future(self._probe())
            self._running.add_done_callback(self._finished)
        # Shielded: a probe cancelled with one request (its client gone) is still the others' answer.
        return await asyncio.shield(self._running)

    def _finished(self, _: asyncio.Future[str | None]) -> None:
        self._running = None

    async def _probe(self) -> str | None:
        self.probes += 1
        try:
            async with asyncio.timeout(self._timeout_s):
                if self._conn is None or self._conn.is_closed():
                    self._conn = await asyncpg.connect(self._dsn, timeout=self._timeout_s)
                await self._conn.fetchval("SELECT 1")
        except Exception as exc:  # down, refusing, too slow: all "unavailable"
            self._drop()
            return "timeout" if isinstance(exc, TimeoutError) else type(exc).__name__
        return None

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.terminate()  # no round trip: the connection may be the thing that hangs

    async def close(self) -> None:
        if self._running is not None:
            await asyncio.gather(self._running, return_exceptions=True)
        self._drop()
