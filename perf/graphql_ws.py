"""A minimal graphql-transport-ws client (the protocol of the graphql-ws library that browsers use),
over the `websockets` package: for the subscription tests and perf/subscription_latency.py.

    async with GraphQLWS("ws://127.0.0.1:8000/graphql", authorization="Bearer …") as ws:
        await ws.subscribe("1", "subscription ($id: ID!) { job(id: $id) { state } }", {"id": "42"})
        message = await ws.receive()   # {"id": "1", "type": "next", "payload": {"data": …}}
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

PROTOCOL = "graphql-transport-ws"


class GraphQLWS:
    def __init__(self, url: str, *, authorization: str | None = None, timeout_s: float = 10.0, origin: str | None = None):
        self.url = url
        self.origin = origin  # what a browser sends (None: no Origin header, as a script)
        self.authorization = authorization
        self.timeout_s = timeout_s
        self._connection: ClientConnection | None = None

    async def __aenter__(self) -> GraphQLWS:
        self._connection = await connect(self.url, subprotocols=[PROTOCOL], open_timeout=self.timeout_s,  # type: ignore[list-item]
                                         origin=self.origin)  # type: ignore[arg-type]
        payload = {"authorization": self.authorization} if self.authorization else {}
        await self.send({"type": "connection_init", "payload": payload})
        ack = await self.receive()
        if ack.get("type") != "connection_ack":
            raise RuntimeError(f"no connection_ack: {ack}")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._connection is not None:
            await self._connection.close()

    @property
    def connection(self) -> ClientConnection:
        assert self._connection is not None, "use `async with`"
        return self._connection

    async def send(self, message: dict[str, Any]) -> None:
        await self.connection.send(json.dumps(message))

    async def subscribe(self, id: str, query: str | None, variables: dict[str, Any] | None = None,
                        extensions: dict[str, Any] | None = None) -> None:
        """Start an operation; `query` None sends only `extensions` (a persisted query by its hash)."""
        payload: dict[str, Any] = {"variables": variables or {}}
        if query is not None:
            payload["query"] = query
        if extensions is not None:
            payload["extensions"] = extensions
        await self.send({"id": id, "type": "subscribe", "payload": payload})

    async def complete(self, id: str) -> None:
        await self.send({"id": id, "type": "complete"})

    async def receive(self, timeout_s: float | None = None) -> dict[str, Any]:
        """The next message (pings answered on the way); TimeoutError when none comes in time."""
        while True:
            raw = await asyncio.wait_for(self.connection.recv(), timeout_s or self.timeout_s)
            message = json.loads(raw)
            if message.get("type") == "ping":
                await self.send({"type": "pong"})
                continue
            return message
