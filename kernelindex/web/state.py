"""The application's state: what every request reads from the app, typed, and built once when the
server starts (the lifespan), so no reader has to ask whether it is there."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import strawberry
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from starlette.datastructures import State
from starlette.requests import HTTPConnection

from kernelindex.settings import Settings
from kernelindex.web.response_cache import DataVersionReader, ResponseCache

Clock = Callable[[], datetime]


@dataclass(frozen=True)
class ServerState:
    settings: Settings
    schema: strawberry.Schema
    clock: Clock
    engine: AsyncEngine
    sessionmaker: async_sessionmaker[AsyncSession]
    data_version: DataVersionReader
    response_cache: ResponseCache


class AppState(State):
    """`app.state` once the lifespan has started: the ServerState's fields, as attributes.

    Starlette's State is an untyped attribute bag; this one is filled from a ServerState in one
    go, and `server_state()` hands readers the typed object itself."""

    def __init__(self, server: ServerState):
        super().__init__({name: getattr(server, name) for name in server.__dataclass_fields__})
        self._state["server"] = server


def server_state(connection: HTTPConnection) -> ServerState:
    """The state of the application serving this request (the lifespan built it before any request)."""
    server: ServerState = connection.app.state.server
    return server
