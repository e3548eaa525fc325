"""Streamed exports: /exports/runs.csv and /exports/catalog.jsonl, filtered like the runs query; the rows,
refusals and bounds /exports/runs.parquet (kernelindex.web.runs_parquet) shares with them."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from enum import Enum, StrEnum
from typing import Any, TypeVar

from sqlalchemy import Select, or_, select, text
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import request_response
from starlette.types import Message, Receive, Scope, Send

from kernelindex.db.engine import discard_connections
from kernelindex.db.errors import is_unavailable
from kernelindex.db.models import Hardware, Run, SuiteSnapshot, SuiteSnapshotMember, Workload, WorkloadRevision
from kernelindex.db.text import text_problem
from kernelindex.graphql.enums import Evidence, FigureUnit, Metric, RunStatus, of_rules
from kernelindex.graphql.errors import UNAVAILABLE_MESSAGE, UserInputError
from kernelindex.graphql.inputs import check_datetime
from kernelindex.graphql.request_state import request_state
from kernelindex.ingest.export import hardware_line, run_record, workload_line
from kernelindex.rules import stats
from kernelindex.rules import trust_labels as trust
from kernelindex.rules.numbers import significant
from kernelindex.services.facts import implementation_facts, run_rows_statement
from kernelindex.services.run_filters import FilterError, RunFilters, check_names
from kernelindex.web.response_cache import ResponseCache, export_key
from kernelindex.web.state import server_state

log = logging.getLogger("kernelindex.web")

# What a client refused for want of an export slot is told to wait before trying again.
RETRY_AFTER_S = 5
# How that refusal's error begins (perf.responses.busy_problem knows it by this).
EXPORTS_BUSY = "too many exports running"


class BoundedExport:
    """An export route with its bounds: a slot among settings.export_concurrency (none free: 503 with
    Retry-After, at once), a session on the export pool (never the request pool), at most
    settings.export_timeout_s in all, and at most settings.export_idle_timeout_s for the client to take
    each chunk. An export cut off after its response started ends without its last chunk, so the
    client sees an incomplete body, never a short file that looks whole.

    A class, not a function: Starlette calls a function endpoint with a Request, an object with the
    ASGI (scope, receive, send)."""

    def __init__(self, endpoint: Callable[[Request], Awaitable[Response]]):
        self.app = request_response(endpoint)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        server = server_state(HTTPConnection(scope))
        settings = server.settings
        state = request_state(scope)
        request_id = state.request_id
        if not server.export_slots.take():
            body = json.dumps({"error": f"{EXPORTS_BUSY} (at most {settings.export_concurrency} at once); "
                                        f"retry in {RETRY_AFTER_S} s", "request_id": request_id}).encode()
            await send({"type": "http.response.start", "status": 503, "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                (b"retry-after", str(RETRY_AFTER_S).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        session = server.export_sessionmaker()
        state.session = session
        progress = _Progress(send, settings.export_idle_timeout_s)
        try:
            async with asyncio.timeout(settings.export_timeout_s):
                await self.app(scope, receive, progress.send)
        except (TimeoutError, _SlowReader) as exc:
            reason = (f"the client took no data for {settings.export_idle_timeout_s:g} s" if isinstance(exc, _SlowReader)
                      else f"it took longer than {settings.export_timeout_s:g} s")
            log.warning("export %s (request %s) cut off: %s", scope["path"], request_id, reason)
            if not progress.started:
                body = json.dumps({"error": f"the export was cut off: {reason}", "request_id": request_id}).encode()
                await send({"type": "http.response.start", "status": 504, "headers": [
                    (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
        finally:
            server.export_slots.give_back()
            await _end_session(session, clean=progress.complete, request_id=request_id)


class _SlowReader(Exception):
    """The client did not take a chunk within the idle limit."""


class _Progress:
    """The export's `send`: each message must be taken by the client within the idle limit (the server
    waits on a client whose buffers are full). Records whether the response started and finished."""

    def __init__(self, send: Send, idle_s: float):
        self._send = send
        self._idle_s = idle_s
        self.started = False
        self.complete = False

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
        try:
            async with asyncio.timeout(self._idle_s):
                await self._send(message)
        except TimeoutError:
            raise _SlowReader() from None
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            self.complete = True


async def _end_session(session: AsyncSession, *, clean: bool, request_id: str) -> None:
    """A finished export hands its connection back (rolled back); one cut off, failed or abandoned by its
    client may have a statement or a cursor open: its connection is discarded instead."""
    try:
        if clean:
            await session.close()
        else:
            await discard_connections(session)
    except Exception as exc:
        log.warning("ending the export's session failed (request %s): %s", request_id, exc)


def _session(request: Request) -> AsyncSession:
    """The export's session, which BoundedExport opened on the export pool."""
    session = request_state(request).session
    assert session is not None  # every export route runs inside BoundedExport
    return session


