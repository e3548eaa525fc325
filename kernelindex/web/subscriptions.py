"""GraphQL subscriptions over the graphql-transport-ws websocket protocol on /graphql.

What this adds to strawberry's handler:

- subscriptions only: a query or mutation sent over the websocket is refused (its error says to POST it
  to /graphql), so that every write keeps the one transaction per HTTP request the rest of the server
  is built on;
- the same gate as a query over HTTP: a document the persisted-query allow-list refuses
  (KERNELINDEX_PERSISTED_ONLY, kernelindex.web.persisted) is refused here with the same code, a hash
  sent in the subscribe message's `extensions.persistedQuery` is resolved to its registered document,
  and the schema's limits (depth, aliases, tokens, cost) apply as they do to a query;
- each operation its own Context and database session (kernelindex.graphql.subscriptions releases the
  session's connection between events), and the Authorization the client gave in `connection_init`'s
  payload (`{"authorization": "Bearer …"}`; the handshake's own header otherwise) for any field that
  checks a token, as a query's header is;
- errors reported as a query's are (codes, masking in production), event by event.

Limits: at most `max_websocket_connections` websockets per server process (one more is accepted and
closed at once with 1013 "try again later", which graphql-ws clients retry with back-off), at most
`max_subscriptions_per_connection` operations on one websocket (strawberry's own refusal: "Subscription
limit reached"), and the per-subscription notification queue of kernelindex.db.notifications.

A client that does not read: uvicorn writes to a socket only while its buffer is under the high-water
mark (64 KiB), so a send to a client that stopped reading waits, and nothing piles up in this process
but that buffer; meanwhile the subscription holds no database connection (its session's connection
goes back to the pool before each message is sent: were a waiting send to hold one, a single client
with 20 subscriptions would take a process's whole pool). A message not taken within `subscription_send_timeout_s` ends the
connection: every operation on it stops and the websocket's slot is freed. No close frame can be
written to such a socket; uvicorn closes it once its buffer drains (the client reads again) or the
connection drops. A client that reads again in time finds its subscriptions ended by the notification
queue's bound (SUBSCRIPTION_OVERFLOW) if they fell that far behind.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import suppress
from typing import Any

from graphql import GraphQLError, GraphQLSyntaxError, OperationType, get_operation_ast, parse
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.http import GraphQLRequestData
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
    Operation,
    _OperationStreamClosed,
)
from strawberry.types import ExecutionResult
from strawberry.types.execution import PreExecutionError
from strawberry.utils.aio import aclosing

from kernelindex.db.notifications import Notifications
from kernelindex.graphql.context import Context
from kernelindex.graphql.errors import HTTP_CODES, reported_all
from kernelindex.web.http import new_request_id
from kernelindex.web.state import WebSocketSlots, server_state

log = logging.getLogger("kernelindex.web")

ONLY_SUBSCRIPTIONS_MESSAGE = ("Only subscriptions are served over the websocket: POST queries and mutations to /graphql")
# The close code for a websocket over the process's limit: RFC 6455's "try again later".
TRY_AGAIN_LATER = 1013


class ClientNotReading(Exception):
    """A message to the client waited longer than the send deadline: the connection is ended."""


async def refuse_websocket(scope: Scope, receive: Receive, send: Send, limit: int) -> None:
    """Accept (with the protocol asked for, so the client reads the close) and close at once with 1013."""
    websocket = WebSocket(scope, receive=receive, send=send)
    offered = [p.strip() for p in websocket.headers.get("sec-websocket-protocol", "").split(",")]
    await websocket.accept(subprotocol=GRAPHQL_TRANSPORT_WS_PROTOCOL if GRAPHQL_TRANSPORT_WS_PROTOCOL in offered else None)
    await websocket.close(TRY_AGAIN_LATER, f"this server process serves {limit} websockets at most: try again later")


# /metrics (kernelindex_subscriptions_<name>): this process's websockets and subscriptions.
METRICS = {
    "websockets": ("gauge", "Websockets open now on this process."),
    "websockets_refused": ("counter", "Websockets closed at once (1013) for being over max_websocket_connections."),
    "subscriptions": ("gauge", "Subscriptions waiting for notifications now."),
    "notifications": ("counter", "Notifications heard on the LISTEN connection."),
    "overflows": ("counter", "Subscriptions ended with SUBSCRIPTION_OVERFLOW (their queue was full)."),
    "websockets_stalled": ("counter", "Websockets ended because their client took no message within "
                                      "subscription_send_timeout_s (it stopped reading)."),
    "listening": ("gauge", "1 while the LISTEN connection holds, 0 while it is being opened again."),
}


def metrics(slots: WebSocketSlots, notifications: Notifications) -> dict[str, int]:
    return {"websockets": slots.active, "websockets_refused": slots.refused, "subscriptions": len(notifications.subscribers),
            "notifications": notifications.received, "overflows": notifications.overflows,
            "websockets_stalled": slots.stalled, "listening": int(notifications.listening.is_set())}


def connection_context(websocket: WebSocket) -> Context:
    """The websocket's own context: what operations copy (settings, the token), never used to read."""
    server = server_state(websocket)
    return Context(session=server.sessionmaker(), now=server.clock(), settings=server.settings,
                   # A websocket passes no HTTP middleware: its connection gets a request id of its own, which its
                   # operations' errors name as a request's do.
                   request_id=new_request_id(),
                   authorization=websocket.headers.get("authorization"), notifications=server.notifications)


