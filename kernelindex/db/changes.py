"""The data version and what each version changed: how a process learns, in one small statement,
that committed writes happened and which workloads (or catalogue tables) they touched.

Migration 0007's statement triggers move the `data_version` row once per committed transaction that
changed a row, and write what it changed to `change_log`. A process reads the version (and the log
rows since the version it last knew) over one dedicated connection (DataVersionReader) and hands each
new version, with its changes, to its listeners before any request sees that version: the response
cache (kernelindex.web.response_cache) and the read model (kernelindex.services.read_model) evict
exactly what the changes touch. `Dependencies` is what a cached thing read; `Change.touches` decides.

A catalogue table's new row and a change to an existing row are told apart (migration 0021): a new
row is read only by what reads that table whole (its lists; the hardware catalogue every workload
page holds) and by the pages of the workloads whose runs name it, and those runs are rows of their
own workloads, which the same log names. A change to an existing row goes to everything that read
catalogue rows.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg

from kernelindex.db.urls import to_libpq_url

log = logging.getLogger("kernelindex.web")

# A reader more than this many versions behind drops everything instead of reading that much log
# (and the database keeps 10,000 versions of it: migration 0007).
MAX_CHANGES_READ = 2_000

# The version, and the log rows after the version this process knew ($1), in one statement: one
# snapshot, so the log is complete up to the version read. With no version known, $1 is far ahead
# and no log row matches.
VERSION_SQL = """
SELECT d.version, l.version AS logged, l.workload_ids, l.catalogue_tables, l.catalogue_edited, l.everything
  FROM data_version d
  LEFT JOIN change_log l ON l.version > $1 AND l.version <= d.version AND d.version - $1 <= $2
 WHERE d.id = 1
 ORDER BY l.version
"""
NO_VERSION_KNOWN = 2**62


@dataclass(frozen=True)
class Dependencies:
    """What a response read: these workloads' rows; catalogue rows (hardware, environments,
    implementations, protocols, sources, suite snapshots), any of which a change to may concern it;
    the catalogue tables it read whole (`catalogue_lists`), so that a new row in one concerns it too;
    or everything."""

    workloads: frozenset[int] = frozenset()
    catalogue: bool = False
    catalogue_lists: frozenset[str] = frozenset()
    everything: bool = False


EVERYTHING = Dependencies(everything=True)


@dataclass(frozen=True)
class Change:
    """What one data version changed (a row of change_log): the workloads whose rows changed, the
    catalogue tables with a new or changed row, of those the ones an existing row of which changed
    (`catalogue_edited`; None: all of them, as a log row before migration 0021 meant), or everything."""

    version: int
    workloads: frozenset[int]
    catalogue_tables: frozenset[str]
    everything: bool
    catalogue_edited: frozenset[str] | None = None

    @property
    def edited_tables(self) -> frozenset[str]:
        return self.catalogue_tables if self.catalogue_edited is None else self.catalogue_edited

    def touches(self, deps: Dependencies) -> bool:
        if self.everything or deps.everything:
            return True
        return (
            not self.workloads.isdisjoint(deps.workloads)
            or (deps.catalogue and bool(self.edited_tables))
            or not self.catalogue_tables.isdisjoint(deps.catalogue_lists)
        )


# Called with each new version and what changed since the previous one (None: not known, so
# everything may have changed), before any request is handed that version.
VersionListener = Callable[[int, Sequence[Change] | None], None]


class DataVersionReader:
    """The current data version, read over one dedicated connection, one read at a time, with the
    changes since the last version read handed to the listener (the response cache).

    A read already on the wire when a request arrives may have started before a commit that the
    request must see, so the request waits for the next read instead; every request that arrives
    while one read is in flight shares that next read. Under load this is one tiny statement per
    round trip for all concurrent requests, not one per request. Any failure answers None: the
    caller then executes normally, and the request meets the outage the usual way (503).
    """

    def __init__(self, database_url: str, timeout_s: float = 2.0, listeners: Sequence[VersionListener] = ()):
        self._dsn = to_libpq_url(database_url)
        self._timeout_s = timeout_s
        self._listeners = tuple(listeners)
        self._conn: asyncpg.Connection | None = None
        self._statement: asyncpg.prepared_stmt.PreparedStatement | None = None
        self._running: asyncio.Future[int | None] | None = None
        self._queued: asyncio.Future[int | None] | None = None
        self._known: int | None = None
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

    def _start(self) -> asyncio.Future[int | None]:
        task = asyncio.ensure_future(self._read())
        self._running = task
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Future[int | None]) -> None:
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
            known = self._known
            # asyncpg's own timeout: asyncio.wait_for would cost a second task on every read.
            rows = await self._statement.fetch(NO_VERSION_KNOWN if known is None else known, MAX_CHANGES_READ,
                                               timeout=self._timeout_s)
        except Exception as exc:  # an outage, a timeout, a missing table: execute without the cache
            self._warn(exc)
            await self._drop_connection()
            return None
        if not rows:  # no data_version row: not a KernelIndex database (yet)
            return None
        version: int = rows[0]["version"]
        if version != known:
            self._known = version
            changes = changes_between(known, version, rows)
            for listener in self._listeners:
                listener(version, changes)
        return version

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


def changes_between(known: int | None, version: int, rows: Sequence[Any]) -> list[Change] | None:
    """The changes from `known` to `version`, one per version, or None when the log cannot tell them
    all (nothing known before, the database went back in time, a version pruned from the log or
    written before the log existed, more than MAX_CHANGES_READ of them)."""
    if known is None or version < known:
        return None
    changes = [
        Change(r["logged"], frozenset(r["workload_ids"]), frozenset(r["catalogue_tables"]), r["everything"],
               _edited(r))
        for r in rows if r["logged"] is not None
    ]
    if [c.version for c in changes] != list(range(known + 1, version + 1)):
        return None
    return changes


def _edited(row: Any) -> frozenset[str] | None:
    """A log row's catalogue_edited; None (every catalogue table it names was edited) where the row
    has no such column: a reader's statement written before migration 0021."""
    edited = row.get("catalogue_edited")
    return None if edited is None else frozenset(edited)


