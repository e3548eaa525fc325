"""The Starlette application: /graphql (with GraphiQL outside production), /mcp (the MCP server over streamable
HTTP), /healthz, JSON twins, exports, the policy."""

from __future__ import annotations

import contextlib
import json
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import orjson
from cross_web import HTTPException
from graphql import validate
from starlette.applications import Starlette
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.http import GraphQLRequestData
from strawberry.http.async_base_view import AsyncHTTPRequestAdapter
from strawberry.http.parse_content_type import parse_content_type
from strawberry.schema import BaseSchema
from strawberry.schema.exceptions import InvalidOperationTypeError
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL
from strawberry.types import ExecutionResult

from kernelindex.db.changes import DataVersionReader, Dependencies
from kernelindex.db.embedded import resolve_database_url
from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.db.notifications import Notifications
from kernelindex.gc_tuning import tune_gc
from kernelindex.graphql.context import Context
from kernelindex.graphql.errors import HTTP_CODES, code_of, reported, response_status
from kernelindex.graphql.plan import PLAN_CACHE_SIZE, execute_ready
from kernelindex.graphql.request_state import request_state
from kernelindex.graphql.schema import build_schema
from kernelindex.mcp.gateway import Gateway
from kernelindex.mcp.server import GatewaySlot, build_server, http_endpoint, serving
from kernelindex.mcp.tools import http_authorization
from kernelindex.services.read_model import METRICS as READ_MODEL_METRICS
from kernelindex.services.read_model import ReadModel
from kernelindex.settings import Settings, get_settings
from kernelindex.web.exports import BoundedExport, catalog_jsonl, runs_csv
from kernelindex.web.graphiql import ASSETS_PREFIX, GraphiQLPage
from kernelindex.web.health import HealthCheck
from kernelindex.web.http import (
    CONTENT_TYPES,
    GRAPHQL_RESPONSE_JSON,
    JSON,
    BodySizeLimitMiddleware,
    RequestIdMiddleware,
    TimeoutMiddleware,
    graphql_media_type,
)
from kernelindex.web.middleware import DatabaseSessionMiddleware
from kernelindex.web.persisted import (
    NO_STORE,
    CacheableGetMiddleware,
    PersistedQueries,
    PersistedQueryError,
    PersistedQueryRefusal,
    persisted_queries,
)
from kernelindex.web.response_cache import METRICS as CACHE_METRICS
from kernelindex.web.response_cache import (
    CachedOperations,
    ResponseCache,
    cache_key,
    is_query,
    prometheus_text,
    response_dependencies,
    root_fields,
)
from kernelindex.web.runs_parquet import runs_parquet
from kernelindex.web.state import AppState, Clock, ExportSlots, ServerState, WebSocketSlots, server_state
from kernelindex.web.subscriptions import METRICS as SUBSCRIPTION_METRICS
from kernelindex.web.subscriptions import SubscriptionHandler, connection_context, refuse_websocket
from kernelindex.web.subscriptions import metrics as subscription_metrics
from kernelindex.web.twins import TwinError, twin_key, workload_twin

log = logging.getLogger("kernelindex.web")

POLICY_PATH = Path(__file__).resolve().parent.parent.parent / "docs" / "how-records-are-decided.md"

def utc_now() -> datetime:
    return datetime.now(UTC)


# The response header that says whether a cacheable response came from the response cache (hit) or
# was executed for this request (miss).
X_CACHE = "X-Cache"


class EncodedResponse(str):
    """A GraphQL response already encoded as JSON (from the response cache): sent as it is."""


def encode_response(data: object) -> str:
    """A GraphQL response as JSON, written by orjson (issue 27: after planned execution, the standard
    library's encoder was the next cost of a page): compact, UTF-8 as it is. What orjson refuses (an
    integer beyond 64 bits) is written by the standard library, as before. Text, not bytes: the view
    sends the same encoding as a websocket message, which strawberry sends as a binary frame when
    given bytes, and graphql-transport-ws speaks in text frames only (a client waiting for its
    connection_ack saw none)."""
    try:
        return orjson.dumps(data).decode()
    except TypeError:  # orjson.JSONEncodeError
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


