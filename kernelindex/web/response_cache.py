"""Whole-response caching for GraphQL queries and JSON twins, exact with respect to the data.

A workload page executes ~1,000 GraphQL fields; in Python that, not the SQL, is most of a request.
The same page is asked for again and again between writes, so its encoded response is kept and
served until the data it shows changes. "Changes" is decided by the database itself
(kernelindex.db.changes): statement triggers (migration 0007) move the `data_version` row once per
committed transaction that changed a row, and write what it changed to `change_log` (the workloads whose rows changed, the catalogue
tables that changed, or "everything"), whichever process wrote. Every cacheable request reads the
version first, together with the log rows since the version this process last knew, and entries
whose dependencies those changed are dropped before the request looks for its own. So a response is
never served after a committed write it does not show, and a client that wrote sees its write at once.

Each entry records what its execution read (`Dependencies`): a workload page the workloads its
loaders looked up, the catalogue rows their runs name and the hardware catalogue (a new source,
environment or implementation row leaves it be: the runs that name one are its workload's change);
anything whose reads cannot be told for sure (lists, runs,
search, `node`, exports) depends on everything and goes with any change. Correctness beats hit rate.

Time also changes answers (a run turns stale after N days), so entries live at most `ttl_s`
seconds of the application clock. Only queries whose execution produced no errors are stored;
mutations, errors and anything the version cannot be read for go the normal way.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import zlib
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    get_operation_ast,
    parse,
)

from kernelindex.db.changes import EVERYTHING, Change, ChangeHistory, Dependencies
from kernelindex.mcp.gateway import Document, Execute
from kernelindex.services.workload_page import page_dependencies

log = logging.getLogger("kernelindex.web")

# Longer documents are executed every time: the key would cost more memory than the entry saves,
# and no page or list query comes close.
MAX_CACHEABLE_QUERY_CHARS = 20_000

# Root fields whose whole subtree reads only the workloads the request's workload loaders looked up
# and the catalogue. Every field reachable from `Workload` that can read the database is listed, and
# reviewed, in tests/api/test_cache_invalidation.py: a new one fails that test until it is.
WORKLOAD_ROOT_FIELDS = frozenset({"workload", "__typename"})


def response_dependencies(root: frozenset[str] | None, workloads: Iterable[int], unscoped: bool) -> Dependencies:
    """The dependencies of an executed query: its root fields (None: not known) and what its workload
    loaders read (unscoped: a look-up found nothing, so a new workload could change the answer)."""
    if root is None or unscoped or not root <= WORKLOAD_ROOT_FIELDS:
        return EVERYTHING
    return page_dependencies(workloads)


@dataclass(frozen=True)
class CacheKey:
    query: str
    operation_name: str | None
    variables: str

    @property
    def size(self) -> int:
        return len(self.query) + len(self.variables) + len(self.operation_name or "")


def _query_request(query: object, operation_name: object) -> tuple[str, str | None] | None:
    """The document and operation name of a request that runs a query operation (not a mutation, not
    a document that fails to parse), typed; None for anything else. A document longer than any
    cacheable one is not parsed here (nor kept in _operation's cache): None."""
    if not isinstance(query, str) or len(query) > MAX_CACHEABLE_QUERY_CHARS:
        return None
    if operation_name is not None and not isinstance(operation_name, str):
        return None
    if _operation(query, operation_name) is None:
        return None
    return query, operation_name


def is_query(query: object, operation_name: object) -> bool:
    """Whether the request runs a query operation (see _query_request)."""
    return _query_request(query, operation_name) is not None


def cache_key(query: object, operation_name: object, variables: object) -> CacheKey | None:
    """The key for a query operation, or None when the request is not a cacheable query."""
    found = _query_request(query, operation_name)
    if found is None:
        return None
    query, operation_name = found
    try:
        canonical = json.dumps(variables or {}, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        return None
    return CacheKey(query, operation_name, canonical)


def export_key(name: str, params: list[tuple[str, str]]) -> CacheKey:
    """The key of a streamed export (runs.csv, catalog.jsonl) with its filters."""
    return CacheKey(f"#export:{name}", None, json.dumps(params))


@lru_cache(maxsize=512)
def _operation(query: str, operation_name: str | None) -> tuple[DocumentNode, OperationDefinitionNode] | None:
    """The query operation the request runs, with its document; None for anything else."""
    try:
        # The token cap mirrors the server's limit, so parsing here cannot be made expensive.
        document = parse(query, max_tokens=5_000)
        operation = get_operation_ast(document, operation_name)
    except GraphQLError:
        return None
    if operation is None or operation.operation is not OperationType.QUERY:
        return None
    return document, operation


@lru_cache(maxsize=512)
def root_fields(query: str, operation_name: str | None) -> frozenset[str] | None:
    """The names of the root fields a query operation selects, through fragments (not their aliases:
    what runs); None when the request is not a query operation."""
    found = _operation(query, operation_name)
    if found is None:
        return None
    document, operation = found
    fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
    names: set[str] = set()
    seen: set[str] = set()

    def collect(selection_set: SelectionSetNode) -> None:
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode):
                names.add(selection.name.value)
            elif isinstance(selection, InlineFragmentNode):
                collect(selection.selection_set)
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                if name not in seen:  # a cycle is invalid GraphQL; this runs before validation
                    seen.add(name)
                    if name in fragments:
                        collect(fragments[name].selection_set)
                    else:
                        names.add(f"#unknown-fragment:{name}")  # invalid, and never "scoped"

    collect(operation.selection_set)
    return frozenset(names)


# Entries live between (1 - TTL_SPREAD) and 1 times the TTL, the fraction fixed per key: entries
# stored together (a server warming up) would otherwise all expire in the same instant and be
# executed one after another while every other request waits (~80 ms for five keys in a soak).
TTL_SPREAD = 0.1


def _spread(key: CacheKey) -> float:
    """A number in [0, 1) that depends on the key alone."""
    return zlib.crc32(f"{key.query}\0{key.operation_name}\0{key.variables}".encode("utf-8", "surrogatepass")) / 2**32


@dataclass
class _Entry:
    stored_at: datetime
    body: str
    size: int
    lifetime_s: float
    deps: Dependencies


@dataclass(frozen=True)
class Answer:
    """What get_or_compute found: the body to send (None: nothing to serve, send `result`), whether it
    came from the cache (X-Cache: hit), and the request's own execution result when it executed."""

    body: str | None
    hit: bool
    result: object = None


# compute(): the encoded body to store (None: not storable), what the execution read, and its result.
Compute = Callable[[], Awaitable[tuple[str | None, Dependencies, object]]]


class ResponseCache:
    """Encoded responses by (query, operation, variables), each valid at the newest version seen
    until a change it depends on arrives.

    Bounded by entry count and by bytes, least recently used out first. Entries are indexed by the
    workloads they read, so a change evicts exactly the entries it touches. A response computed at an
    older version than the newest seen is stored only if no change since that version touches what it
    read.
    """

    def __init__(self, max_entries: int, max_bytes: int, ttl_s: float):
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.ttl_s = ttl_s
        self._entries: OrderedDict[CacheKey, _Entry] = OrderedDict()
        self._by_workload: dict[int, set[CacheKey]] = {}
        self._catalogue: set[CacheKey] = set()  # entries that read catalogue rows (an edit evicts them)
        self._by_catalogue_list: dict[str, set[CacheKey]] = {}  # entries that read a catalogue table whole
        self._unscoped: set[CacheKey] = set()  # entries that depend on everything
        self._bytes = 0
        self._history = ChangeHistory()
        self._running: dict[CacheKey, asyncio.Future] = {}
        self.hits = 0
        self.misses = 0
        self.shared = 0  # misses answered by another request's execution
        self.invalidated = 0  # entries dropped because the data they read changed
        self.flushes = 0  # times every entry was dropped (changes not known, or a change to everything)
        self.not_stored = 0  # results computed before a change they depend on, not stored
        self.lru_evictions = 0

    @property
    def enabled(self) -> bool:
        return self.max_entries > 0 and self.max_bytes > 0

    @property
    def version(self) -> int | None:
        return self._history.version

    def __len__(self) -> int:
        return len(self._entries)

    # -- versions --------------------------------------------------------------------------------

    def advance(self, version: int, changes: Sequence[Change] | None) -> None:
        """A newer data version, with the changes since the previous one (None: not known)."""
        applied = self._history.advance(version, changes)
        if applied is None:
            self._flush()
        else:
            for change in applied:
                self._apply(change)

    def _apply(self, change: Change) -> None:
        if change.everything:
            self._flush()
            return
        doomed = set(self._unscoped)
        if change.edited_tables:
            doomed |= self._catalogue
        for table in change.catalogue_tables:
            doomed |= self._by_catalogue_list.get(table, set())
        for workload in change.workloads:
            doomed |= self._by_workload.get(workload, set())
        for key in doomed:
            self._remove(key)
        self.invalidated += len(doomed)

    def _flush(self) -> None:
        if self._entries:
            self.invalidated += len(self._entries)
            self.flushes += 1
        self._entries.clear()
        self._by_workload.clear()
        self._catalogue.clear()
        self._by_catalogue_list.clear()
        self._unscoped.clear()
        self._bytes = 0

    def _observe(self, version: int) -> None:
        """A version handed in by a caller: newer than any seen means changes nobody told us about."""
        if self._history.observe(version):
            self._flush()

    def _storable(self, version: int, deps: Dependencies) -> bool:
        """Whether a response computed at `version` still shows the newest version for what it read."""
        return self._history.still_holds(version, deps)

    # -- entries ---------------------------------------------------------------------------------

    def get(self, key: CacheKey, version: int, now: datetime) -> str | None:
        body = self._lookup(key, version, now)
        if body is None:
            self.misses += 1
        else:
            self.hits += 1
        return body

    def _lookup(self, key: CacheKey, version: int, now: datetime) -> str | None:
        self._observe(version)
        entry = self._entries.get(key)
        if entry is None:
            return None
        if (now - entry.stored_at).total_seconds() > entry.lifetime_s:
            return None  # replaced by the next put (or least recently used out)
        self._entries.move_to_end(key)
        return entry.body

    def put(self, key: CacheKey, version: int, now: datetime, body: str, deps: Dependencies = EVERYTHING) -> bool:
        """Store a response computed at `version` that read `deps`; False when it is not stored."""
        self._observe(version)
        size = len(body) + key.size
        if size > self.max_bytes:
            return False
        if not self._storable(version, deps):
            self.not_stored += 1
            return False
        self._remove(key)
        self._entries[key] = _Entry(now, body, size, self.ttl_s * (1 - TTL_SPREAD * _spread(key)), deps)
        self._bytes += size
        if deps.everything:
            self._unscoped.add(key)
        else:
            if deps.catalogue:
                self._catalogue.add(key)
            for table in deps.catalogue_lists:
                self._by_catalogue_list.setdefault(table, set()).add(key)
            for workload in deps.workloads:
                self._by_workload.setdefault(workload, set()).add(key)
        while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
            self._remove(next(iter(self._entries)))
            self.lru_evictions += 1
        return True

    def _remove(self, key: CacheKey) -> None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        self._bytes -= entry.size
        deps = entry.deps
        if deps.everything:
            self._unscoped.discard(key)
            return
        if deps.catalogue:
            self._catalogue.discard(key)
        _unindex(self._by_catalogue_list, deps.catalogue_lists, key)
        _unindex(self._by_workload, deps.workloads, key)

    def dependencies(self, key: CacheKey) -> Dependencies | None:
        """What a stored entry read (for tests and diagnostics)."""
        entry = self._entries.get(key)
        return entry.deps if entry is not None else None

    async def get_or_compute(self, key: CacheKey, version: int, now: datetime, compute: Compute) -> Answer:
        """The body for the key: cached, or stored by the one execution in flight for this key, or
        computed here by `compute()`.

        Without this, a popular page that expires or is invalidated under load is executed by every
        request that arrives while the first execution runs: at 2,000 requests/s that was dozens of
        concurrent executions of the same page, a latency spike and 11 MiB more resident memory. A
        request waiting on another's execution serves what that execution stored, which is valid at
        the newest version seen, so also at its own; if nothing was stored (an error, a change to what
        it read meanwhile), it executes for itself."""
        body = self.get(key, version, now)
        if body is not None:
            return Answer(body, hit=True)
        running = self._running.get(key)
        if running is not None:
            await asyncio.shield(running)
            body = self._lookup(key, version, now)
            if body is not None:
                self.shared += 1
                return Answer(body, hit=True)
        future = asyncio.get_running_loop().create_future()
        self._running[key] = future
        try:
            body, deps, result = await compute()
            if body is not None:
                self.put(key, version, now, body, deps)
            return Answer(body, hit=False, result=result)
        finally:
            if self._running.get(key) is future:
                del self._running[key]
            future.set_result(None)

    # -- metrics ---------------------------------------------------------------------------------

    def metrics(self) -> dict[str, int]:
        return {
            "hits": self.hits, "misses": self.misses, "shared": self.shared, "invalidated": self.invalidated,
            "flushes": self.flushes, "not_stored": self.not_stored, "lru_evictions": self.lru_evictions,
            "entries": len(self._entries), "bytes": self._bytes, "data_version": self._history.version or 0,
        }


def _unindex(index: dict[Any, set[CacheKey]], names: Iterable[Any], key: CacheKey) -> None:
    for name in names:
        keys = index.get(name)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del index[name]


# name: (type, help). Counters only grow; gauges are the state now.
METRICS = {
    "hits": ("counter", "Cacheable requests answered from the response cache (X-Cache: hit)."),
    "misses": ("counter", "Cacheable requests not found in the response cache (X-Cache: miss unless shared)."),
    "shared": ("counter", "Misses answered by a concurrent execution of the same key."),
    "invalidated": ("counter", "Entries dropped because data they read changed."),
    "flushes": ("counter", "Times every entry was dropped (changes unknown, or a change to everything)."),
    "not_stored": ("counter", "Responses not stored: a change they depend on arrived while they executed."),
    "lru_evictions": ("counter", "Entries dropped to stay within the entry and byte bounds."),
    "entries": ("gauge", "Entries now in the response cache."),
    "bytes": ("gauge", "Bytes now held by the response cache."),
    "data_version": ("gauge", "The newest data version this process has seen."),
}


class CachedOperations:
    """A response cache in front of the MCP tools' queries (kernelindex.mcp.gateway): keyed as
    /graphql keys a request (document, operation name, variables), read at the data version read before
    execution, stored with what the execution read, never for an answer that read a fleet job. A tool's
    query and the same operation POSTed to /graphql are one entry; both store {"data": …}."""

    def __init__(self, cache: ResponseCache, data_version: Callable[[], Awaitable[int | None]],
                 clock: Callable[[], datetime]):
        self.cache = cache
        self.data_version = data_version
        self.clock = clock

    async def __call__(self, document: Document, variables: dict[str, Any], execute: Execute) -> dict[str, Any]:
        cache = self.cache
        key = cache_key(document.text, document.name, variables) if cache.enabled else None
        if key is None:
            data, _ = await execute(None)
            return data
        version = await self.data_version()
        if version is None:
            data, _ = await execute(None)
            return data

        async def compute() -> tuple[str | None, Dependencies, object]:
            data, reads = await execute(version)
            deps = response_dependencies(root_fields(key.query, key.operation_name), reads.workloads, reads.unscoped)
            if reads.volatile:
                return None, deps, data
            return json.dumps({"data": data}, ensure_ascii=False, allow_nan=False, separators=(",", ":")), deps, data

        answer = await cache.get_or_compute(key, version, self.clock(), compute)
        if answer.hit:
            assert answer.body is not None  # a hit is a stored body
            cached: dict[str, Any] = json.loads(answer.body)["data"]
            return cached
        executed: dict[str, Any] = answer.result  # type: ignore[assignment]  # compute()'s data: this call executed
        return executed


def prometheus_text(prefix: str, values: dict[str, int], described: dict[str, tuple[str, str]]) -> str:
    """Figures in the Prometheus text format, each `described` name as `kernelindex_<prefix>_<name>`,
    labelled with this worker's process id (`serve --workers N`: each worker has its own caches and
    answers for itself)."""
    label = f'{{pid="{os.getpid()}"}}'
    lines: list[str] = []
    for name, (kind, text) in described.items():
        metric = f"kernelindex_{prefix}_{name}" + ("_total" if kind == "counter" else "")
        lines += [f"# HELP {metric} {text}", f"# TYPE {metric} {kind}", f"{metric}{label} {values[name]}"]
    return "\n".join(lines) + "\n"