def operation_context(connection: Context, websocket: Any) -> Context:
    """A subscription's context: a session of its own, and the token the connection gave."""
    server = server_state(websocket)
    params = getattr(connection, "connection_params", None) or {}
    token = params.get("authorization", params.get("Authorization")) if isinstance(params, dict) else None
    return Context(session=server.sessionmaker(), now=server.clock(), settings=server.settings,
                   request_id=connection.request_id,
                   authorization=token if isinstance(token, str) else connection.authorization,
                   notifications=server.notifications, read_only=True)


class SubscriptionHandler(BaseGraphQLTransportWSHandler[Context, None]):
    """strawberry's graphql-transport-ws handler with the gates, contexts, error policy and send deadline above."""

    async def handle(self) -> None:
        # strawberry's loop, ended early when a send misses its deadline: the loop itself waits on the
        # client's next message, which a client that does not read may never send.
        self._not_reading = asyncio.Event()
        serving = asyncio.ensure_future(super().handle())
        stalled = asyncio.ensure_future(self._not_reading.wait())
        try:
            await asyncio.wait({serving, stalled}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stalled.cancel()
            serving.cancel()  # strawberry's own shutdown then stops every operation (a no-op once it is done)
            with suppress(asyncio.CancelledError, ClientNotReading):
                await serving

    async def send_message(self, message: Any) -> None:
        deadline = self.context.settings.subscription_send_timeout_s
        try:
            await asyncio.wait_for(super().send_message(message), deadline)
        except TimeoutError:
            if not self._not_reading.is_set():
                self._not_reading.set()
                slots: WebSocketSlots | None = getattr(self.view, "websockets", None)
                if slots is not None:
                    slots.stalled += 1
                client = getattr(getattr(self.websocket, "ws", None), "client", None)
                log.warning("websocket from %s: a message waited %ss to be sent (the client is not reading): "
                            "connection ended", f"{client.host}:{client.port}" if client else "?", deadline)
            raise ClientNotReading from None

    def _refusal(self, payload: dict[str, Any]) -> GraphQLError | None:
        """Why this subscribe message is refused before it runs (None: it runs); the payload's query is
        replaced by the registered document where it named one by hash."""
        view: Any = self.view
        persisted = view.persisted
        if persisted is not None:
            request = GraphQLRequestData(query=payload.get("query"), variables=payload.get("variables"),
                                         operation_name=payload.get("operationName"),
                                         extensions=payload.get("extensions"), protocol="http")
            try:
                resolved = persisted.resolve(request)
            except GraphQLError as exc:
                return exc
            except Exception as exc:  # a malformed extension: its 400 as the error's code
                return GraphQLError(str(getattr(exc, "reason", exc)), extensions={"code": HTTP_CODES[400]})
            payload["query"] = resolved.request.query
        query = payload.get("query")
        if not isinstance(query, str):
            return None  # strawberry says what is missing
        try:
            document = parse(query, max_tokens=self.context.settings.max_query_tokens)
        except GraphQLSyntaxError:
            return None  # strawberry's answer to a syntax error (close 4400), with the limit's message
        operation = get_operation_ast(document, payload.get("operationName"))
        if operation is not None and operation.operation is not OperationType.SUBSCRIPTION:
            return GraphQLError(ONLY_SUBSCRIPTIONS_MESSAGE, extensions={"code": HTTP_CODES[405]})
        return None

    async def handle_subscribe(self, message: Any) -> None:
        payload = message.get("payload")
        if self.connection_acknowledged and isinstance(payload, dict) and message.get("id") not in self.operations:
            refusal = self._refusal(payload)
            if refusal is not None:
                await self.send_message({"id": message["id"], "type": "error", "payload": [refusal.formatted]})
                return
        await super().handle_subscribe(message)

    async def run_operation(self, operation: Operation[Context, None]) -> None:
        # strawberry's, with a context (and session) of the operation's own, closed when it ends.
        context = operation_context(self.context, self.websocket.ws)  # type: ignore[attr-defined]
        try:
            result_source = await self.schema.stream(
                operation.query, variable_values=operation.variables, context_value=context,
                root_value=self.root_value, operation_name=operation.operation_name,
            )
            async with aclosing(result_source):
                await self._send_results(operation, result_source, context)
            await operation.send_operation_message({"id": operation.id, "type": "complete"})
        except (_OperationStreamClosed, ClientNotReading):
            return
        except Exception as error:
            await self.handle_task_exception(error)
            with suppress(Exception):
                await operation.send_operation_message({"id": operation.id, "type": "complete"})
            self.operations.pop(operation.id, None)
            raise
        finally:
            await context.session.close()

    async def _send_results(self, operation: Operation[Context, None], result_source: Any, context: Context) -> None:
        """strawberry's _send_result_stream, with this server's error policy and the connection released."""
        settings = self.context.settings
        first = True
        async for result in result_source:
            if first and isinstance(result, PreExecutionError):
                assert result.errors
                if self._get_pre_execution_close_reason(result.errors[0]) is None:
                    result.errors = reported_all(result.errors, production=settings.is_production,
                                                 request_id=self.context.request_id)
                await self._handle_pre_execution_error(operation, result)
                return
            if not isinstance(result, ExecutionResult):
                await self._reject_incremental_delivery(operation)
                return
            if result.errors:
                # ErrorPolicy sees a stream's errors only when it ends: each event's are reported here.
                result.errors = reported_all(result.errors, production=settings.is_production,
                                             request_id=self.context.request_id)
            # The event is resolved: its connection goes back to the pool before a send that may wait on the client.
            await context.end_reads()
            await operation.send_next(result)
            first = False