# Rows fetched and written per chunk. Each chunk is CPU the event loop spends on one export without
# answering anyone else (the fetch between chunks is where others run): small enough that several
# exports at once keep /healthz and GraphQL prompt, large enough that a round trip per chunk is cheap.
BATCH = 100


class Kind(StrEnum):
    """What a column's values are, which typed formats keep (runs.parquet: kernelindex.web.runs_parquet);
    runs.csv writes every one as text. CATEGORY: text of a small vocabulary (an enum's values, SKUs,
    sources), dictionary-encoded where a format can."""

    TEXT = "text"
    CATEGORY = "category"
    INTEGER = "integer"
    FLOAT = "float"
    BOOLEAN = "boolean"
    TIMESTAMP = "timestamp"


@dataclass(frozen=True)
class ExportColumn:
    """One column of runs.csv (and runs.parquet): its name since runs.csv was first published
    (`names=csv`, the default, so existing readers keep working) and the path of the same value from
    `Run` in the GraphQL schema (`names=graphql`). This table is the one place both come from;
    tests/api/test_export_vocabulary.py checks every path against the schema and every value against
    the GraphQL answer. `kind`: what its values are (Kind). `enum`: the GraphQL enum of a fixed set;
    `names=graphql` writes its names (PASSED), the published columns the lower-case values they
    always had (passed)."""

    csv: str
    graphql: str
    kind: Kind = Kind.TEXT
    enum: type[Enum] | None = None


RUN_COLUMNS = (
    ExportColumn("run_id", "databaseId", Kind.INTEGER),
    ExportColumn("workload", "workloadSlug", Kind.CATEGORY),
    ExportColumn("workload_source_sha256", "revision.sha256"),
    ExportColumn("bindings", "configuration.bindings"),
    ExportColumn("dtype", "configuration.dtype", Kind.CATEGORY),
    ExportColumn("implementation", "implementation.slug", Kind.CATEGORY),
    ExportColumn("hardware_sku", "environment.hardware.sku", Kind.CATEGORY),
    ExportColumn("hardware_family", "environment.hardware.family", Kind.CATEGORY),
    ExportColumn("provider", "environment.provider", Kind.CATEGORY),
    ExportColumn("environment_fingerprint", "environment.fingerprint"),
    ExportColumn("protocol", "protocol.name", Kind.CATEGORY),
    ExportColumn("protocol_version", "protocol.version", Kind.CATEGORY),
    ExportColumn("status", "status", Kind.CATEGORY, enum=RunStatus),
    ExportColumn("failure_reason", "failureReason"),
    ExportColumn("mean_ms", "meanMs", Kind.FLOAT),
    ExportColumn("std_ms", "stdMs", Kind.FLOAT),
    ExportColumn("min_ms", "minMs", Kind.FLOAT),
    ExportColumn("max_ms", "maxMs", Kind.FLOAT),
    ExportColumn("median_ms", "medianMs", Kind.FLOAT),
    ExportColumn("p5_ms", "p5Ms", Kind.FLOAT),
    ExportColumn("p95_ms", "p95Ms", Kind.FLOAT),
    ExportColumn("num_trials", "numTrials", Kind.INTEGER),
    ExportColumn("ci95_half_width_ms", "ciHalfWidthMs", Kind.FLOAT),
    ExportColumn("compile_time_ms", "compileTimeMs", Kind.FLOAT),
    ExportColumn("observed_at", "observedAt", Kind.TIMESTAMP),
    ExportColumn("evidence", "evidence", Kind.CATEGORY, enum=Evidence),
    ExportColumn("source", "source.name", Kind.CATEGORY),
    ExportColumn("source_revision", "source.revision", Kind.CATEGORY),
    ExportColumn("licence", "implementation.licence", Kind.CATEGORY),
    ExportColumn("trust_label", "trustLabel", Kind.CATEGORY),
    ExportColumn("stale", "stale", Kind.BOOLEAN),
    ExportColumn("superseded", "superseded", Kind.BOOLEAN),
    ExportColumn("retracted", "retracted", Kind.BOOLEAN),
    # Appended, not inserted, so that readers of the published columns by position keep working.
    ExportColumn("suite", "suite", Kind.CATEGORY),
    ExportColumn("level", "level", Kind.INTEGER),
    ExportColumn("problem_number", "problemNumber", Kind.INTEGER),
    ExportColumn("workload_name", "workloadName", Kind.CATEGORY),
    # The headline figure in its metric and unit (migration 0016), and the route it came through: a Liger
    # run states a median and no mean, a GPU MODE leaderboard run a score in seconds.
    ExportColumn("metric", "metric", Kind.CATEGORY, enum=Metric),
    ExportColumn("statistic", "protocol.statistic", Kind.CATEGORY),
    ExportColumn("figure", "figure", Kind.FLOAT),
    ExportColumn("figure_unit", "figureUnit", Kind.CATEGORY, enum=FigureUnit),
    ExportColumn("figure_low", "figureLow", Kind.FLOAT),
    ExportColumn("figure_high", "figureHigh", Kind.FLOAT),
    ExportColumn("low_quantile", "lowQuantile", Kind.FLOAT),
    ExportColumn("high_quantile", "highQuantile", Kind.FLOAT),
    ExportColumn("source_speedup", "sourceSpeedup", Kind.FLOAT),
    ExportColumn("source_route", "source.route", Kind.CATEGORY),
)
CSV_COLUMNS = tuple(c.csv for c in RUN_COLUMNS)
GRAPHQL_COLUMNS = tuple(c.graphql for c in RUN_COLUMNS)
# runs.csv?names=: "csv" (the default) the published column names; "graphql" the GraphQL paths, with
# bindings as GraphQL gives them (a list of {axis, value}) instead of an object.
NAME_CHOICES = ("csv", "graphql")

