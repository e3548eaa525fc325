"""The per-request context: the request's state, one database session, the clock, and the request's
DataLoaders (over the process's read model)."""

from __future__ import annotations

from datetime import datetime
from typing import cast

from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request
from starlette.responses import Response

from kernelindex.db.notifications import Notifications
from kernelindex.graphql.loaders import Loaders
from kernelindex.graphql.request_state import RequestState
from kernelindex.graphql.session import SerializedSession
from kernelindex.services.read_model import ReadModel
from kernelindex.settings import Settings


class Context:
    """A GraphQL operation's context. Its request's state (kernelindex.graphql.request_state) is one
    typed object, `state`: over HTTP the one the request's middleware made (the ASGI scope holds the
    same); otherwise one of its own. `session` is the state's session, serialized for concurrent
    resolvers (kernelindex.graphql.session)."""

    def __init__(
        self,
        *,
        session: AsyncSession,
        now: datetime,
        settings: Settings,
        state: RequestState | None = None,
        request_id: str = "",
        read_only: bool = False,
        request: Request | None = None,
        response: Response | None = None,
        read_model: ReadModel | None = None,
        authorization: str | None = None,
        notifications: Notifications | None = None,
        connection_params: dict | None = None,
    ):
        # Without a request state of its own (a websocket's operation, an MCP call), the caller says its
        # request id and whether it may write, and they go into a new one.
        self.state = state if state is not None else RequestState(request_id=request_id, read_only=read_only)
        if not isinstance(session, SerializedSession):
            # SerializedSession forwards every attribute of the AsyncSession it wraps: it stands in for one.
            session = cast(AsyncSession, SerializedSession(session))
        self.session = session
        self.now = now
        self.settings = settings
        self.request = request
        self.response = response
        # The process's read model (kernelindex.services.read_model); None: every value computed here.
        self.read_model = read_model
        # The Authorization header's value when the operation came without an HTTP request of its own (an MCP
        # tool, kernelindex.mcp): writes check the same token the same way (kernelindex.graphql.auth).
        self.authorization = authorization
        # The process's notifications (kernelindex.db.notifications): what a subscription waits on. None:
        # the operation came over HTTP, where subscriptions are not served.
        self.notifications = notifications
        # A websocket's connection_init payload (strawberry sets it; kernelindex.web.subscriptions reads the token).
        self.connection_params = connection_params
        self.loaders = Loaders(self.session, self.state, self.read_model)

    @property
    def request_id(self) -> str:
        return self.state.request_id

    async def end_reads(self) -> None:
        """Between two events of a subscription: the session's connection back to the pool (a subscription
        waits for minutes; it holds no connection meanwhile) and fresh loaders (the next event re-reads)."""
        await self.session.close()
        self.state.forget_reads()
        self.loaders = Loaders(self.session, self.state, self.read_model)
