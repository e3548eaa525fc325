"""Hostile inputs against the web server's bounds: exports cannot starve GraphQL or /healthz, the
request timeout is answered on time and never leaves a broken connection in the pool, malformed
bodies are 400s, production serves no GraphiQL and no insides in its error bodies, and request heads
are bounded in size (431) and in the time to send them (408, or closed)."""

from __future__ import annotations

import asyncio
import json
import select
import socket
import time

import asyncpg
import httpx
import pytest
from sqlalchemy import text

from kernelindex.db.urls import to_libpq_url
from kernelindex.graphql.request_state import request_state
from kernelindex.settings import Settings
from kernelindex.web.app import create_app
from kernelindex.web.bounded_http import BoundedHttpToolsProtocol
from perf.responses import busy_problem
from tests.conftest import FIXED_NOW

RESNET18 = "kernelbench-l3-p9-resnet18"
PAGE = f'{{ workload(slug: "{RESNET18}") {{ eligibleRunCount }} }}'
UNRELATED = "{ workloads(first: 2) { totalCount } }"
LEAKS = ("Traceback", "RuntimeError", "sqlalchemy", "asyncpg", "SELECT", "secret", 'File "', ".py")


class Running:
    """An app with its lifespan, and an httpx client on it."""

    def __init__(self, db_url: str, **settings):
        self.app = create_app(Settings(**settings), database_url=db_url, clock=lambda: FIXED_NOW)

    async def __aenter__(self) -> Running:
        self._lifespan = self.app.router.lifespan_context(self.app)
        await self._lifespan.__aenter__()
        self.client = httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app, raise_app_exceptions=False),
                                        base_url="http://testserver")
        return self

    async def __aexit__(self, *exc) -> None:
        await self.client.aclose()
        await self._lifespan.__aexit__(*exc)


def _slow_page_evidence(monkeypatch, seconds: float) -> None:
    """The workload page's evidence loader sleeps in PostgreSQL first: a statement that runs long."""
    from kernelindex.graphql import loaders

    original = loaders.load_page_evidence

    async def sleeps_in_postgres(session, *args, **kwargs):
        await session.execute(text(f"SELECT pg_sleep({seconds})"))
        return await original(session, *args, **kwargs)

    monkeypatch.setattr(loaders, "load_page_evidence", sleeps_in_postgres)


async def _sleeping_backends(db_url: str) -> int:
    conn = await asyncpg.connect(to_libpq_url(db_url))
    try:
        return await conn.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'SELECT pg_sleep%'"
            " AND state = 'active' AND pid <> pg_backend_pid()")
    finally:
        await conn.close()


# -- the request timeout ---------------------------------------------------------------------------

async def test_a_timed_out_query_is_a_504_on_time_and_the_next_query_on_the_same_connection_succeeds(db_url, monkeypatch):
    """pool_size=1: the next, unrelated query gets the very connection (slot) the timed-out one had."""
    _slow_page_evidence(monkeypatch, 30)
    async with Running(db_url, request_timeout_s=1.0, db_pool_size=1, db_max_overflow=0, response_cache_entries=0) as server:
        for attempt in range(4):  # the issue saw 3 of 4 timeouts break the pool
            started = time.perf_counter()
            timed_out = await server.client.post("/graphql", json={"query": PAGE})
            took = time.perf_counter() - started
            assert timed_out.status_code == 504, timed_out.text
            assert 1.0 <= took < 2.0, f"attempt {attempt}: 504 after {took:.2f} s for a 1 s timeout"
            assert "took longer than 1 s" in timed_out.json()["error"]
            after = await server.client.post("/graphql", json={"query": UNRELATED})
            assert after.status_code == 200 and "errors" not in after.json(), after.text
            assert after.json()["data"]["workloads"]["totalCount"] == 2
        # The database ends what the discarded connections left running (statement_timeout = 1 s + 1 s).
        for _ in range(25):  # polling the database: there is no event to wait on
            if not await _sleeping_backends(db_url):
                break
            await asyncio.sleep(0.2)
        assert await _sleeping_backends(db_url) == 0


