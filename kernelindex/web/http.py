"""HTTP protections and caching: request ids, body size limit, per-request timeout, ETag/304, and the
media type a GraphQL response is sent in."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import secrets

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kernelindex.graphql.errors import HTTP_CODES
from kernelindex.graphql.request_state import request_state

log = logging.getLogger("kernelindex.web")

GRAPHQL_PATH = "/graphql"
# The two media types of a GraphQL response (GraphQL over HTTP): application/json, the legacy one,
# answers GraphQL errors with 200; application/graphql-response+json with the status they call for.
JSON = "application/json"
GRAPHQL_RESPONSE_JSON = "application/graphql-response+json"
CONTENT_TYPES = {JSON: "application/json", GRAPHQL_RESPONSE_JSON: "application/graphql-response+json; charset=utf-8"}
_WILDCARDS = ("*/*", "application/*")


def graphql_media_type(accept: str | None) -> str | None:
    """The media type to answer a GraphQL request in, by its Accept header: the one with the highest
    q, a named type before a wildcard and then the first listed; `*/*` and `application/*` mean
    application/json, as does no Accept header at all (the spec's default for clients that predate
    it; every such client reads JSON). None when the header accepts neither (406)."""
    if accept is None or not accept.strip():
        return JSON
    best: tuple[float, bool] | None = None
    chosen = None
    for part in accept.split(","):
        name, *params = part.split(";")
        name = name.strip().lower()
        if name == GRAPHQL_RESPONSE_JSON or name == JSON:
            offered, named = name, True
        elif name in _WILDCARDS:
            offered, named = JSON, False
        else:
            continue
        q = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = min(float(value.strip()), 1.0)
                except ValueError:
                    q = 0.0
        if not q > 0:  # q=0 (or nonsense) refuses the type
            continue
        if best is None or (q, named) > best:
            best, chosen = (q, named), offered
    return chosen


def wants_graphql_response(scope: Scope) -> bool:
    """A request to /graphql whose Accept header prefers application/graphql-response+json."""
    return scope["path"] == GRAPHQL_PATH and graphql_media_type(Headers(scope=scope).get("accept")) == GRAPHQL_RESPONSE_JSON


def refusal_payload(scope: Scope, status: int, message: str, request_id: str) -> dict:
    """The body of a request this module refuses: {error, request_id}, and on /graphql the same as a
    GraphQL error with its code; a client of application/graphql-response+json gets only the GraphQL
    response (no other top-level keys, no `data`: nothing was executed)."""
    error = {"message": message, "extensions": {"code": HTTP_CODES.get(status, f"HTTP_{status}"), "request_id": request_id}}
    if wants_graphql_response(scope):
        return {"errors": [error]}
    payload: dict = {"error": message, "request_id": request_id}
    if scope["path"] == GRAPHQL_PATH:  # and in the shape a GraphQL client reads
        payload["errors"] = [error]
    return payload


def _json_response(status: int, payload: dict, request_id: str, scope: Scope | None = None) -> list[Message]:
    body = json.dumps(payload).encode()
    media = GRAPHQL_RESPONSE_JSON if scope is not None and wants_graphql_response(scope) else JSON
    return [
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", CONTENT_TYPES[media].encode()), (b"content-length", str(len(body)).encode()),
                        (b"x-request-id", request_id.encode())],
        },
        {"type": "http.response.body", "body": body},
    ]


def new_request_id() -> str:
    """16 hex digits of randomness: unique enough to find one request in the logs."""
    return secrets.token_hex(8)


class RequestIdMiddleware:
    """Every request gets its state (kernelindex.graphql.request_state) with an id (or keeps a sane one it
    brought); every response says the id."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = Headers(scope=scope).get("x-request-id", "")
        request_id = incoming if 8 <= len(incoming) <= 64 and incoming.replace("-", "").isalnum() else new_request_id()
        # The request's one state (kernelindex.graphql.request_state), made here, outermost, for the rest to fill.
        request_state(scope).request_id = request_id

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)["x-request-id"] = request_id
            await send(message)

        await self.app(scope, receive, send_with_id)


