"""One database session per request, committed or rolled back in one place.

The commit happens when the response starts, before any byte reaches the client: a client never
sees success for a write that did not land. Requests that cannot write (GETs, GraphQL queries) are
rolled back instead.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kernelindex.db.engine import discard_connections
from kernelindex.db.errors import is_unavailable, unavailable_message
from kernelindex.graphql.errors import UNAVAILABLE_MESSAGE
from kernelindex.graphql.request_state import RequestState, request_state
from kernelindex.web.http import new_request_id

log = logging.getLogger("kernelindex.web")

class DatabaseSessionMiddleware:
    """A session on the request pool for every request, except the paths that bring their own: the
    exports (a pool of their own, kernelindex.web.exports) and /healthz (a connection of its own)."""

    def __init__(self, app: ASGIApp, exempt_prefixes: tuple[str, ...] = ("/exports/", "/healthz")):
        self.app = app
        self.exempt_prefixes = exempt_prefixes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(self.exempt_prefixes):
            await self.app(scope, receive, send)
            return
        state = request_state(scope)
        if not state.request_id:  # RequestIdMiddleware normally set it
            state.request_id = new_request_id()
        sessionmaker: async_sessionmaker[AsyncSession] = scope["app"].state.sessionmaker
        request_id = state.request_id
        session = sessionmaker()
        state.session = session
        finished = False
        interrupted = False  # the connection may be mid-statement: discarded, never handed back
        try:

            async def send_after_commit(message: Message) -> None:
                nonlocal finished, interrupted
                if message["type"] == "http.response.start" and not finished:
                    finished = True
                    if message["status"] < 400 and not _read_only(scope, state):
                        try:
                            await session.commit()
                        except Exception as exc:
                            log.exception("commit failed (request %s)", request_id)
                            await _rollback_quietly(session, request_id)
                            await _send_503(scope, send, request_id, exc)
                            raise _ResponseReplaced() from exc
                    elif not state.reads_in_autocommit and not await _rollback_quietly(session, request_id):
                        # (A query that read in autocommit has no transaction to roll back: its session is
                        # closed below, which hands the connection back through the pool's own reset.)
                        interrupted = True
                await send(message)

            try:
                await self.app(scope, receive, send_after_commit)
            except _ResponseReplaced:
                return
            except Exception as exc:
                if not await _rollback_quietly(session, request_id):
                    interrupted = True
                if not finished and is_unavailable(exc):
                    # A route that let a connection failure through: still a 503, not a 500.
                    log.warning("database unavailable (request %s): %s", request_id, exc)
                    await _send_503(scope, send, request_id, exc)
                    return
                raise
            except BaseException:
                # Cancelled (the request timeout, a shutdown): asyncpg may be waiting on a statement
                # that is still running, or a DataLoader task may still be using the session. A
                # rollback now fails or waits for it; the connection is discarded instead.
                interrupted = True
                raise
        finally:
            task = asyncio.current_task()
            if interrupted or (task is not None and task.cancelling()):
                await _discard_quietly(session, request_id)
            else:
                await _close_quietly(session, request_id)


def _read_only(scope: Scope, state: RequestState) -> bool:
    """Nothing to commit: a GET (mutations are refused over GET) or a request whose state says it wrote
    nothing (a GraphQL query, or its cached answer: kernelindex.graphql.session, the GraphQL view).
    Rolled back instead, so a connection broken by a cancelled read cannot fail the response."""
    return scope.get("method") in ("GET", "HEAD") or state.read_only


def _untouched(session: AsyncSession) -> bool:
    """Never began a transaction and holds no objects: nothing to roll back or close. Most requests
    answered from the response cache are like this, and skipping the round trip through SQLAlchemy's
    greenlet bridge saves a tenth of what such a request costs."""
    return not session.in_transaction() and not session.identity_map


async def _rollback_quietly(session: AsyncSession, request_id: str) -> bool:
    """Roll back; when the connection went away with the database, that fails too: say so and go on.
    False when the rollback failed: the connection's state is unknown and it must not be reused."""
    if _untouched(session):
        return True
    try:
        await session.rollback()
    except Exception as exc:
        log.warning("rollback failed (request %s): %s", request_id, exc)
        return False
    return True


async def _discard_quietly(session: AsyncSession, request_id: str) -> None:
    """End an interrupted session without handing its connection back to the pool as it is."""
    if _untouched(session):
        return
    try:
        await discard_connections(session)
    except Exception as exc:
        log.warning("discarding the connection failed (request %s): %s", request_id, exc)


async def _close_quietly(session: AsyncSession, request_id: str) -> None:
    """Close the session; if its connection is broken, invalidate it so the pool does not reuse it.
    A failure here must not turn a response already sent into a dropped connection."""
    if _untouched(session):
        return
    try:
        await session.close()
    except Exception as exc:
        log.warning("closing the session failed (request %s): %s", request_id, exc)
        try:
            await session.invalidate()
        except Exception:
            pass


async def _send_503(scope: Scope, send: Send, request_id: str, exc: BaseException) -> None:
    body = _unavailable_body(scope, request_id, exc)
    await send({"type": "http.response.start", "status": 503, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class _ResponseReplaced(Exception):
    pass


def _unavailable_body(scope: Scope, request_id: str, exc: BaseException) -> bytes:
    """The body of a 503 sent here (a failed commit, a connection failure a route let through);
    GraphQL-shaped on /graphql, so that a GraphQL client reads it like any other SERVICE_UNAVAILABLE
    (the database can go away between the last query and the commit)."""
    # An outage with a known cause (a full disk) names it, as the GraphQL errors do.
    if is_unavailable(exc):
        message = unavailable_message(exc) or UNAVAILABLE_MESSAGE
    else:
        message = "the database did not accept the change; retry shortly."
    payload: dict[str, Any]
    if scope.get("path") == "/graphql":
        payload = {"data": None, "errors": [
            {"message": message, "extensions": {"code": "SERVICE_UNAVAILABLE", "request_id": request_id}}]}
    else:
        payload = {"error": message, "request_id": request_id}
    return json.dumps(payload).encode()
