"""The application's state: what every request reads from the app, typed, and built once when the
server starts (the lifespan), so no reader has to ask whether it is there."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import strawberry
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from starlette.datastructures import State
from starlette.requests import HTTPConnection

from kernelindex.db.changes import DataVersionReader
from kernelindex.db.notifications import Notifications
from kernelindex.services.read_model import ReadModel
from kernelindex.settings import Settings
from kernelindex.web.health import HealthCheck
from kernelindex.web.response_cache import ResponseCache

Clock = Callable[[], datetime]


class Slots:
    """How many of something (exports, websockets) this process serves at once, and its limit. Taken
    without waiting: one over the limit is refused at once (an export 503 with Retry-After, a websocket
    closed with 1013), never queued."""

    def __init__(self, limit: int):
        self.limit = limit
        self.active = 0
        self.refused = 0  # for /metrics, the tests and the perf scripts

    def take(self) -> bool:
        if self.active >= self.limit:
            self.refused += 1
            return False
        self.active += 1
        return True

    def give_back(self) -> None:
        self.active -= 1


class ExportSlots(Slots):
    """The exports' slots, and whose turn it is to make a chunk."""

    def __init__(self, limit: int):
        super().__init__(limit)
        # One export makes a chunk at a time. Each chunk is CPU the event loop spends on exports alone;
        # with one at a time, whatever else waits (a /healthz, a GraphQL query) waits for one chunk per
        # turn of the loop, not for one chunk of every export (measured: p99 of /healthz 119 ms
        # with 4 exports making chunks side by side, see perf/export_pressure.py).
        self.turn = asyncio.Lock()


class WebSocketSlots(Slots):
    """The websockets' slots, and how many were ended for not reading (kernelindex.web.subscriptions)."""

    def __init__(self, limit: int):
        super().__init__(limit)
        self.stalled = 0  # ended by the send deadline


@dataclass(frozen=True)
class ServerState:
    settings: Settings
    schema: strawberry.Schema
    clock: Clock
    # GraphQL and the JSON twins (one session per request, DatabaseSessionMiddleware).
    engine: AsyncEngine
    sessionmaker: async_sessionmaker[AsyncSession]
    data_version: DataVersionReader
    response_cache: ResponseCache
    read_model: ReadModel
    # Exports: a pool of their own, as big as their concurrency limit, so they cannot take the above.
    export_engine: AsyncEngine
    export_sessionmaker: async_sessionmaker[AsyncSession]
    export_slots: ExportSlots
    # /healthz: a connection of its own.
    health: HealthCheck
    # Subscriptions: the process's LISTEN connection and its subscribers (kernelindex.db.notifications),
    # and its websockets (kernelindex.web.subscriptions).
    notifications: Notifications
    websockets: WebSocketSlots


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