class BodySizeLimitMiddleware:
    """Refuse request bodies over the limit with 413, before the application reads them whole."""

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = request_state(scope).request_id
        declared = Headers(scope=scope).get("content-length")
        refusal = f"request body over the limit of {self.max_bytes} bytes"
        too_big = refusal_payload(scope, 413, refusal, request_id)
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            for message in _json_response(413, too_big, request_id, scope):
                await send(message)
            return
        received = 0

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _BodyTooLarge()
            return message

        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except _BodyTooLarge:
            if not started:
                for message in _json_response(413, too_big, request_id, scope):
                    await send(message)


class _BodyTooLarge(Exception):
    pass


class TimeoutMiddleware:
    """A request that has not started its response within the limit gets 504.

    The limit is a timer on the request's own task, not a second task per request: that cost a
    task, a shield and a wait_for on every request, a fifth of what a cached answer costs."""

    def __init__(self, app: ASGIApp, timeout_s: float, exempt_prefixes: tuple[str, ...] = ("/exports/",)):
        self.app = app
        self.timeout_s = timeout_s
        self.exempt_prefixes = exempt_prefixes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(self.exempt_prefixes):
            await self.app(scope, receive, send)
            return
        task = asyncio.current_task()
        assert task is not None  # ASGI servers run each request in a task
        cancelling = task.cancelling()
        started = expired = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        def expire() -> None:
            nonlocal expired
            if not started:  # a response on its way is let finish
                expired = True
                task.cancel()

        timer = asyncio.get_running_loop().call_later(self.timeout_s, expire)
        try:
            await self.app(scope, receive, tracking_send)
        except asyncio.CancelledError:
            # Ours only if no one else cancelled the task too (a client gone, a shutdown).
            if not expired or task.uncancel() > cancelling:
                raise
        else:
            if expired:  # the application swallowed the cancellation
                task.uncancel()
        finally:
            timer.cancel()
        if expired and not started:
            request_id = request_state(scope).request_id
            log.warning("request %s timed out after %ss: %s", request_id, self.timeout_s, scope["path"])
            payload = refusal_payload(scope, 504, f"the request took longer than {self.timeout_s:g} s", request_id)
            for message in _json_response(504, payload, request_id, scope):
                await send(message)


class ConditionalGetMiddleware:
    """ETag and Cache-Control on successful GET responses, and 304 for a matching If-None-Match."""

    def __init__(self, app: ASGIApp, max_age_s: int = 30, exempt_prefixes: tuple[str, ...] = ("/exports/", "/healthz")):
        self.app = app
        self.max_age_s = max_age_s
        self.exempt_prefixes = exempt_prefixes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD") or scope["path"].startswith(self.exempt_prefixes):
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        chunks: list[bytes] = []

        async def buffering_send(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            if message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                if message.get("more_body"):
                    return
                assert start is not None  # ASGI sends the response start before any body
                await self._finish(scope, start, b"".join(chunks), send)
                return
            await send(message)

        await self.app(scope, receive, buffering_send)

    async def _finish(self, scope: Scope, start: Message, body: bytes, send: Send) -> None:
        headers = MutableHeaders(scope=start)
        if start["status"] != 200:
            await send(start)
            await send({"type": "http.response.body", "body": body})
            return
        # The media type is part of the representation: the same GraphQL answer as application/json and
        # as application/graphql-response+json are two (Vary: Accept), with two strong validators.
        digest = hashlib.sha256(body)
        digest.update(headers.get("content-type", "").encode())
        etag = '"' + digest.hexdigest()[:32] + '"'
        headers["etag"] = etag
        headers["cache-control"] = f"public, max-age={self.max_age_s}"
        headers.append("vary", "Accept, Origin")
        wanted = Headers(scope=scope).get("if-none-match", "")
        if etag in [t.strip().removeprefix("W/") for t in wanted.split(",")] or wanted.strip() == "*":
            not_modified = {"type": "http.response.start", "status": 304, "headers": []}
            out = MutableHeaders(scope=not_modified)
            for name in ("etag", "cache-control", "vary", "x-request-id"):
                if name in headers:
                    out[name] = headers[name]
            await send(not_modified)
            await send({"type": "http.response.body", "body": b""})
            return
        headers["content-length"] = str(len(body))
        await send(start)
        await send({"type": "http.response.body", "body": body})