async def test_the_request_pool_has_statement_and_idle_limits_and_the_export_pool_its_own(db_url):
    async with Running(db_url, request_timeout_s=4.0, export_timeout_s=60, export_idle_timeout_s=7) as server:
        async with server.app.state.engine.connect() as conn:
            assert (await conn.execute(text("SHOW statement_timeout"))).scalar() == "5s"
            assert (await conn.execute(text("SHOW idle_in_transaction_session_timeout"))).scalar() == "5s"
            # the request pool keeps each prepared statement's plan (db.engine.make_engine's generic_plans)
            assert (await conn.execute(text("SHOW plan_cache_mode"))).scalar() == "force_generic_plan"
        async with server.app.state.export_engine.connect() as conn:
            assert (await conn.execute(text("SHOW plan_cache_mode"))).scalar() == "auto"
            assert (await conn.execute(text("SHOW statement_timeout"))).scalar() == "1min"
            assert (await conn.execute(text("SHOW idle_in_transaction_session_timeout"))).scalar() == "8s"
        assert server.app.state.export_engine is not server.app.state.engine


async def test_a_request_cancelled_mid_statement_leaves_no_broken_connection(db_url, monkeypatch):
    """A client that goes away (its request task cancelled) while PostgreSQL still runs its statement."""
    _slow_page_evidence(monkeypatch, 30)
    async with Running(db_url, request_timeout_s=20.0, db_pool_size=1, db_max_overflow=0, response_cache_entries=0) as server:
        for _ in range(3):
            request = asyncio.ensure_future(server.client.post("/graphql", json={"query": PAGE}))
            await asyncio.sleep(0.5)
            request.cancel()
            with pytest.raises(asyncio.CancelledError):
                await request
            started = time.perf_counter()
            after = await server.client.post("/graphql", json={"query": UNRELATED})
            assert after.status_code == 200 and "errors" not in after.json(), after.text
            assert time.perf_counter() - started < 2.0


# -- exports cannot starve the rest ----------------------------------------------------------------

class StuckReader:
    """An export client whose buffers are full: the server's `send` of the first body chunk waits until
    the reader is let go (what uvicorn's flow control does with a client that reads slowly)."""

    def __init__(self, app, path: str = "/exports/runs.csv"):
        self.app = app
        self.path = path
        self.messages: list[dict] = []
        self.release = asyncio.Event()
        self.blocked = asyncio.Event()
        self.task: asyncio.Task | None = None

    def start(self) -> StuckReader:
        self.task = asyncio.ensure_future(self._run())
        return self

    async def _run(self) -> None:
        scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
                 "method": "GET", "scheme": "http", "path": self.path, "raw_path": self.path.encode(),
                 "query_string": b"", "headers": [(b"host", b"testserver")], "client": ("127.0.0.1", 1),
                 "server": ("testserver", 80), "state": {}, "app": self.app}

        async def receive():
            await self.release.wait()
            return {"type": "http.disconnect"}

        async def send(message):
            self.messages.append(message)
            if message["type"] == "http.response.body" and message.get("body"):
                self.blocked.set()
                await self.release.wait()

        await self.app(scope, receive, send)

    @property
    def status(self) -> int | None:
        starts = [m for m in self.messages if m["type"] == "http.response.start"]
        return starts[0]["status"] if starts else None