def _settle(target: asyncio.Future[int | None], done: asyncio.Future[int | None]) -> None:
    """Hand a finished read to the requests queued for it; a failed read is "no version" (None)."""
    if not target.done():
        target.set_result(None if done.cancelled() or done.exception() is not None else done.result())


# How many versions of changes a cache remembers, to decide whether something computed at an older
# version than the newest seen may still be stored (a slow page finishing after a write).
HISTORY_VERSIONS = 1_000


class ChangeHistory:
    """The newest data version a cache has seen and the changes that led to it: what tells whether a
    value computed at an older version still shows the newest data for what it read.

    A value is computed after its request read version V, so what it read is at V or newer. Stored
    when no change after V touches what it read, it is exact at the newest version; a change the
    cache learns of later evicts it like any entry."""

    def __init__(self, keep: int = HISTORY_VERSIONS):
        self.keep = keep
        self.version: int | None = None
        # The changes after `floor` up to `version`, oldest first; nothing is known before `floor`.
        self._changes: deque[Change] = deque()
        self._floor: int | None = None

    def advance(self, version: int, changes: Sequence[Change] | None) -> Sequence[Change] | None:
        """A newer data version, with the changes since the previous one (None: not known). Returns
        what the cache must evict for: the changes, or None for everything."""
        if self.version is not None and version == self.version:
            return ()
        if self.version is None or changes is None or version < self.version:
            self._changes.clear()
            self._floor = version
            self.version = version
            return None
        self._changes.extend(changes)
        while len(self._changes) > self.keep:
            self._floor = self._changes.popleft().version
        self.version = version
        return changes

    def observe(self, version: int) -> bool:
        """A version handed in by a caller; True when it is newer than any seen (changes nobody told
        us about: the cache must drop everything)."""
        if self.version is None or version > self.version:
            self.advance(version, None)
            return True
        return False

    def still_holds(self, version: int, deps: Dependencies) -> bool:
        """Whether a value computed at `version` that read `deps` shows the newest version seen."""
        assert self.version is not None  # observe() ran
        if version >= self.version:
            return True
        if self._floor is None or version < self._floor:
            return False
        return not any(c.version > version and c.touches(deps) for c in self._changes)
