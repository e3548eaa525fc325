"""The per-request context: one database session, the clock, and the request's DataLoaders."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.graphql.loaders import Loaders
from kernelindex.settings import Settings


@dataclass
class Context:
    session: AsyncSession
    now: datetime
    settings: Settings
    request_id: str = ""
    request: object | None = None
    response: object | None = None
    loaders: Loaders = field(init=False)

    def __post_init__(self) -> None:
        from kernelindex.graphql.session import SerializedSession

        if not isinstance(self.session, SerializedSession):
            self.session = SerializedSession(self.session)
        self.loaders = Loaders(self.session, self.now)