async def test_slow_export_readers_cannot_starve_graphql_or_healthz_and_extra_ones_are_refused_at_once(db_url):
    async with Running(db_url, export_concurrency=2, export_idle_timeout_s=30, db_pool_size=2, db_max_overflow=0,
                       response_cache_entries=0) as server:
        readers = [StuckReader(server.app).start() for _ in range(2)]
        await asyncio.wait_for(asyncio.gather(*(r.blocked.wait() for r in readers)), timeout=10)
        assert server.app.state.export_slots.active == 2
        # Three more readers: refused at once, with Retry-After, not queued.
        for path in ("/exports/catalog.jsonl", "/exports/runs.parquet", "/exports/runs.csv"):
            started = time.perf_counter()
            refused = await server.client.get(path)
            assert refused.status_code == 503 and time.perf_counter() - started < 0.5
            assert int(refused.headers["retry-after"]) > 0
            assert "too many exports" in refused.json()["error"]
            assert busy_problem(refused) is None, busy_problem(refused)  # what perf.outage_check counts as load shed
        # Meanwhile the request pool and /healthz are untouched.
        latencies = []
        for _ in range(20):
            started = time.perf_counter()
            health = await server.client.get("/healthz")
            latencies.append(time.perf_counter() - started)
            assert health.status_code == 200 and health.json()["status"] == "ok"
        assert sorted(latencies)[-2] < 0.1, latencies
        for query in (PAGE, UNRELATED, PAGE):  # uncached: executed on the request pool each time
            started = time.perf_counter()
            answer = await server.client.post("/graphql", json={"query": query})
            assert answer.status_code == 200 and "errors" not in answer.json(), answer.text
            assert time.perf_counter() - started < 2.0
        twin = await server.client.get(f"/workloads/{RESNET18}.json")
        assert twin.status_code == 200
        for reader in readers:
            reader.release.set()
        await asyncio.wait_for(asyncio.gather(*(r.task for r in readers)), timeout=10)
        assert server.app.state.export_slots.active == 0
        again = await server.client.get("/exports/runs.csv")
        assert again.status_code == 200 and len(again.text.splitlines()) == 9


async def test_a_reader_too_slow_is_cut_off_and_its_slot_and_connection_come_back(db_url):
    async with Running(db_url, export_concurrency=1, export_idle_timeout_s=0.5, response_cache_entries=0) as server:
        reader = StuckReader(server.app).start()
        started = time.perf_counter()
        await asyncio.wait_for(reader.task, timeout=5)  # never released: the idle limit ends it
        assert time.perf_counter() - started < 3
        assert reader.status == 200
        # The body never got its last (more_body False) chunk: the client sees an incomplete response.
        assert not any(m["type"] == "http.response.body" and not m.get("more_body", False) for m in reader.messages)
        assert server.app.state.export_slots.active == 0
        # The export pool's one connection was discarded, not left mid-transaction: the next export works.
        for _ in range(2):
            after = await server.client.get("/exports/catalog.jsonl")
            assert after.status_code == 200 and after.text.count('"kernelindex.run/1"') == 8


async def test_exports_make_their_chunks_one_at_a_time():
    """ExportSlots.turn: however many exports stream, one makes a chunk at a time, so whatever else
    waits on the event loop waits for one chunk per turn, not one of every export (perf.export_pressure:
    /healthz p99 119 ms with 4 exports side by side, 16 ms one at a time)."""
    from kernelindex.web.exports import CachedExport
    from kernelindex.web.state import ExportSlots

    slots = ExportSlots(4)
    making, most = 0, 0

    async def chunks(name: str):
        nonlocal making, most
        for i in range(5):
            making += 1
            most = max(most, making)
            await asyncio.sleep(0)  # a fetch in the middle of making a chunk: others get the loop
            await asyncio.sleep(0)
            making -= 1
            yield f"{name}{i}"

    def export() -> CachedExport:
        bare = object.__new__(CachedExport)  # only what _tee reads: no cache, the shared turn
        bare.version, bare.key, bare.turn = None, None, slots.turn
        return bare

    async def drain(name: str) -> list[str]:
        return [chunk async for chunk in export()._tee(chunks(name))]

    results = await asyncio.gather(*(drain(name) for name in "abcd"))
    assert results == [[f"{name}{i}" for i in range(5)] for name in "abcd"]
    assert most == 1, f"{most} exports made a chunk at the same time"


@pytest.mark.parametrize("path", ["/exports/runs.csv", "/exports/runs.parquet"])
async def test_an_export_over_its_total_time_is_cut_off(db_url, monkeypatch, path):
    from kernelindex.web import exports

    original = exports.database_unavailable

    async def slow_check(request):
        await request_state(request).session.execute(text("SELECT pg_sleep(30)"))
        return await original(request)

    monkeypatch.setattr(exports, "database_unavailable", slow_check)
    async with Running(db_url, export_concurrency=1, export_timeout_s=0.5, response_cache_entries=0) as server:
        started = time.perf_counter()
        cut = await server.client.get(path)
        assert cut.status_code == 504 and time.perf_counter() - started < 2
        assert "longer than 0.5 s" in cut.json()["error"]
        monkeypatch.setattr(exports, "database_unavailable", original)
        after = await server.client.get("/exports/runs.csv")
        assert after.status_code == 200 and len(after.text.splitlines()) == 9


