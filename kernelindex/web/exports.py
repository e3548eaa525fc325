"""Streamed exports: /exports/runs.csv and /exports/catalog.jsonl, filtered like the runs query."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any

from sqlalchemy import Select, and_, or_, select, text
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
        state = scope.setdefault("state", {})
        request_id = state.get("request_id", "")
        if not server.export_slots.take():
            body = json.dumps({"error": f"too many exports running (at most {settings.export_concurrency} at once); "
                                        f"retry in {RETRY_AFTER_S} s", "request_id": request_id}).encode()
            await send({"type": "http.response.start", "status": 503, "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                (b"retry-after", str(RETRY_AFTER_S).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        session = server.export_sessionmaker()
        state["session"] = session
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

# Rows fetched and written per chunk. Each chunk is CPU the event loop spends on one export without
# answering anyone else (the fetch between chunks is where others run): small enough that several
# exports at once keep /healthz and GraphQL prompt, large enough that a round trip per chunk is cheap.
BATCH = 100


@dataclass(frozen=True)
class ExportColumn:
    """One column of runs.csv: its name since runs.csv was first published (`names=csv`, the default,
    so existing readers keep working) and the path of the same value from `Run` in the GraphQL schema
    (`names=graphql`). This table is the one place both come from; tests/api/test_export_vocabulary.py
    checks every path against the schema and every value against the GraphQL answer. `enum`: the
    GraphQL enum of a fixed set; `names=graphql` writes its names (PASSED), the published columns the
    lower-case values they always had (passed)."""

    csv: str
    graphql: str
    enum: type[Enum] | None = None


RUN_COLUMNS = (
    ExportColumn("run_id", "databaseId"),
    ExportColumn("workload", "workloadSlug"),
    ExportColumn("workload_source_sha256", "revision.sha256"),
    ExportColumn("bindings", "configuration.bindings"),
    ExportColumn("dtype", "configuration.dtype"),
    ExportColumn("implementation", "implementation.slug"),
    ExportColumn("hardware_sku", "environment.hardware.sku"),
    ExportColumn("hardware_family", "environment.hardware.family"),
    ExportColumn("provider", "environment.provider"),
    ExportColumn("environment_fingerprint", "environment.fingerprint"),
    ExportColumn("protocol", "protocol.name"),
    ExportColumn("protocol_version", "protocol.version"),
    ExportColumn("status", "status", RunStatus),
    ExportColumn("failure_reason", "failureReason"),
    ExportColumn("mean_ms", "meanMs"),
    ExportColumn("std_ms", "stdMs"),
    ExportColumn("min_ms", "minMs"),
    ExportColumn("max_ms", "maxMs"),
    ExportColumn("median_ms", "medianMs"),
    ExportColumn("p5_ms", "p5Ms"),
    ExportColumn("p95_ms", "p95Ms"),
    ExportColumn("num_trials", "numTrials"),
    ExportColumn("ci95_half_width_ms", "ciHalfWidthMs"),
    ExportColumn("compile_time_ms", "compileTimeMs"),
    ExportColumn("observed_at", "observedAt"),
    ExportColumn("evidence", "evidence", Evidence),
    ExportColumn("source", "source.name"),
    ExportColumn("source_revision", "source.revision"),
    ExportColumn("licence", "implementation.licence"),
    ExportColumn("trust_label", "trustLabel"),
    ExportColumn("stale", "stale"),
    ExportColumn("superseded", "superseded"),
    ExportColumn("retracted", "retracted"),
    # Appended, not inserted, so that readers of the published columns by position keep working.
    ExportColumn("suite", "suite"),
    ExportColumn("level", "level"),
    ExportColumn("problem_number", "problemNumber"),
    ExportColumn("workload_name", "workloadName"),
    # The headline figure in its metric and unit (migration 0016), and the route it came through: a Liger
    # run states a median and no mean, a GPU MODE leaderboard run a score in seconds.
    ExportColumn("metric", "metric", Metric),
    ExportColumn("statistic", "protocol.statistic"),
    ExportColumn("figure", "figure"),
    ExportColumn("figure_unit", "figureUnit", FigureUnit),
    ExportColumn("figure_low", "figureLow"),
    ExportColumn("figure_high", "figureHigh"),
    ExportColumn("low_quantile", "lowQuantile"),
    ExportColumn("high_quantile", "highQuantile"),
    ExportColumn("source_speedup", "sourceSpeedup"),
    ExportColumn("source_route", "source.route"),
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
        await request.state.session.execute(text("SELECT 1"))
    except Exception as exc:
        if not is_unavailable(exc):
            raise
        log.warning("database unavailable (request %s): %s", request.state.request_id, exc)
        return JSONResponse({"error": UNAVAILABLE_MESSAGE, "request_id": request.state.request_id}, status_code=503)
    return None


async def runs_csv(request: Request) -> Response:
    # Looked up by the raw query string first: only a request whose filters were valid ever stored
    # an entry, and building the statement costs more than a cache hit.
    export = CachedExport(request, "runs.csv", "text/csv; charset=utf-8")
    if (cached := await export.hit()) is not None:
        return cached
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
    session = request.state.session
    if (refused := await unknown_names(session, filters)) is not None:
        return refused
    now = server_state(request).clock()
    graphql_names = names == "graphql"

    async def rows() -> AsyncIterator[str]:
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(GRAPHQL_COLUMNS if graphql_names else CSV_COLUMNS)
        result = await session.stream(statement)
        count = 0
        async for run, impl, env, hw, protocol, snapshot, source, slug, sha, suite, level, number, name in result:
            half = stats.ci95_half_width(run.std_ms, run.num_trials)
            bindings = ([{"axis": k, "value": int(v)} for k, v in sorted(run.bindings.items())] if graphql_names
                        else run.bindings)
            row = (run.id, slug, sha, json.dumps(bindings, sort_keys=True), run.dtype, impl.slug, hw.sku, hw.family,
                   env.provider or "", env.fingerprint, protocol.name, protocol.version, run.status, run.failure_reason or "",
                   run.mean_ms, run.std_ms, run.min_ms, run.max_ms, run.median_ms, run.p5_ms, run.p95_ms, run.num_trials,
                   half, run.compile_time_ms, run.observed_at.isoformat(), run.evidence, source.name,
                   snapshot.revision or "", impl.licence or "", trust.trust_label(run.evidence, implementation_facts(impl)),
                   trust.is_stale(run.observed_at, now), run.superseded_at is not None, run.retracted_at is not None,
                   suite, level, number, name, protocol.metric, protocol.statistic, run.figure, protocol.unit,
                   run.figure_low, run.figure_high, run.low_quantile, run.high_quantile, run.source_speedup,
                   snapshot.route or "")
            # Every number as GraphQL returns it (numbers-v1: 12 significant figures, no binary noise in
            # ci95_half_width_ms; a stored figure with fewer digits, every one a source states, unchanged).
            values = tuple(significant(v) if isinstance(v, float) else v for v in row)
            # GraphQL writes booleans as JSON does and enums by name; the published columns keep Python's
            # True/False and the lower-case values.
            writer.writerow(tuple(_graphql_value(c, v) for c, v in zip(RUN_COLUMNS, values, strict=True)) if graphql_names
                            else values)
            count += 1
            if count % BATCH == 0:
                yield buffer.getvalue()
                buffer.seek(0)
                buffer.truncate()
        yield buffer.getvalue()

    return export.stream(rows())


def _graphql_value(column: ExportColumn, value: object) -> object:
    if isinstance(value, bool):
        return "true" if value else "false"
    if column.enum is not None:
        return of_rules(column.enum, value).name
    return value


async def unknown_names(session: AsyncSession, filters: RunFilters) -> Response | None:
    """400 when a workload, implementation or hardware filter names nothing in the catalogue, with the
    close matches, in the words GraphQL uses (run_filters.check_names)."""
    try:
        await check_names(session, workload=filters.workload, implementation=filters.implementation,
                          hardware=filters.hardware)
    except FilterError as exc:
        return JSONResponse({"error": str(exc)}, status_code=400)
    return None


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
        turn = self.turn
        iterator = aiter(chunks)
        while True:
            async with turn:  # one export makes a chunk at a time (ExportSlots.turn)
                try:
                    chunk = await anext(iterator)
                except StopAsyncIteration:
                    break
            if kept is not None:
                size += len(chunk)
                kept = kept if size <= CACHEABLE_EXPORT_BYTES else None
                if kept is not None:
                    kept.append(chunk)
            yield chunk
            # A turn for everyone else after every chunk: a send into a socket with room, and rows the
            # driver already buffered, come back without ever yielding to the event loop, so an export
            # starting over a fast connection would otherwise hold it for many chunks at once.
            await asyncio.sleep(0)
        if kept is not None and self.key is not None and self.version is not None:
            self.cache.put(self.key, self.version, self.now, "".join(kept))


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
    for every one), then the runs: `kernelindex ingest runs` reads it back into an empty database.
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
    # Runs the run-record format states (kernelindex.run/1: a mean latency with its trials, or a failed
    # run): `kernelindex ingest runs` reads each back as it was. A source adapter's median, peak memory or
    # score, or a figure stated without a trial count, is in runs.csv and the API, not here.
    statement = statement.where(or_(Run.status == "failed", and_(Run.mean_ms.is_not(None), Run.num_trials.is_not(None),
                                                                Run.figure == Run.mean_ms)))
    revisions_statement = _revisions_statement(filters, statement, everything=which == "all")
    if (unavailable := await database_unavailable(request)) is not None:
        return unavailable
    session = request.state.session
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
