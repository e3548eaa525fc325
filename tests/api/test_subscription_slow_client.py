"""A websocket client that subscribes and then does not read its socket, against a real server process
(`kernelindex serve`), while many record events are committed: what the server keeps for it stays
bounded, another client of the same server keeps receiving every event, and the client is ended as
the README says: a slow reader's subscriptions with SUBSCRIPTION_OVERFLOW once it reads again, a client
that stops reading by the send deadline (KERNELINDEX_SUBSCRIPTION_SEND_TIMEOUT_S), its websocket, slot and
subscriptions freed. The per-connection limit (20 subscriptions by default) is checked on the way."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import httpx
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.protocol import State
from websockets.typing import Subprotocol
from websockets.uri import parse_uri

from kernelindex.db.urls import to_libpq_url
from perf.graphql_ws import PROTOCOL, GraphQLWS
from tests.api.test_subscriptions import HISTORY, RESNET, next_data, server_process, ws_url

# Each event with a long reason, selected twice (as itself and in `words`): about 4 KB a message, so that
# 20 subscriptions fill the socket's buffers after a few dozen events.
REASON = "a retraction whose reason is long enough to make each message a few kilobytes. " * 25
EVENTS = "subscription ($w: String!) { recordEvents(workload: $w) { databaseId kind reason words } }"
PER_CONNECTION = 20  # Settings.max_subscriptions_per_connection's default
EVENT_COUNT = 300  # committed one by one: 300 notifications, three times a subscription's queue (100)


class SilentClient:
    """A graphql-transport-ws client on a plain socket (websockets' sans-I/O protocol for the framing) that
    reads only when told to: between, nothing is read from the socket, whose receive buffer is small, as
    a stalled browser tab's or a wedged script's. It answers no ping either."""

    def __init__(self, url: str):
        parts = urlsplit(url)
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: the window stays small
        self.socket.connect((parts.hostname, parts.port))
        self.protocol = ClientProtocol(parse_uri(url), subprotocols=[Subprotocol(PROTOCOL)], max_size=None)
        self.protocol.send_request(self.protocol.connect())
        self._flush()
        self.received_bytes = 0
        self.pending: list[dict[str, Any]] = []
        self.close_code: int | None = None  # the close frame's code, if one came
        self.ended = False  # the server closed the TCP connection
        assert self._read_until(self._accepted), f"no handshake: {self.protocol.handshake_exc}"
        self.send({"type": "connection_init", "payload": {}})
        assert self.receive() == {"type": "connection_ack"}

    def _accepted(self) -> bool:
        return self.protocol.state is State.OPEN

    def _flush(self) -> None:
        for data in self.protocol.data_to_send():
            if data:
                self.socket.sendall(data)

    def _read_once(self, timeout_s: float) -> bool:
        """Read what has come, waiting up to timeout_s; False when nothing came (or the connection has ended)."""
        if self.ended:
            return False
        self.socket.settimeout(timeout_s)
        try:
            data = self.socket.recv(65536)
        except TimeoutError:
            return False
        self.received_bytes += len(data)
        if data:
            self.protocol.receive_data(data)
        else:
            self.protocol.receive_eof()
            self.ended = True
        for event in self.protocol.events_received():
            if isinstance(event, Frame) and event.opcode is Opcode.TEXT:
                self.pending.append(json.loads(event.data))
            elif isinstance(event, Frame) and event.opcode is Opcode.CLOSE and self.protocol.close_rcvd is not None:
                self.close_code = self.protocol.close_rcvd.code
        return bool(data)

    def _read_until(self, done: Any, timeout_s: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout_s
        while not done() and not self.ended and time.monotonic() < deadline:
            self._read_once(0.5)
        return bool(done())

    def send(self, message: dict[str, Any]) -> None:
        self.protocol.send_text(json.dumps(message).encode())
        self._flush()

    def receive(self) -> dict[str, Any]:
        assert self._read_until(lambda: self.pending), "no message"
        return self.pending.pop(0)

    def read_all(self, quiet_s: float) -> list[dict[str, Any]]:
        """Read again, everything: until the server ends the connection or nothing comes for quiet_s."""
        while self._read_once(quiet_s):
            pass
        taken, self.pending = self.pending, []
        return taken

    def close(self) -> None:
        self.socket.close()


async def commit_events(db_url: str, count: int) -> list[int]:
    """`count` record events on ResNet18, each in a transaction of its own (one notification each)."""
    conn = await asyncpg.connect(to_libpq_url(db_url))
    ids = []
    try:
        for _ in range(count):
            ids.append(await conn.fetchval(
                "INSERT INTO record_events (workload_id, workload_revision_id, configuration_key, kind, rule_version, "
                "reason) SELECT id, current_revision_id, '', 'revision_changed', 'test', $2 FROM workloads "
                "WHERE slug = $1 RETURNING id", RESNET, REASON))
            await asyncio.sleep(0.005)  # a busy importer's pace, not a single burst
    finally:
        await conn.close()
    return ids


async def figures(url: str) -> dict[str, float]:
    async with httpx.AsyncClient(base_url=url, timeout=10) as client:
        text = (await client.get("/metrics")).text
    return {line.split("{")[0].removeprefix("kernelindex_subscriptions_"): float(line.rsplit(" ", 1)[1])
            for line in text.splitlines() if line.startswith("kernelindex_subscriptions_")}


async def until(url: str, check: Any, timeout_s: float) -> dict[str, float]:
    deadline = time.monotonic() + timeout_s
    while True:
        now = await figures(url)
        if check(now):
            return now
        assert time.monotonic() < deadline, now
        await asyncio.sleep(0.2)


async def subscribed_silent_client(url: str) -> SilentClient:
    """A silent client with the most subscriptions one connection may hold, the one over that refused."""
    silent = await asyncio.to_thread(SilentClient, ws_url(url))
    for n in range(PER_CONNECTION):
        silent.send({"id": f"s{n}", "type": "subscribe", "payload": {"query": EVENTS, "variables": {"w": RESNET}}})
    silent.send({"id": "over", "type": "subscribe", "payload": {"query": EVENTS, "variables": {"w": RESNET}}})
    refused = await asyncio.to_thread(silent.receive)
    assert refused == {"id": "over", "type": "error", "payload": [{"message": "Subscription limit reached"}]}
    return silent


async def follow_and_write(url: str, db_url: str, good: GraphQLWS) -> tuple[list[int], float]:
    """Commit the events while the good client reads; every one reaches it, in order. Also times a query
    to the same server while the silent client's sends are stuck."""
    writer = asyncio.create_task(commit_events(db_url, EVENT_COUNT))
    received = [(await next_data(good, "good"))["recordEvents"] for _ in range(EVENT_COUNT)]
    ids = await writer
    assert [e["databaseId"] for e in received] == ids and {e["reason"] for e in received} == {REASON}
    started = time.monotonic()
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        answer = (await client.post("/graphql", json={"query": HISTORY, "variables": {"w": RESNET}})).json()
    assert answer["data"]["workload"]["recordHistory"]["nodes"][0]["databaseId"] == ids[-1]
    return ids, time.monotonic() - started


def bounded(silent: SilentClient, messages: list[dict[str, Any]]) -> None:
    """What the server wrote for the silent client is what the socket's buffers held, not every event: it
    stopped producing once they were full (EVENT_COUNT × 20 messages of ~4 KB would be ~24 MB)."""
    nexts = [m for m in messages if m["type"] == "next" and "errors" not in m["payload"]]
    assert len(nexts) < EVENT_COUNT * PER_CONNECTION // 2, len(nexts)
    assert silent.received_bytes < 8 * 1024 * 1024, silent.received_bytes


async def test_a_client_that_stops_reading_is_ended_by_the_send_deadline(db_url, tmp_path):
    with server_process(db_url, tmp_path / "a.log", subscription_send_timeout_s="2") as url:
        async with GraphQLWS(ws_url(url), timeout_s=30) as good:
            await good.subscribe("good", EVENTS, {"w": RESNET})
            silent = await subscribed_silent_client(url)
            try:
                await until(url, lambda f: f["subscriptions"] == PER_CONNECTION + 1, 10)
                _, query_s = await follow_and_write(url, db_url, good)
                # The server answered a query at once while the silent client's sends were stuck (they hold no
                # database connection).
                assert query_s < 5, query_s
                # The send deadline ended the silent websocket: its slot and its 20 subscriptions are freed,
                # the good client's stays.
                after = await until(url, lambda f: f["websockets"] == 1, 30)
                assert after["subscriptions"] == 1 and after["websockets_stalled_total"] == 1
                # Reading again, the client finds what its socket held, then the end of the connection
                # (no close frame: none could be written to a socket whose client did not read).
                messages = await asyncio.to_thread(silent.read_all, 5.0)
                assert silent.ended and silent.close_code is None
                bounded(silent, messages)
            finally:
                silent.close()
            # The good client still follows.
            (event,) = await commit_events(db_url, 1)
            assert (await next_data(good, "good"))["recordEvents"]["databaseId"] == event


async def test_a_client_that_reads_too_slowly_gets_subscription_overflow(db_url, tmp_path):
    with server_process(db_url, tmp_path / "a.log") as url:  # the default send deadline (30 s)
        async with GraphQLWS(ws_url(url), timeout_s=30) as good:
            await good.subscribe("good", EVENTS, {"w": RESNET})
            silent = await subscribed_silent_client(url)
            try:
                await until(url, lambda f: f["subscriptions"] == PER_CONNECTION + 1, 10)
                ids, query_s = await follow_and_write(url, db_url, good)
                assert query_s < 5, query_s
                # Its 20 subscriptions fell more than 100 notifications behind while it did not read.
                await until(url, lambda f: f["overflows_total"] == PER_CONNECTION, 30)
                # Reading again (within the deadline): what its socket held, then each subscription's events
                # from the first, in order, then SUBSCRIPTION_OVERFLOW and complete.
                messages = await asyncio.to_thread(silent.read_all, 5.0)
                for n in range(PER_CONNECTION):
                    mine = [m for m in messages if m.get("id") == f"s{n}"]
                    events = [m["payload"]["data"]["recordEvents"]["databaseId"] for m in mine[:-2]]
                    assert events == ids[:len(events)], n
                    assert mine[-2]["payload"]["errors"][0]["extensions"]["code"] == "SUBSCRIPTION_OVERFLOW"
                    assert mine[-1] == {"id": f"s{n}", "type": "complete"}
                # The websocket itself stays open, its subscriptions ended; the good client's goes on.
                after = await figures(url)
                assert (after["websockets"], after["subscriptions"], after["websockets_stalled_total"]) == (2, 1, 0)
                assert not silent.ended
            finally:
                silent.close()
            (event,) = await commit_events(db_url, 1)
            assert (await next_data(good, "good"))["recordEvents"]["databaseId"] == event