class _CachedResult(ExecutionResult):
    """An execution result whose response is already encoded."""

    def __init__(self, body: EncodedResponse):
        super().__init__(data={}, errors=None)
        self.body = body


# Request bodies are decoded in C (msgspec: a 1,000-record submitRuns body in a third of json.loads'
# time), to the same values json.loads gives (big integers included); whatever msgspec refuses (NaN and
# ±Infinity, which json.loads accepts, a number beyond a double, a lone surrogate, bad syntax, nesting
# too deep) is decoded by json.loads as before, with its values and its error messages.
_BODY_DECODER = msgspec.json.Decoder()
_DIGITS_ONLY = bytes(48 if 48 <= i <= 57 else 32 for i in range(256))  # digits → "0", all else → " "
_LONG_NUMBER = b"0" * 19  # the shortest integer that may not fit in 64 bits
# The body decode_json last found plain (strictly_plain_body), in the request's own task: cleared as
# parse_http_body starts, read and cleared by execute_single (into RequestState.plain_variables).
_PLAIN_BODY: ContextVar[object | None] = ContextVar("kernelindex_plain_body", default=None)


def strictly_plain_body(raw: bytes) -> bool:
    """Whether a body msgspec decoded holds only values PostgreSQL stores, whatever they are: msgspec
    refused NaN, ±Infinity and numbers beyond a double already; with no escape (`\\u`) no text can
    hold NUL or a lone surrogate (raw ones are not UTF-8, which msgspec refuses), and with no run of
    19 digits no integer can be past 64 bits. What submitRuns would otherwise find by walking every
    record (kernelindex.ingest.records.check_run's values_checked)."""
    return b"\\u" not in raw and _LONG_NUMBER not in raw.translate(_DIGITS_ONLY)


IDE_OFF_MESSAGE = "GraphiQL is not served here: POST a query to /graphql, or GET /graphql?query=…"
NOT_ACCEPTABLE_MESSAGE = (f"GraphQL answers in {GRAPHQL_RESPONSE_JSON} or {JSON}: the request's Accept header "
                          "allows neither")
UNSUPPORTED_MEDIA_MESSAGE = f"POST a GraphQL request as JSON, with Content-Type: {JSON}"


def http_error_body(status: int, message: str, request_id: str, media: str = JSON) -> bytes:
    """A request refused before execution, as a GraphQL response, so that a GraphQL client reads it
    like any other error; with application/graphql-response+json it has no `data` (nothing ran)."""
    code = HTTP_CODES.get(status, f"HTTP_{status}")
    errors = [{"message": message, "extensions": {"code": code, "request_id": request_id}}]
    return json.dumps({"errors": errors} if media == GRAPHQL_RESPONSE_JSON else {"data": None, "errors": errors}).encode()


@dataclass(frozen=True, slots=True)
class _Ready:
    """A document whose operation, sent without variables or extensions, the view answered by its plan
    without errors: every check before execution (tokens, parse, one operation, validation, text inputs,
    cost) passed, and decides the same again for the same text, operation name and no variables."""

    document: Any              # its parsed DocumentNode
    extensions: dict[str, Any] | None  # its result's `extensions` (the cost QueryCost measured)