# -- malformed bodies are 400s ---------------------------------------------------------------------

NESTED = b"[" * 100_000 + b"]" * 100_000


@pytest.mark.parametrize(("body", "says"), [
    (b'{"query": "{ policy { version } }\xff\xfe"}', "not valid UTF-8"),
    (b"\xc3\x28", "not valid UTF-8"),
    (b'{"query": ', "JSON is invalid"),
    (NESTED, "nested too deeply"),
    (b'{"query": "{ policy { version } }", "variables": ' + NESTED + b"}", "nested too deeply"),
    (b'{"query": "{ policy { version } }", "variables": [1, 2]}', "variables"),
    (b'{"query": "{ policy { version } }", "variables": "x"}', "variables"),
    (b'{"query": 5}', "query"),
    (b"42", "JSON object"),
    (b"null", "JSON object"),
    (b'"{ policy { version } }"', "JSON object"),
])
async def test_malformed_post_bodies_are_400_with_a_json_error(client, body, says):
    response = await client.post("/graphql", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 400, response.text[:300]
    error = response.json()["errors"][0]
    assert error["extensions"]["code"] == "BAD_REQUEST" and error["extensions"]["request_id"]
    assert says in error["message"]


@pytest.mark.parametrize(("params", "says"), [
    ({"query": "{ policy { version } }", "variables": "[" * 5_000 + "]" * 5_000}, "nested too deeply"),
    ({"query": "{ policy { version } }", "variables": "{nope"}, "JSON is invalid"),
    ({"query": "{ policy { version } }", "variables": "[1]"}, "variables"),
    ({"variables": "{}"}, "No GraphQL query"),
])
async def test_malformed_get_queries_are_400_with_a_json_error(client, params, says):
    response = await client.get("/graphql", params=params, headers={"accept": "application/json"})
    assert response.status_code == 400, response.text[:300]
    error = response.json()["errors"][0]
    assert error["extensions"]["code"] == "BAD_REQUEST" and says in error["message"]


async def test_a_body_over_the_limit_is_a_413_with_a_json_error(client):
    response = await client.post("/graphql", content=b" " * 2_100_000, headers={"content-type": "application/json"})
    assert response.status_code == 413
    body = response.json()
    assert "over the limit" in body["error"] and body["errors"][0]["extensions"]["code"] == "PAYLOAD_TOO_LARGE"


async def test_a_well_formed_query_still_works_over_post_and_get(client):
    post = await client.post("/graphql", json={"query": "query ($s: String!) { workload(slug: $s) { slug } }",
                                               "variables": {"s": RESNET18}})
    get = await client.get("/graphql", params={"query": f'{{ workload(slug: "{RESNET18}") {{ slug }} }}'})
    assert post.json()["data"] == get.json()["data"] == {"workload": {"slug": RESNET18}}


# -- production ------------------------------------------------------------------------------------

async def test_production_serves_no_graphiql_and_development_does(db_url):
    html = {"accept": "text/html,application/xhtml+xml"}
    async with Running(db_url, environment="production") as server:
        page = await server.client.get("/graphql", headers=html)
        assert page.status_code == 404
        assert "graphiql" not in page.text.lower().replace("graphiql is not served", "")
        assert "<script" not in page.text and page.json()["errors"][0]["extensions"]["code"] == "NOT_FOUND"
        query = await server.client.get("/graphql", params={"query": "{ policy { version } }"}, headers=html)
        assert query.status_code == 200 and query.json()["data"]["policy"]["version"]
    async with Running(db_url) as server:
        page = await server.client.get("/graphql", headers=html)
        assert page.status_code == 200 and "graphiql" in page.text.lower()


async def test_production_error_bodies_of_exports_and_healthz_show_no_insides(db_url, monkeypatch):
    from kernelindex.web import exports

    def broken(request, filters):
        raise RuntimeError("secret: SELECT * FROM runs failed in /srv/kernelindex/web/exports.py")

    monkeypatch.setattr(exports, "_statement", broken)
    async with Running(db_url, environment="production", response_cache_entries=0) as server:
        for path in ("/exports/runs.csv", "/exports/runs.parquet", "/exports/catalog.jsonl"):
            response = await server.client.get(path)
            assert response.status_code == 500
            for leak in LEAKS:
                assert leak not in response.text, (path, leak)
        assert server.app.state.export_slots.active == 0
    # /healthz with the database gone: the failure's kind, never its message.
    async with Running(db_url.replace("/kernelindex_test", "/no_such_database_"), environment="production") as server:
        health = await server.client.get("/healthz")
        assert health.status_code == 503 and health.json()["status"] == "unavailable"
        for leak in LEAKS:
            assert leak not in health.text, leak


async def test_healthz_shares_one_probe_among_concurrent_callers(app, client):
    before = app.state.health.probes
    answers = await asyncio.gather(*(client.get("/healthz") for _ in range(50)))
    assert all(a.status_code == 200 for a in answers)
    assert json.loads(answers[0].text) == {"status": "ok", "database": "reachable"}
    assert 1 <= app.state.health.probes - before < 50


# -- request heads: bounded in size and in time (kernelindex.web.bounded_http) ---------------------

class SmallBounds(BoundedHttpToolsProtocol):
    """The serve protocol with limits a test reaches in a moment: 4 KiB heads, 0.6 s to send one."""

    max_header_bytes = 4096
    header_timeout_s = 0.6


async def _hello(scope, receive, send):
    """An application that answers everything at once, or after ?sleep=S seconds: the bounds are the server's."""
    if scope["type"] != "http":
        return
    if scope["query_string"].startswith(b"sleep="):
        await asyncio.sleep(float(scope["query_string"][6:]))
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"hello"})


