"""One database session per request, committed or rolled back in one place.

The commit happens when the response starts, before any byte reaches the client: a client never
sees success for a write that did not land.
"""

from __future__ import annotations

import json
import logging
import uuid

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("kernelindex.web")


class DatabaseSessionMiddleware:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        state.setdefault("request_id", uuid.uuid4().hex[:16])  # RequestIdMiddleware normally set it
        sessionmaker: async_sessionmaker[AsyncSession] = scope["app"].state.sessionmaker
        async with sessionmaker() as session:
            state["session"] = session
            finished = False

            async def send_after_commit(message: Message) -> None:
                nonlocal finished
                if message["type"] == "http.response.start" and not finished:
                    finished = True
                    if message["status"] < 400:
                        try:
                            await session.commit()
                        except Exception:
                            log.exception("commit failed (request %s)", state["request_id"])
                            await session.rollback()
                            body = json.dumps({"error": "the database did not accept the change", "request_id": state["request_id"]}).encode()
                            await send({"type": "http.response.start", "status": 503, "headers": [(b"content-type", b"application/json")]})
                            await send({"type": "http.response.body", "body": body})
                            raise _ResponseReplaced()
                    else:
                        await session.rollback()
                await send(message)

            try:
                await self.app(scope, receive, send_after_commit)
            except _ResponseReplaced:
                return
            except BaseException:
                await session.rollback()
                raise


class _ResponseReplaced(Exception):
    pass