class KernelIndexGraphQL(GraphQL[Context, None]):
    """Strawberry's ASGI view, with the response cache in front of query execution, request bodies
    decoded defensively, refusals as JSON, and both media types of GraphQL over HTTP.

    The media type comes from the Accept header (kernelindex.web.http.graphql_media_type). With
    application/json (also for `*/*` and no Accept header) every answer is as it always was: GraphQL
    errors with 200, an outage 503, a malformed request 400. With application/graphql-response+json
    the status follows the errors (kernelindex.graphql.errors.response_status): a request refused
    before execution (parse, validation, limits, a variable's value) is a 400 without `data`, an
    outage that left no data a 503, writes refused for their token 401 or 403, any other executed
    request a 200, field errors and all; a mutation over GET is a 405, a POST body that is not JSON a 415. An Accept
    header that allows neither type is a 406, except a browser's GET (text/html), which is answered
    in JSON as before (or with GraphiQL's page, where it is served).
    """

    # Subscriptions: graphql-transport-ws only (kernelindex.web.subscriptions), not the legacy graphql-ws.
    graphql_transport_ws_handler_class = SubscriptionHandler

    def __init__(self, schema: BaseSchema, *, graphiql: GraphiQLPage | None = None,
                 persisted: PersistedQueries | None = None, websockets: WebSocketSlots | None = None, **options: Any):
        # The IDE is ours (kernelindex.web.graphiql: assets served here), not strawberry's page of CDN scripts.
        super().__init__(schema, graphql_ide="graphiql" if graphiql is not None else None,
                         subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL,), **options)
        self.graphiql = graphiql
        # APQ and the allow-list (kernelindex.web.persisted); None: requests run as they come.
        self.persisted = persisted
        # The process's websockets and their limit; None: no limit.
        self.websockets = websockets
        # Documents kept ready (see _ready_response), by (query, operation name); least recently used dropped.
        self._ready: OrderedDict[tuple[str, str | None], _Ready] = OrderedDict()

    def should_render_graphql_ide(self, request: Any) -> bool:
        # A persisted query over GET names no `query`: it is a request, not a browser opening the IDE.
        return "extensions" not in request.query_params and super().should_render_graphql_ide(request)

    async def render_graphql_ide(self, request: Request) -> Response:
        assert self.graphiql is not None  # strawberry asks for the IDE only when graphql_ide is set
        return await self.graphiql.page(request)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket" and self.websockets is not None:
            if not self.websockets.take():
                await refuse_websocket(scope, receive, send, self.websockets.limit)
                return
            try:
                await super().__call__(scope, receive, send)
            finally:
                self.websockets.give_back()
            return
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        request = Request(scope=scope, receive=receive)
        state = request_state(scope)
        request_id = state.request_id
        accept = request.headers.get("accept")
        media = graphql_media_type(accept)
        if media is None:
            if request.method != "GET" or "text/html" not in (accept or ""):
                await Response(http_error_body(406, NOT_ACCEPTABLE_MESSAGE, request_id), status_code=406,
                               media_type=JSON)(scope, receive, send)
                return
            media = JSON  # a browser's address bar: the page, or JSON it shows
        state.media_type = media
        try:
            response = await self._ready_response(request) if self._ready and request.method == "POST" else None
            if response is None:
                response = await self.run(request)
        except HTTPException as exc:
            # Strawberry answers these in plain text; a client of a JSON API gets JSON.
            status, headers = exc.status_code, None
            if media == GRAPHQL_RESPONSE_JSON and isinstance(exc.__cause__, InvalidOperationTypeError):
                status, headers = 405, {"allow": "POST"}  # a mutation over GET (the spec's MUST)
            message = IDE_OFF_MESSAGE if status == 404 and self.graphql_ide is None else exc.reason
            response = Response(http_error_body(status, message, request_id, media), status_code=status,
                                headers=headers, media_type=CONTENT_TYPES[media])
        else:
            if state.status is not None:  # a GraphQL response for application/graphql-response+json
                response.status_code = state.status
                response.headers["content-type"] = CONTENT_TYPES[GRAPHQL_RESPONSE_JSON]
        if request.method == "GET" and (response.status_code != 200 or state.no_store):
            # Errors, and answers that read a fleet job, are kept by no cache (CacheableGetMiddleware).
            response.headers["cache-control"] = NO_STORE
        await response(scope, receive, send)

    async def _ready_response(self, request: Request) -> Response | None:
        """The response to a POST of a document kept ready (_keep_ready), or None: strawberry's view
        answers it. Such a request goes through what every request goes through here (_single: persisted
        queries, the response cache and its key, no-store), and is executed by
        kernelindex.graphql.plan.execute_ready: the plan run with the session's connection and the error
        policy as strawberry's execution runs them, without strawberry's request parsing and the eleven
        extensions' hooks around parse, validation and execution (their checks passed for this very
        document, operation name and no variables, and decide the same again). Anything else (another
        content type, a stream's Accept, a body that is not plain JSON, variables, extensions, another
        document) is strawberry's, as before."""
        headers = request.headers
        content_type, _ = parse_content_type(headers.get("content-type") or "")
        if "application/json" not in content_type or self._get_stream_transport_from_headers(headers) is not None:
            return None
        try:
            data = _BODY_DECODER.decode(await request.body())  # strawberry reads the same body again if need be
        except (ValueError, RecursionError):
            return None
        if type(data) is not dict:
            return None
        query, operation_name, variables = data.get("query"), data.get("operationName"), data.get("variables")
        if (type(query) is not str or (operation_name is not None and type(operation_name) is not str)
                or (variables is not None and variables != {}) or data.get("extensions") is not None):
            return None
        key = (query, operation_name)
        ready = self._ready.get(key)
        if ready is None:
            return None
        self._ready.move_to_end(key)
        sub_response = await self.get_sub_response(request)
        context = await self.get_context(request, sub_response)

        async def execute(data: GraphQLRequestData) -> ExecutionResult:
            if data.query == query and data.operation_name == operation_name and not data.variables and not data.extensions:
                result = await execute_ready(self.schema, ready.document, query, operation_name, data.variables, context,
                                             ready.extensions)
                if result is not None:
                    return result
            return await super(KernelIndexGraphQL, self).execute_single(
                request, self.request_adapter_class(request), sub_response, context, None, data)

        request_data = GraphQLRequestData(query=query, variables=variables, operation_name=operation_name, extensions=None)
        result = await self._single(request, "POST", sub_response, context, request_data, execute)
        # The end of strawberry's view (AsyncBaseHTTPView.run) for one result.
        response_data = await self.process_result(request, result)
        if result.errors:
            self._handle_errors(result.errors, response_data)
        return self.create_response(response_data=response_data, sub_response=sub_response)

    def _keep_ready(self, request_data: GraphQLRequestData, document: Any, result: ExecutionResult) -> None:
        """A document answered by its plan without errors, sent without variables or extensions: kept
        ready for the next POST of the same text and operation name (bounded, as the plans are)."""
        if request_data.query is None or not (request_data.operation_name is None or type(request_data.operation_name) is str):
            return
        key = (request_data.query, request_data.operation_name)
        if key not in self._ready:
            self._ready[key] = _Ready(document, getattr(result, "extensions", None))
            if len(self._ready) > PLAN_CACHE_SIZE:
                self._ready.popitem(last=False)

    async def parse_http_body(self, request: AsyncHTTPRequestAdapter) -> Any:
        if request.method == "POST" and graphql_media_type(request.headers.get("accept")) == GRAPHQL_RESPONSE_JSON:
            content_type, _ = parse_content_type(request.content_type or "")
            if "application/json" not in content_type:  # strawberry's own test: a 400 for application/json clients
                raise HTTPException(415, UNSUPPORTED_MEDIA_MESSAGE)
        _PLAIN_BODY.set(None)  # decode_json says otherwise for this body (execute_single reads it)
        return await super().parse_http_body(request)

    def decode_json(self, data: str | bytes) -> object:
        """The request body (bytes) or a GET parameter (str) as JSON, or a 400 that says what is wrong:
        invalid UTF-8 and nesting too deep for the decoder are the client's fault, not a 500."""
        body = isinstance(data, bytes)  # strawberry passes the body as bytes, GET parameters as str
        try:
            value = _BODY_DECODER.decode(data)
        except (ValueError, RecursionError):  # msgspec.DecodeError; a lone surrogate in a str is a UnicodeEncodeError
            value = self._decode_json_stdlib(data)
        else:
            if body and isinstance(data, bytes) and strictly_plain_body(data):
                _PLAIN_BODY.set(value)
        # A body that is a bare number, string or null: strawberry would call .get() on it (a 500).
        # A parameter (`variables`) of the wrong type is strawberry's own 400.
        if body and not isinstance(value, (dict, list)):
            raise HTTPException(400, "the request body must be a JSON object with a `query`")
        return value

    @staticmethod
    def _decode_json_stdlib(data: str | bytes) -> object:
        """What msgspec refused, as json.loads reads it, or a 400 that says what is wrong."""
        if isinstance(data, bytes):
            try:
                data = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise HTTPException(400, f"the request body is not valid UTF-8 (byte {exc.start})") from None
        try:
            value = json.loads(data)
        except RecursionError:
            raise HTTPException(400, "the request's JSON is nested too deeply") from None
        except json.JSONDecodeError as exc:
            where = f"line {exc.lineno} column {exc.colno}"
            raise HTTPException(400, f"the request's JSON is invalid: {exc.msg} at {where}") from None
        return value

    async def execute_single(
        self, request: Request, request_adapter: AsyncHTTPRequestAdapter, sub_response: Response, context: Context,
        root_value: None, request_data: GraphQLRequestData,
    ) -> ExecutionResult:
        async def execute(data: GraphQLRequestData) -> ExecutionResult:  # strawberry's execution
            return await super(KernelIndexGraphQL, self).execute_single(
                request, request_adapter, sub_response, context, root_value, data)
        return await self._single(request, request_adapter.method, sub_response, context, request_data, execute)

    async def _single(
        self, request: Request, method: str, sub_response: Response, context: Context, request_data: GraphQLRequestData,
        execute: Callable[[GraphQLRequestData], Awaitable[ExecutionResult]],
    ) -> ExecutionResult:
        """One operation of a request, with everything around its execution in one place for both ways it is
        executed (strawberry's, and a document kept ready): the persisted queries, the response cache and
        its key, what may not be stored."""
        resolved = None
        state = context.state
        plain = _PLAIN_BODY.get()
        if plain is not None:
            _PLAIN_BODY.set(None)
            if isinstance(plain, dict) and request_data.variables is not None and request_data.variables is plain.get("variables"):
                state.plain_variables = request_data.variables  # the body's own variables (not a batch's)
        if self.persisted is not None:
            try:
                resolved = self.persisted.resolve(request_data)
            except PersistedQueryError as exc:  # refused before anything ran
                state.no_store = True
                state.read_only = True
                return PersistedQueryRefusal(exc)
            request_data = resolved.request
        result = await self._execute_or_cached(request, method, sub_response, context, request_data, execute)
        if resolved is not None and self.persisted is not None:
            self.persisted.ran(resolved, result)  # a document sent with its hash is stored once it has run
        if state.planned is not None and not result.errors and not request_data.variables and not request_data.extensions:
            self._keep_ready(request_data, state.planned, result)
        if result.errors or state.reads.volatile:
            state.no_store = True
        # A query (or its cached answer) left `state.read_only` set (kernelindex.graphql.session, and
        # _execute_or_cached for a cached answer): the session middleware rolls back instead of committing.
        return result

    async def _execute_or_cached(
        self, request: Request, method: str, sub_response: Response, context: Context, request_data: GraphQLRequestData,
        execute: Callable[[GraphQLRequestData], Awaitable[ExecutionResult]],
    ) -> ExecutionResult:
        server = server_state(request)
        cache = server.response_cache
        state = context.state
        key = None
        version = None
        if cache.enabled and method in ("GET", "POST"):
            key = cache_key(request_data.query, request_data.operation_name, request_data.variables)
        state.cache_key = key
        if key is not None:
            version = await server.data_version.current()
            sub_response.headers[X_CACHE] = "miss"
        elif server.read_model.enabled and is_query(request_data.query, request_data.operation_name):
            # No cached answer to look for, but the read model's values are kept per version too: read
            # when a loader first needs it (a `runs` query never does). Never for a mutation: what it
            # reads after its own writes must show them (the versions move at commit).
            state.read_data_version_with(server.data_version.current)
        # The response cache's version, read before any statement of the request: what the loaders
        # compute is at this version or newer (None: read by the first loader that needs it, or never).
        state.data_version = version
        if key is None or version is None:
            return await execute(request_data)

        async def compute() -> tuple[EncodedResponse | None, Dependencies, ExecutionResult]:
            result = await execute(request_data)
            reads = state.reads
            deps = response_dependencies(root_fields(key.query, key.operation_name), reads.workloads, reads.unscoped)
            if result.errors or result.data is None or reads.volatile:
                return None, deps, result
            processed = await super(KernelIndexGraphQL, self).process_result(request, result)
            return EncodedResponse(self.encode_json_string(processed)), deps, result

        answer = await cache.get_or_compute(key, version, context.now, compute)
        if answer.body is None or not answer.hit:
            assert isinstance(answer.result, ExecutionResult)  # this request's own execution
            return answer.result
        sub_response.headers[X_CACHE] = "hit"
        state.read_only = True  # only queries are cached; set here too, for answers that skipped execution
        return _CachedResult(EncodedResponse(answer.body))

    async def process_result(self, request: Request, result: ExecutionResult) -> Any:
        state = request_state(request)
        graphql_response = state.media_type == GRAPHQL_RESPONSE_JSON
        if isinstance(result, _CachedResult):
            if graphql_response:
                state.status = 200  # only answers without errors are cached
            return result.body
        if isinstance(result, PersistedQueryRefusal):
            # Refused before execution (kernelindex.web.persisted), with the status its code calls for.
            errors = [result.error.formatted]
            if graphql_response:
                state.status = result.error.status
                return {"errors": errors}
            return {"data": None, "errors": errors}
        if result.errors and not all(code_of(e) for e in result.errors):
            # Errors ErrorPolicy never saw: strawberry reports an exception raised by an extension
            # after the operation has ended. They get their code here, and are masked like the rest.
            server = server_state(request)
            result.errors = [e if code_of(e) else reported(e, production=server.settings.is_production,
                                                            request_id=state.request_id) for e in result.errors]
        processed = await super().process_result(request, result)
        if graphql_response:
            status, executed = response_status(processed)
            if not executed:
                processed.pop("data", None)  # a request error: the GraphQL response has no data entry
            state.status = status
        return processed

    def encode_json(self, data: object) -> str | bytes:
        if isinstance(data, EncodedResponse):
            return data
        if isinstance(data, list) and any(isinstance(item, EncodedResponse) for item in data):
            return "[" + ",".join(self.encode_json_string(item) for item in data) + "]"
        return encode_response(data)

    async def get_context(self, request: Request | WebSocket, response: Response | WebSocket) -> Context:
        if isinstance(request, WebSocket):
            # Each subscription gets a context of its own from this one (kernelindex.web.subscriptions).
            return connection_context(request)
        assert isinstance(response, Response)
        server = server_state(request)
        state = request_state(request)
        assert state.session is not None  # DatabaseSessionMiddleware gave /graphql its session
        return Context(
            session=state.session,
            now=server.clock(),
            settings=server.settings,
            state=state,
            request=request,
            response=response,
            read_model=server.read_model,
        )