@pytest.fixture
def bounded_server():
    """uvicorn with SmallBounds on a loopback port, in a thread; yields the port."""
    import threading

    import uvicorn

    from tests.serving import free_port

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(_hello, host="127.0.0.1", port=port, log_level="critical", lifespan="off",
                                           http=SmallBounds))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    yield port
    server.should_exit = True
    thread.join(timeout=10)


def _connect(port: int) -> socket.socket:
    conn = socket.create_connection(("127.0.0.1", port), timeout=5)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return conn


def _read_until_closed(conn: socket.socket, timeout: float = 5) -> bytes:
    """Everything the server sends until it closes the connection (raises if it has not in `timeout`)."""
    conn.settimeout(timeout)
    chunks = []
    while True:
        try:
            chunk = conn.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def _get(port: int, extra: bytes = b"", path: bytes = b"/") -> bytes:
    with _connect(port) as conn:
        conn.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: t\r\nConnection: close\r\n" + extra + b"\r\n")
        return _read_until_closed(conn)


def test_a_head_under_the_limit_is_answered_and_one_over_it_is_431_and_closed(bounded_server):
    assert _get(bounded_server, b"X-Pad: " + b"a" * 3000 + b"\r\n").startswith(b"HTTP/1.1 200")
    # Over the limit in one write (the 200 KB header line the issue saw answered 200), and over it in many fields.
    for extra in (b"X-Pad: " + b"a" * 200_000 + b"\r\n", b"".join(b"X-%d: %s\r\n" % (i, b"b" * 100) for i in range(60))):
        answer = _get(bounded_server, extra)
        assert answer.startswith(b"HTTP/1.1 431"), answer[:200]
        assert b"over the limit of 4096 bytes" in answer and b"connection: close" in answer.lower()
    # A request target over the limit is the same.
    assert _get(bounded_server, path=b"/" + b"p" * 10_000).startswith(b"HTTP/1.1 431")


def _trickle(conn: socket.socket, pieces, pause_s: float, give_up_s: float) -> tuple[bytes, int, float]:
    """Send `pieces` one at a time, `pause_s` apart, until the server answers or stops reading (or
    `give_up_s` passed): what it answered, how many bytes went out, and when (s since the start)."""
    started = time.monotonic()
    sent = 0
    for piece in pieces:
        if select.select([conn], [], [], 0)[0]:
            break  # the server answered (or closed)
        if time.monotonic() - started > give_up_s:
            break
        try:
            conn.sendall(piece)
        except (BrokenPipeError, ConnectionResetError):
            break
        sent += len(piece)
        time.sleep(pause_s)
    took = time.monotonic() - started
    try:
        answer = _read_until_closed(conn)
    except ConnectionResetError:
        answer = b""
    return answer, sent, took


