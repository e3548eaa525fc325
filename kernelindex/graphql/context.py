"""The per-request context: one database session, the clock, and the request's DataLoaders (over the
process's read model)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import cast

from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request
from starlette.responses import Response

from kernelindex.db.notifications import Notifications
from kernelindex.graphql.loaders import Loaders
from kernelindex.graphql.session import SerializedSession
from kernelindex.services.read_model import ReadModel
from kernelindex.settings import Settings


@dataclass
class Context:
    session: AsyncSession
    now: datetime
    settings: Settings
    request_id: str = ""
    request: Request | None = None
    response: Response | None = None
    # True once the operation is known to be a query (SessionConnection sets it): it wrote nothing, so
    # whoever owns the transaction rolls it back instead of committing (see kernelindex.web.middleware).
    read_only: bool = False
    # The process's read model (kernelindex.services.read_model); None: every value computed here.
    read_model: ReadModel | None = None
    # The Authorization header's value when the operation came without an HTTP request of its own (an MCP
    # tool, kernelindex.mcp): writes check the same token the same way (kernelindex.graphql.auth).
    authorization: str | None = None
    # The process's notifications (kernelindex.db.notifications): what a subscription waits on. None:
    # the operation came over HTTP, where subscriptions are not served.
    notifications: Notifications | None = None
    # A websocket's connection_init payload (strawberry sets it; kernelindex.web.subscriptions reads the token).
    connection_params: dict | None = None
    loaders: Loaders = field(init=False)

    def __post_init__(self) -> None:
        if not isinstance(self.session, SerializedSession):
            # SerializedSession forwards every attribute of the AsyncSession it wraps: it stands in for one.
            self.session = cast(AsyncSession, SerializedSession(self.session))
        self.loaders = Loaders(self.session, self.read_model)

    async def end_reads(self) -> None:
        """Between two events of a subscription: the session's connection back to the pool (a subscription
        waits for minutes; it holds no connection meanwhile) and fresh loaders (the next event re-reads)."""
        await self.session.close()
        self.loaders = Loaders(self.session, self.read_model)