async def healthz(request: Request) -> Response:
    problem = await server_state(request).health.problem()
    if problem is not None:
        return JSONResponse({"status": "unavailable", "database": f"unreachable: {problem}"}, status_code=503)
    return JSONResponse({"status": "ok", "database": "reachable"})


async def workload_json(request: Request) -> Response:
    slug = request.path_params["slug"]
    server = server_state(request)
    cache = server.response_cache
    key = twin_key(slug) if cache.enabled else None
    request_state(request).cache_key = key
    version = await server.data_version.current() if key is not None or server.read_model.enabled else None

    async def compute() -> tuple[str | None, Dependencies, None]:
        payload, deps = await workload_twin(request, slug, version)
        if payload is None:
            return None, deps, None
        return json.dumps(payload, ensure_ascii=False, allow_nan=False, separators=(",", ":")), deps, None

    try:
        if key is None or version is None:
            body, _, _ = await compute()
            hit = False
        else:
            answer = await cache.get_or_compute(key, version, server.clock(), compute)
            body, hit = answer.body, answer.hit
    except TwinError as exc:
        return JSONResponse({"error": exc.message, "request_id": request_state(request).request_id}, status_code=exc.status)
    headers = {X_CACHE: "hit" if hit else "miss"} if key is not None else None
    if body is None:
        return JSONResponse({"error": f"no workload with slug {slug!r}"}, status_code=404, headers=headers)
    return Response(body, media_type="application/json", headers=headers)