# The export parameters GraphQL spells differently (camelCase); both spellings are accepted.
FILTER_ALIASES = {"observedSince": "observed_since", "eligibleOnly": "eligible_only", "includeSuperseded": "include_superseded"}
# Filters whose values are a GraphQL enum: the enum's name (PASSED) or its value (passed), any case.
ENUM_FILTERS: dict[str, type[Enum]] = {"status": RunStatus, "evidence": Evidence}
BOOLEAN = {"true": True, "1": True, "false": False, "0": False}


def filters_from_query(request: Request, route_params: frozenset[str] = frozenset()) -> RunFilters:
    """The run filters of the query string; `route_params` are the other parameters the route reads.
    GraphQL's spellings of names (`observedSince`) and enum values (`status=PASSED`) are accepted."""
    items = [(FILTER_ALIASES.get(name, name), value) for name, value in request.query_params.multi_items()]
    q = dict(items)
    known = {"workload", "implementation", "hardware", "level", "evidence", "licence", "status", "stale", "observed_since",
             "eligible_only", "include_superseded"} | route_params
    unknown = sorted(set(q) - known)
    if unknown:
        raise FilterError(f"unknown filter(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    for name, value in items:
        problem = text_problem(value)
        if problem:
            raise FilterError(f"{name} {problem}")

    def boolean(name: str) -> bool | None:
        if name not in q:
            return None
        if q[name].lower() not in BOOLEAN:
            raise FilterError(f"{name} must be true or false, got {q[name]!r}")
        return BOOLEAN[q[name].lower()]

    def enum_value(name: str) -> str | None:
        if name not in q:
            return None
        for member in ENUM_FILTERS[name]:
            if q[name].lower() in (member.name.lower(), str(member.value).lower()):
                return str(member.value)
        spelled = ", ".join(f"{m.name} ({m.value})" for m in ENUM_FILTERS[name])
        raise FilterError(f"{name} must be one of {spelled}, got {q[name]!r}")

    level = None
    if "level" in q:
        if not q["level"].isascii() or not q["level"].isdecimal() or len(q["level"]) > 4:
            raise FilterError(f"level must be a whole number, e.g. 3, got {q['level']!r}")
        level = int(q["level"])
    observed_since = None
    if "observed_since" in q:
        try:
            observed_since = datetime.fromisoformat(q["observed_since"].replace("Z", "+00:00"))
        except ValueError:
            raise FilterError(f"observed_since must be an ISO 8601 time, got {q['observed_since']!r}") from None
        try:
            check_datetime("observed_since", observed_since)
        except UserInputError as exc:
            raise FilterError(exc.message) from exc
    return RunFilters(
        workload=q.get("workload"), implementation=q.get("implementation"), hardware=q.get("hardware"), level=level,
        evidence=enum_value("evidence"), licence=q.get("licence"), status=enum_value("status"), stale=boolean("stale"),
        observed_since=observed_since, eligible_only=bool(boolean("eligible_only")),
        include_superseded=bool(boolean("include_superseded")),
    )


def _statement(request: Request, filters: RunFilters):
    now = server_state(request).clock()
    return (
        run_rows_statement()
        .add_columns(Workload.slug, WorkloadRevision.source_sha256)
        .join(Workload, Workload.id == Run.workload_id)
        .join(WorkloadRevision, WorkloadRevision.id == Run.workload_revision_id)
        .where(*filters.conditions(now))
        .order_by(Run.id)
        .execution_options(yield_per=BATCH)
    )


async def database_unavailable(request: Request) -> Response | None:
    """503 when the database does not answer. Once a streamed response has started, its status is
    sent: an outage must be found before that, not in the middle of the body."""
    try:
        await _session(request).execute(text("SELECT 1"))
    except Exception as exc:
        if not is_unavailable(exc):
            raise
        request_id = request_state(request).request_id
        log.warning("database unavailable (request %s): %s", request_id, exc)
        return JSONResponse({"error": UNAVAILABLE_MESSAGE, "request_id": request_id}, status_code=503)
    return None


@dataclass(frozen=True)
class RunRows:
    """The runs a runs export streams (runs.csv, runs.parquet), in one definition: each run a tuple in
    RUN_COLUMNS' order, typed as its column's Kind (ints, floats, bools, an aware datetime, text; None
    where there is no value), with every number as GraphQL returns it (numbers-v1) and the enum
    columns in the vocabulary `names` asks for. Only how a format writes them differs."""

    session: AsyncSession
    statement: Select[Any]
    now: datetime
    graphql_names: bool

    @property
    def header(self) -> tuple[str, ...]:
        return GRAPHQL_COLUMNS if self.graphql_names else CSV_COLUMNS

    async def rows(self) -> AsyncIterator[tuple[Any, ...]]:
        graphql_names, now = self.graphql_names, self.now
        result = await self.session.stream(self.statement)
        async for run, impl, env, hw, protocol, snapshot, source, slug, sha, suite, level, number, name in result:
            half = stats.ci95_half_width(run.std_ms, run.num_trials)
            bindings = ([{"axis": k, "value": int(v)} for k, v in sorted(run.bindings.items())] if graphql_names
                        else run.bindings)
            row = (run.id, slug, sha, json.dumps(bindings, sort_keys=True), run.dtype, impl.slug, hw.sku, hw.family,
                   env.provider, env.fingerprint, protocol.name, protocol.version, run.status, run.failure_reason,
                   run.mean_ms, run.std_ms, run.min_ms, run.max_ms, run.median_ms, run.p5_ms, run.p95_ms, run.num_trials,
                   half, run.compile_time_ms, run.observed_at, run.evidence, source.name,
                   snapshot.revision, impl.licence, trust.trust_label(run.evidence, implementation_facts(impl)),
                   trust.is_stale(run.observed_at, now), run.superseded_at is not None, run.retracted_at is not None,
                   suite, level, number, name, protocol.metric, protocol.statistic, run.figure, protocol.unit,
                   run.figure_low, run.figure_high, run.low_quantile, run.high_quantile, run.source_speedup,
                   snapshot.route)
            # Every number as GraphQL returns it (numbers-v1: 12 significant figures, no binary noise in
            # ci95_half_width_ms; a stored figure with fewer digits, every one a source states, unchanged).
            # GraphQL names enums by name (PASSED); the published columns keep the lower-case values.
            yield tuple(significant(v) if isinstance(v, float)
                        else of_rules(c.enum, v).name if graphql_names and c.enum is not None else v
                        for c, v in zip(RUN_COLUMNS, row, strict=True))


async def run_rows(request: Request) -> RunRows | Response:
    """The runs a runs export asks for, or the answer that refuses it, the same for every format: 400
    for a bad filter or `names`, or a name that matches nothing; 503 when the database is down."""
    try:
        filters = filters_from_query(request, frozenset({"names"}))
        # The grouping columns (suite, level, problem, name) a researcher needs, after the published ones.
        statement = _statement(request, filters).add_columns(Workload.suite, Workload.level, Workload.problem_number, Workload.name)
        names = request.query_params.get("names", "csv")
        if names not in NAME_CHOICES:
            raise FilterError(f"names must be {' or '.join(NAME_CHOICES)}, got {names!r}")
    except FilterError as exc:
        return JSONResponse({"error": str(exc)}, status_code=400)
    if (unavailable := await database_unavailable(request)) is not None:
        return unavailable
    session = _session(request)
    if (refused := await unknown_names(session, filters)) is not None:
        return refused
    return RunRows(session, statement, server_state(request).clock(), graphql_names=names == "graphql")


async def runs_csv(request: Request) -> Response:
    # Looked up by the raw query string first: only a request whose filters were valid ever stored
    # an entry, and building the statement costs more than a cache hit.
    export = CachedExport(request, "runs.csv", "text/csv; charset=utf-8")
    if (cached := await export.hit()) is not None:
        return cached
    runs = await run_rows(request)
    if isinstance(runs, Response):
        return runs
    graphql_names = runs.graphql_names

    async def chunks() -> AsyncIterator[str]:
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(runs.header)
        count = 0
        async for row in runs.rows():
            # Text as runs.csv has always written it: no value empty, a time in ISO 8601, booleans as
            # Python's True/False in the published columns and as JSON's true/false with GraphQL's names.
            writer.writerow(tuple("" if v is None else v.isoformat() if isinstance(v, datetime)
                                  else ("true" if v else "false") if graphql_names and isinstance(v, bool) else v
                                  for v in row))
            count += 1
            if count % BATCH == 0:
                yield buffer.getvalue()
                buffer.seek(0)
                buffer.truncate()
        yield buffer.getvalue()

    return export.stream(chunks())


async def unknown_names(session: AsyncSession, filters: RunFilters) -> Response | None:
    """400 when a workload, implementation or hardware filter names nothing in the catalogue, with the
    close matches, in the words GraphQL uses (run_filters.check_names)."""
    try:
        await check_names(session, workload=filters.workload, implementation=filters.implementation,
                          hardware=filters.hardware)
    except FilterError as exc:
        return JSONResponse({"error": str(exc)}, status_code=400)
    return None


# A chunk of an export: text (runs.csv, catalog.jsonl) or bytes (runs.parquet).
Chunk = TypeVar("Chunk", str, bytes)

# Exports up to this size are kept in the response cache once streamed; bigger ones stream every time.
CACHEABLE_EXPORT_BYTES = 1024 * 1024


class CachedExport:
    """An export served from the response cache while the data version holds, or streamed and, when
    complete and small enough, stored. Looked up before the database check, so a hit does not touch
    the database beyond the version read."""

    def __init__(self, request: Request, name: str, media_type: str):
        self.request = request
        self.media_type = media_type
        self.headers = {"content-disposition": f'attachment; filename="{name}"'}
        server = server_state(request)
        self.cache: ResponseCache = server.response_cache
        self.data_version = server.data_version
        self.key = export_key(name, sorted(request.query_params.multi_items())) if self.cache.enabled else None
        self.version: int | None = None
        self.now = server.clock()
        self.turn = server.export_slots.turn

    async def hit(self) -> Response | None:
        if self.key is None:
            return None
        self.version = await self.data_version.current()
        body = self.cache.get(self.key, self.version, self.now) if self.version is not None else None
        return Response(body, media_type=self.media_type, headers={**self.headers, "x-cache": "hit"}) if body is not None else None

    def stream(self, chunks: AsyncIterator[str]) -> StreamingResponse:
        return StreamingResponse(self._tee(chunks), media_type=self.media_type, headers={**self.headers, "x-cache": "miss"})

    async def _tee(self, chunks: AsyncIterator[str]) -> AsyncIterator[str]:
        kept: list[str] | None = [] if self.version is not None else None
        size = 0
        async for chunk in in_turns(self.turn, chunks):
            if kept is not None:
                size += len(chunk)
                kept = kept if size <= CACHEABLE_EXPORT_BYTES else None
                if kept is not None:
                    kept.append(chunk)
            yield chunk
        if kept is not None and self.key is not None and self.version is not None:
            self.cache.put(self.key, self.version, self.now, "".join(kept))


async def in_turns(turn: asyncio.Lock, chunks: AsyncIterator[Chunk]) -> AsyncIterator[Chunk]:
    """An export's chunks, each made while holding `turn` (ExportSlots.turn): one export makes a chunk at
    a time. An empty chunk is a turn for the others with nothing to send (an export that makes its
    output in larger pieces than it fetches rows hands the turn on between fetches all the same)."""
    iterator = aiter(chunks)
    while True:
        async with turn:
            try:
                chunk = await anext(iterator)
            except StopAsyncIteration:
                return
        if chunk:
            yield chunk
        # A turn for everyone else after every chunk: a send into a socket with room, and rows the
        # driver already buffered, come back without ever yielding to the event loop, so an export
        # starting over a fast connection would otherwise hold it for many chunks at once.
        await asyncio.sleep(0)


# catalog.jsonl?revisions=: "current" (the default) carries each workload's current revision and the
# revisions its exported runs are on (what a re-import needs); "all" every revision of each workload.
REVISION_CHOICES = ("current", "all")


def _revisions_statement(filters: RunFilters, runs: Select[Any], *, everything: bool) -> Select[Workload, WorkloadRevision]:
    """The workload revisions a catalogue export carries: of the workload asked for (all of them
    without a workload filter), the current one and those the exported runs need, or every one."""
    statement = (
        select(Workload, WorkloadRevision)
        .join(WorkloadRevision, WorkloadRevision.workload_id == Workload.id)
        .order_by(Workload.id, (WorkloadRevision.id == Workload.current_revision_id), WorkloadRevision.id)
    )
    if filters.workload is not None:
        statement = statement.where(Workload.slug == filters.workload)
    if not everything:
        needed = runs.with_only_columns(Run.workload_revision_id, maintain_column_froms=True).order_by(None)
        statement = statement.where(or_(WorkloadRevision.id == Workload.current_revision_id, WorkloadRevision.id.in_(needed)))
    return statement


async def catalog_jsonl(request: Request) -> Response:
    """Hardware, then the workload revisions (the current ones and those the runs need; `revisions=all`
    for every one), then every run, of every suite (kernelindex.ingest.export.run_record: a source
    adapter's in the run-record format's stated form, with its source, licence and terms): `kernelindex
    ingest runs` reads it back into an empty database.
    Its numbers are the stored ones, exactly, and none is derived: numbers-v1 has nothing to round
    here, and rounding a stored figure would make a re-import differ from the record it came from."""
    export = CachedExport(request, "catalog.jsonl", "application/x-ndjson; charset=utf-8")
    if (cached := await export.hit()) is not None:  # before the statement, as in runs_csv
        return cached
    try:
        filters = filters_from_query(request, frozenset({"revisions"}))
        statement = _statement(request, filters)
        which = request.query_params.get("revisions", "current")
        if which not in REVISION_CHOICES:
            raise FilterError(f"revisions must be {' or '.join(REVISION_CHOICES)}, got {which!r}")
    except FilterError as exc:
        return JSONResponse({"error": str(exc)}, status_code=400)
    if not filters.include_superseded:
        statement = statement.where(Run.retracted_at.is_(None))
    revisions_statement = _revisions_statement(filters, statement, everything=which == "all")
    if (unavailable := await database_unavailable(request)) is not None:
        return unavailable
    session = _session(request)
    if (refused := await unknown_names(session, filters)) is not None:
        return refused

    async def lines() -> AsyncIterator[str]:
        for h in (await session.scalars(select(Hardware).order_by(Hardware.id))).all():
            yield json.dumps(hardware_line(h), sort_keys=True) + "\n"
        snapshots_of: dict[int, list[SuiteSnapshot]] = {}
        for revision_id, snapshot in await session.execute(
            select(SuiteSnapshotMember.workload_revision_id, SuiteSnapshot)
            .join(SuiteSnapshot, SuiteSnapshot.id == SuiteSnapshotMember.snapshot_id)
            .where(SuiteSnapshotMember.workload_revision_id.in_(
                revisions_statement.with_only_columns(WorkloadRevision.id, maintain_column_froms=True).order_by(None)),
                # A retracted snapshot decides nothing (kernelindex snapshot retract): a re-import must not revive it.
                SuiteSnapshot.retracted_at.is_(None))
            .order_by(SuiteSnapshot.id)
        ):
            snapshots_of.setdefault(revision_id, []).append(snapshot)
        revisions = await session.execute(revisions_statement)
        for w, rev in revisions:
            yield json.dumps(workload_line(w, rev, snapshots_of.get(rev.id, ())), sort_keys=True) + "\n"
        chunk: list[str] = []
        result = await session.stream(statement)
        async for run, impl, env, hw, protocol, snapshot, source, slug, sha in result:
            chunk.append(json.dumps(run_record(run, impl, env, hw, protocol, snapshot, source, slug, sha), sort_keys=True) + "\n")
            if len(chunk) >= BATCH:
                yield "".join(chunk)
                chunk = []
        yield "".join(chunk)

    return export.stream(lines())