def test_an_unterminated_header_line_is_cut_off_near_the_limit(bounded_server):
    """The issue's 24 MiB header line: the server refuses it once the limit is passed, whatever keeps coming."""
    with _connect(bounded_server) as conn:
        conn.sendall(b"GET / HTTP/1.1\r\nHost: t\r\nX-Endless: ")
        answer, sent, _ = _trickle(conn, (b"z" * 1024 for _ in range(4096)), pause_s=0.002, give_up_s=10)
    assert answer.startswith(b"HTTP/1.1 431"), answer[:200]
    # The limit, plus the read the head began in and what was in flight when the answer came.
    assert sent < 4096 + 3 * 65536, sent


def test_a_head_sent_a_byte_at_a_time_is_cut_off_at_the_time_limit(bounded_server):
    with _connect(bounded_server) as conn:
        head = b"GET / HTTP/1.1\r\nHost: t\r\nX-Slow: " + b"s" * 1000
        answer, _, took = _trickle(conn, (head[i:i + 1] for i in range(len(head))), pause_s=0.05, give_up_s=3)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"within 0.6 s" in answer
    assert 0.55 <= took < 1.5, took


def test_a_silent_connection_is_closed_at_the_time_limit_and_a_slow_application_is_not(bounded_server):
    started = time.monotonic()
    with _connect(bounded_server) as conn:
        assert _read_until_closed(conn) == b""  # nothing of a request came: nothing to answer
    assert 0.55 <= time.monotonic() - started < 1.5
    # The limit is on sending the head: an answer that takes longer than it is not cut.
    assert _get(bounded_server, path=b"/?sleep=1.2").startswith(b"HTTP/1.1 200")


def test_the_next_request_on_a_kept_connection_has_its_own_time_limit(bounded_server):
    with _connect(bounded_server) as conn:
        conn.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        conn.settimeout(5)
        assert conn.recv(4096).startswith(b"HTTP/1.1 200")
        time.sleep(0.4)  # idle, under uvicorn's keep-alive limit (5 s)
        conn.sendall(b"GET / HTTP/1.1\r\n")
        time.sleep(0.4)  # 0.8 s into the connection, 0.4 s into this head
        conn.sendall(b"Host: t\r\nConnection: close\r\n\r\n")
        assert _read_until_closed(conn).startswith(b"HTTP/1.1 200")


def test_many_slow_heads_are_all_closed_and_others_are_answered_meanwhile(bounded_server):
    slow = [_connect(bounded_server) for _ in range(40)]
    try:
        for conn in slow:
            conn.sendall(b"GET / HTTP/1.1\r\nHost: t\r\nX-S")
        latencies = []
        for _ in range(5):
            started = time.monotonic()
            assert _get(bounded_server).startswith(b"HTTP/1.1 200")
            latencies.append(time.monotonic() - started)
        assert max(latencies) < 0.5, latencies
        time.sleep(1.0)
        for conn in slow:  # all refused by now: the 408 is there to read and then the end of the stream
            assert _read_until_closed(conn, timeout=2).startswith(b"HTTP/1.1 408")
    finally:
        for conn in slow:
            conn.close()


def test_serve_runs_uvicorn_with_the_bounded_protocol(cli, monkeypatch):
    import uvicorn

    from kernelindex.web import bounded_http
    from kernelindex.web.bounded_http import UVICORN_HTTP

    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: calls.append(kwargs))
    from tests.serving import free_port

    assert cli("serve", "--port", str(free_port())) == 0
    assert calls and calls[0]["http"] == UVICORN_HTTP
    module, _, name = UVICORN_HTTP.partition(":")
    assert module == bounded_http.__name__ and getattr(bounded_http, name) is bounded_http.BoundedHttpToolsProtocol
    assert (bounded_http.MAX_HEADER_BYTES, bounded_http.HEADER_TIMEOUT_S) == (64 * 1024, 10.0)