async def metrics(request: Request) -> Response:
    """The response cache's, the read model's and the subscriptions' figures for this worker, in the Prometheus
    text format."""
    server = server_state(request)
    text = (prometheus_text("response_cache", server.response_cache.metrics(), CACHE_METRICS)
            + prometheus_text("read_model", server.read_model.metrics(), READ_MODEL_METRICS)
            + prometheus_text("subscriptions", subscription_metrics(server.websockets, server.notifications),
                              SUBSCRIPTION_METRICS))
    return PlainTextResponse(text, media_type="text/plain; version=0.0.4; charset=utf-8")


async def policy(request: Request) -> Response:
    return PlainTextResponse(POLICY_PATH.read_text(), media_type="text/markdown; charset=utf-8")


# PostgreSQL's own limits on the request pool's connections sit this far past the request timeout:
# the server answers 504 first (and discards the connection, kernelindex.web.middleware), and the
# database then ends the statement or transaction that request left behind instead of running it on.
STATEMENT_TIMEOUT_MARGIN_S = 1.0


def request_statement_limit_s(settings: Settings) -> float | None:
    """statement_timeout and idle_in_transaction_session_timeout for the request pool (none without a
    request timeout)."""
    return settings.request_timeout_s + STATEMENT_TIMEOUT_MARGIN_S if settings.request_timeout_s > 0 else None


