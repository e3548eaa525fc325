"""Whole-response caching for GraphQL queries, exact with respect to the data.

A workload page executes ~1,000 GraphQL fields; in Python that, not the SQL, is most of a request.
The same page is asked for again and again between writes, so its encoded response is kept and
served until the data changes. "Until the data changes" is decided by the database itself: the
`data_version` row that statement triggers move once per committed writing transaction (migration
0004), whichever process wrote. Every cacheable request reads that number first, so a response is
never served after a write it does not reflect, and a client that wrote sees its write at once.

Time also changes answers (a run turns stale after N days), so entries live at most `ttl_s`
seconds of the application clock. Only queries whose execution produced no errors are stored;
mutations, errors and anything the version cannot be read for go the normal way.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

import asyncpg
from graphql import GraphQLError, OperationType, get_operation_ast, parse

from kernelindex.db.urls import to_libpq_url

log = logging.getLogger("kernelindex.web")

# Longer documents are executed every time: the key would cost more memory than the entry saves,
# and no page or list query comes close.
MAX_CACHEABLE_QUERY_CHARS = 20_000

VERSION_SQL = "SELECT version FROM data_version WHERE id = 1"


class DataVersionReader:
    """The current data version, read over one dedicated connection, one read at a time.

    A read already on the wire when a request arrives may have started before a commit that the
    request must see, so the request waits for the next read instead; every request that arrives
    while one read is in flight shares that next read. Under load this is one tiny statement per
    round trip for all concurrent requests, not one per request. Any failure answers None: the
    caller then executes normally, and the request meets the outage the usual way (503).
    """

    def __init__(self, database_url: str, timeout_s: float = 2.0):
        self._dsn = to_libpq_url(database_url)
        self._timeout_s = timeout_s
        self._conn: asyncpg.Connection | None = None
        self._statement: asyncpg.prepared_stmt.PreparedStatement | None = None
        self._running: asyncio.Future | None = None
        self._queued: asyncio.Future | None = None
        self.reads = 0  # statements sent, for tests and the benchmark
        self._last_warning = 0.0

    async def current(self) -> int | None:
        if self._running is None:
            waiter = self._start()
        else:
            if self._queued is None:
                self._queued = asyncio.get_running_loop().create_future()
            waiter = self._queued
        # Shielded: a request cancelled by its timeout must not cancel the read others share.
        return await asyncio.shield(waiter)

    def _start(self) -> asyncio.Future:
        task = asyncio.ensure_future(self._read())
        self._running = task
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Future) -> None:
        self._running = None
        queued, self._queued = self._queued, None
        if queued is not None:
            self._start().add_done_callback(lambda done: _settle(queued, done))

    async def _read(self) -> int | None:
        try:
            if self._conn is None or self._conn.is_closed():
                self._conn = await asyncpg.connect(self._dsn, timeout=self._timeout_s)
                self._statement = await self._conn.prepare(VERSION_SQL, timeout=self._timeout_s)
            assert self._statement is not None  # prepared with the connection, just above
            self.reads += 1
            # asyncpg's own timeout: asyncio.wait_for would cost a second task on every read.
            return await self._statement.fetchval(timeout=self._timeout_s)
        except Exception as exc:  # an outage, a timeout, a missing table: execute without the cache
            self._warn(exc)
            await self._drop_connection()
            return None

    def _warn(self, exc: Exception) -> None:
        now = time.monotonic()
        if now - self._last_warning > 10:
            self._last_warning = now
            log.warning("data version unreadable, executing without the response cache: %s: %s", type(exc).__name__, exc)

    async def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        self._statement = None
        if conn is not None:
            conn.terminate()

    async def close(self) -> None:
        if self._running is not None:
            await asyncio.gather(self._running, return_exceptions=True)
        await self._drop_connection()


def _settle(target: asyncio.Future, done: asyncio.Future) -> None:
    """Hand a finished read to the requests queued for it; a failed read is "no version" (None)."""
    if not target.done():
        target.set_result(None if done.cancelled() or done.exception() is not None else done.result())


@dataclass(frozen=True)
class CacheKey:
    query: str
    operation_name: str | None
    variables: str

    @property
    def size(self) -> int:
        return len(self.query) + len(self.variables) + len(self.operation_name or "")


def cache_key(query: object, operation_name: object, variables: object) -> CacheKey | None:
    """The key for a query operation, or None when the request is not a cacheable query."""
    if not isinstance(query, str) or len(query) > MAX_CACHEABLE_QUERY_CHARS:
        return None
    if operation_name is not None and not isinstance(operation_name, str):
        return None
    if not _is_query(query, operation_name):
        return None
    try:
        canonical = json.dumps(variables or {}, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        return None
    return CacheKey(query, operation_name, canonical)


def export_key(name: str, params: list[tuple[str, str]]) -> CacheKey:
    """The key of a streamed export (runs.csv, catalog.jsonl) with its filters."""
    return CacheKey(f"#export:{name}", None, json.dumps(params))


@lru_cache(maxsize=512)
def _is_query(query: str, operation_name: str | None) -> bool:
    try:
        # The token cap mirrors the server's limit, so parsing here cannot be made expensive.
        operation = get_operation_ast(parse(query, max_tokens=5_000), operation_name)
    except GraphQLError:
        return False
    return operation is not None and operation.operation is OperationType.QUERY


# Entries live between (1 - TTL_SPREAD) and 1 times the TTL, the fraction fixed per key: entries
# stored together (a server warming up) would otherwise all expire in the same instant and be
# executed one after another while every other request waits (~80 ms for five keys in a soak).
TTL_SPREAD = 0.1


def _spread(key: CacheKey) -> float:
    """A number in [0, 1) that depends on the key alone."""
    return zlib.crc32(f"{key.query}\0{key.operation_name}\0{key.variables}".encode("utf-8", "surrogatepass")) / 2**32


@dataclass
class _Entry:
    version: int
    stored_at: datetime
    body: str
    size: int
    lifetime_s: float


class ResponseCache:
    """Encoded responses by (query, operation, variables), for one data version at a time.

    Bounded by entry count and by bytes, least recently used out first. When a newer version is
    seen, everything older is dropped at once; a response computed under an older version than the
    newest seen is not stored (a slow request finishing after a write).
    """

    def __init__(self, max_entries: int, max_bytes: int, ttl_s: float):
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.ttl_s = ttl_s
        self._entries: OrderedDict[CacheKey, _Entry] = OrderedDict()
        self._bytes = 0
        self._version: int | None = None
        self._running: dict[tuple[CacheKey, int], asyncio.Future] = {}
        self.hits = 0
        self.misses = 0
        self.shared = 0  # misses answered by another request's execution

    @property
    def enabled(self) -> bool:
        return self.max_entries > 0 and self.max_bytes > 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: CacheKey, version: int, now: datetime) -> str | None:
        self._observe(version)
        entry = self._entries.get(key)
        if entry is None or entry.version != version or (now - entry.stored_at).total_seconds() > entry.lifetime_s:
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return entry.body

    def put(self, key: CacheKey, version: int, now: datetime, body: str) -> None:
        self._observe(version)
        size = len(body) + key.size
        if version != self._version or size > self.max_bytes:
            return
        old = self._entries.pop(key, None)
        if old is not None:
            self._bytes -= old.size
        self._entries[key] = _Entry(version, now, body, size, self.ttl_s * (1 - TTL_SPREAD * _spread(key)))
        self._bytes += size
        while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
            _, evicted = self._entries.popitem(last=False)
            self._bytes -= evicted.size

    async def get_or_compute(self, key: CacheKey, version: int, now: datetime, compute) -> tuple[str | None, object]:
        """The body for the key: cached, or from the one execution in flight for this key and version,
        or computed here by `compute()`, which returns (body to store or None, its own result).

        Without this, a popular page that expires or is invalidated under load is executed by every
        request that arrives while the first execution runs: at 2,000 requests/s that was dozens of
        concurrent executions of the same page, a latency spike and 11 MiB more resident memory."""
        body = self.get(key, version, now)
        if body is not None:
            return body, None
        running = self._running.get((key, version))
        if running is not None:
            body = await asyncio.shield(running)
            if body is not None:
                self.shared += 1
                return body, None
        future = asyncio.get_running_loop().create_future()
        self._running[(key, version)] = future
        body = None
        try:
            body, result = await compute()
            if body is not None:
                self.put(key, version, now, body)
            return body, result
        finally:
            if self._running.get((key, version)) is future:
                del self._running[(key, version)]
            future.set_result(body)  # None: the followers execute for themselves

    def _observe(self, version: int) -> None:
        if self._version is None or version > self._version:
            self._version = version
            self._entries.clear()
            self._bytes = 0