def create_app(
    settings: Settings | None = None, *, database_url: str | None = None, clock: Clock | None = None
) -> Starlette:
    settings = settings or get_settings()
    schema = build_schema(settings)
    # The MCP server's tools run their operations on this schema, with the pool, read model and response
    # cache the lifespan makes (kernelindex.mcp.gateway): /mcp and /graphql answer alike.
    mcp_gateway = GatewaySlot()
    mcp_server = build_server(mcp_gateway, http_authorization, schema._schema)
    mcp_app = http_endpoint(mcp_server, settings.max_body_bytes)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        url = database_url if database_url is not None else resolve_database_url(settings)
        limit_s = request_statement_limit_s(settings)
        engine = make_engine(url, pool_size=settings.db_pool_size, max_overflow=settings.db_max_overflow,
                             statement_timeout_s=limit_s, idle_in_transaction_timeout_s=limit_s, generic_plans=True)
        export_engine = make_engine(
            url, pool_size=max(1, settings.export_concurrency), max_overflow=0,
            statement_timeout_s=settings.export_timeout_s,
            idle_in_transaction_timeout_s=settings.export_idle_timeout_s + STATEMENT_TIMEOUT_MARGIN_S,
        )
        response_cache = ResponseCache(
            settings.response_cache_entries, settings.response_cache_bytes, settings.response_cache_ttl_s
        )
        read_model = ReadModel(settings.read_model_workloads)
        server = ServerState(
            settings=settings, schema=schema, clock=clock or utc_now, engine=engine, sessionmaker=make_sessionmaker(engine),
            # Each version read hands both caches what changed, before any request sees that version.
            data_version=DataVersionReader(url, listeners=[response_cache.advance, read_model.advance]),
            response_cache=response_cache, read_model=read_model,
            export_engine=export_engine, export_sessionmaker=make_sessionmaker(export_engine),
            export_slots=ExportSlots(settings.export_concurrency), health=HealthCheck(url),
            notifications=Notifications(url, queue_size=settings.subscription_queue_size), websockets=websockets,
        )
        server.notifications.start()
        app.state = AppState(server)
        mcp_gateway.gateway = Gateway(schema=schema, sessionmaker=server.sessionmaker, settings=settings,
                                      clock=server.clock, read_model=read_model,
                                      data_version=server.data_version.current,
                                      cache=CachedOperations(response_cache, server.data_version.current, server.clock))
        tune_gc()
        try:
            # The MCP session manager's task group runs the tool calls /mcp receives, for as long as we serve.
            async with serving(mcp_server):
                yield
        finally:
            await server.notifications.close()
            await server.data_version.close()
            await server.health.close()
            await engine.dispose()
            await export_engine.dispose()

    # No GraphiQL in production unless asked for (KERNELINDEX_GRAPHIQL): a public server serves the API,
    # not an IDE that runs queries from whoever opens the page.
    graphiql = GraphiQLPage(show_reasons=not settings.is_production) if settings.graphiql_enabled else None
    # Registered operations are read and checked against the schema now: a bad file stops start-up.
    persisted = persisted_queries(settings, validate=lambda document: validate(schema._schema, document))
    websockets = WebSocketSlots(settings.max_websocket_connections)
    graphql_app = KernelIndexGraphQL(schema, graphiql=graphiql, persisted=persisted, allow_queries_via_get=True,
                                     websockets=websockets,
                                     max_subscriptions_per_connection=settings.max_subscriptions_per_connection,
                                     # A browser's websocket from another origin: only those CORS allows for HTTP.
                                     allowed_origins=settings.cors_allowed_origins)
    app = Starlette(
        routes=[
            Route("/healthz", healthz),
            Route("/metrics", metrics),
            Route("/workloads/{slug}.json", workload_json),
            Route("/policy", policy),
            Route("/exports/runs.csv", BoundedExport(runs_csv)),
            Route("/exports/runs.parquet", BoundedExport(runs_parquet)),
            Route("/exports/catalog.jsonl", BoundedExport(catalog_jsonl)),
            Route("/graphql", graphql_app, methods=["GET", "POST"]),
            WebSocketRoute("/graphql", graphql_app),
            Route("/mcp", mcp_app, methods=["GET", "POST", "DELETE"]),
            *(graphiql.routes() if graphiql is not None else []),
        ],
        lifespan=lifespan,
    )
    # Outermost last: request id → body limit → timeout → CORS → ETag → database session → routes.
    # /mcp's tool calls open their own sessions (kernelindex.mcp.gateway): they run in the MCP session
    # manager's tasks, not in the request's.
    app.add_middleware(DatabaseSessionMiddleware, exempt_prefixes=("/exports/", "/healthz", "/mcp"))
    # GraphiQL's assets carry their own year-long caching (their URLs name their digest): no ETag pass over MBs.
    # MCP answers are JSON-RPC over POST, never a cacheable GET.
    app.add_middleware(CacheableGetMiddleware, max_age_s=settings.cache_max_age_s,
                       exempt_prefixes=("/exports/", "/healthz", "/mcp", ASSETS_PREFIX))
    app.add_middleware(
        CORSMiddleware,
        allow_origins=settings.cors_allowed_origins,
        allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
        allow_headers=["content-type", "authorization", "if-none-match", "x-request-id", "mcp-protocol-version",
                       "mcp-session-id"],
        expose_headers=["etag", "x-request-id", "x-cache", "mcp-session-id"],
        max_age=600,
    )
    if settings.request_timeout_s > 0:
        app.add_middleware(TimeoutMiddleware, timeout_s=settings.request_timeout_s)
    app.add_middleware(BodySizeLimitMiddleware, max_bytes=settings.max_body_bytes)
    app.add_middleware(RequestIdMiddleware)
    return app


def create_default_app() -> Starlette:
    """uvicorn factory target: kernelindex.web.app:create_default_app."""
    return create_app()
