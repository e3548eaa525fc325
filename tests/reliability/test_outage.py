"""A database outage while requests flow: during it every request fails fast with 503 and a clear
error (GraphQL: SERVICE_UNAVAILABLE); once PostgreSQL is back, no request fails.

The server runs against an embedded PostgreSQL of its own (perf/postgres.py), not the
suite's shared one, so that stopping it harms nothing else. perf/outage_check.py is the
longer version under load, and measures the recovery time.
"""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import pytest

from kernelindex.graphql.errors import UNAVAILABLE_MESSAGE
from perf.postgres import OwnPostgres
from perf.responses import busy_problem, ok_problem, unavailable_problem
from tests.reliability.helpers import make_token
from tests.reliability.pg import migrate_and_seed
from tests.serving import serve_in_thread

RESNET18 = "kernelbench-l3-p9-resnet18"
PAGE = {"query": f'{{ workload(slug: "{RESNET18}") {{ eligibleRunCount headline {{ label latencyDisplay }} }} }}'}
RETRACT = "mutation($id: ID!, $reason: String!) { retractRun(id: $id, reason: $reason) { ok error } }"
MAX_BACKGROUND_REQUESTS = 5000


@pytest.fixture(scope="module")
def own_postgres():
    pg = OwnPostgres()
    try:
        migrate_and_seed(pg.url)
        yield pg
    finally:
        pg.close()


@pytest.fixture
def server_on_own_postgres(own_postgres):
    from kernelindex.settings import Settings
    from kernelindex.web.app import create_app

    with serve_in_thread(create_app(Settings(), database_url=own_postgres.url)) as url:
        yield url
    if not own_postgres.is_running():
        own_postgres.start()


async def retracted_runs(url: str) -> int:
    import asyncpg

    from kernelindex.db.urls import to_libpq_url

    conn = await asyncpg.connect(to_libpq_url(url))
    try:
        return await conn.fetchval("SELECT count(*) FROM runs WHERE retracted_at IS NOT NULL")
    finally:
        await conn.close()


def request_kinds(client: httpx.Client, token: str):
    return {
        "graphql POST": lambda: client.post("/graphql", json=PAGE),
        "graphql GET": lambda: client.get("/graphql", params=PAGE),
        "graphql mutation": lambda: client.post(
            "/graphql", json={"query": RETRACT, "variables": {"id": "1", "reason": "outage test"}},
            headers={"Authorization": f"Bearer {token}"},
        ),
        "healthz": lambda: client.get("/healthz"),
        "json twin": lambda: client.get(f"/workloads/{RESNET18}.json"),
        "runs.csv": lambda: client.get("/exports/runs.csv"),
        "catalog.jsonl": lambda: client.get("/exports/catalog.jsonl"),
    }


class Background:
    """GraphQL page requests in a loop on one thread, each recorded with its start and end time.
    Bounded: it stops when told, after MAX_BACKGROUND_REQUESTS, or after 60 s."""

    def __init__(self, base_url: str):
        self.base_url = base_url
        self.records: list[tuple[float, float, int | None, dict | str]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        deadline = time.monotonic() + 60
        with httpx.Client(base_url=self.base_url, timeout=10) as client:
            while not self.stop.is_set() and len(self.records) < MAX_BACKGROUND_REQUESTS and time.monotonic() < deadline:
                started = time.monotonic()
                try:
                    response = client.post("/graphql", json=PAGE)
                    outcome = (response.status_code, response.json())
                except (httpx.HTTPError, ValueError) as exc:
                    outcome = (None, f"{type(exc).__name__}: {exc}")
                self.records.append((started, time.monotonic(), *outcome))
                time.sleep(0.005)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=20)


def test_requests_fail_with_503_during_an_outage_and_none_fail_after(own_postgres, server_on_own_postgres):
    token = asyncio.run(make_token(own_postgres.url, "runs:retract", name="outage"))
    with httpx.Client(base_url=server_on_own_postgres, timeout=10) as client, Background(server_on_own_postgres) as background:
        kinds = request_kinds(client, token)
        for kind, send in kinds.items():
            if kind != "graphql mutation":
                assert ok_problem(kind, send()) is None, kind
        time.sleep(0.2)

        stop_called = time.monotonic()
        own_postgres.stop()
        stopped = time.monotonic()
        assert not own_postgres.accepts_connections()
        for _ in range(3):
            for kind, send in kinds.items():
                started = time.monotonic()
                response = send()
                assert unavailable_problem(kind, response) is None, (kind, unavailable_problem(kind, response))
                assert busy_problem(response) is not None, kind  # never taken for the export limiter's load shedding
                assert time.monotonic() - started < 2.0, f"{kind}: the 503 took {time.monotonic() - started:.2f} s"
        time.sleep(0.3)

        start_called = time.monotonic()
        own_postgres.start()
        ready = time.monotonic()
        for _ in range(3):
            for kind, send in kinds.items():
                if kind != "graphql mutation":
                    assert ok_problem(kind, send()) is None, kind
        time.sleep(0.3)

    # Nothing the outage refused was written: the retraction never happened.
    assert asyncio.run(retracted_runs(own_postgres.url)) == 0

    records = background.records
    during = [r for r in records if r[0] >= stopped and r[1] <= start_called]
    after = [r for r in records if r[0] >= ready]
    before = [r for r in records if r[1] <= stop_called]
    assert before and during and after, (len(before), len(during), len(after))
    assert all(r[2] == 200 and "errors" not in r[3] for r in before)
    # At any time, a failure is a proper 503: never a 500, a reset connection or a hang.
    for _started, _ended, status, body in records:
        if status != 200 or "errors" in body:
            assert status == 503, (status, body)
            # A request cut off mid-flight may report each field that lost the connection: all SERVICE_UNAVAILABLE.
            assert {e["extensions"]["code"] for e in body["errors"]} == {"SERVICE_UNAVAILABLE"}, body
    assert all(r[2] == 503 for r in during)
    failed_after = [r for r in after if r[2] != 200 or "errors" in r[3]]
    assert failed_after == [], failed_after[:3]
    print(f"background: {len(before)} before, {len(during)} during (all 503), {len(after)} after (all 200); "
          f"PostgreSQL stop took {stopped - stop_called:.2f} s, start {ready - start_called:.2f} s")


async def test_a_commit_lost_with_the_database_is_a_503_in_the_shape_of_the_endpoint(client, db_url, monkeypatch):
    """The database can go away between a request's last statement and the commit at response start:
    the response becomes a 503, GraphQL-shaped on /graphql (it was a bare {"error": …} before).
    Only writes commit: a mutation here (queries and GETs are rolled back)."""
    from sqlalchemy.ext.asyncio import AsyncSession

    from kernelindex.web import app as app_module

    token = await make_token(db_url, "runs:retract", name="lost-commit")

    async def lost_commit(self):
        raise ConnectionResetError("connection reset by peer")

    monkeypatch.setattr(AsyncSession, "commit", lost_commit)
    response = await client.post("/graphql", json={"query": RETRACT, "variables": {"id": "999999", "reason": "x"}},
                                 headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 503
    body = response.json()
    assert body["data"] is None
    assert [(e["message"], e["extensions"]["code"]) for e in body["errors"]] == [(UNAVAILABLE_MESSAGE, "SERVICE_UNAVAILABLE")]
    assert body["errors"][0]["extensions"]["request_id"] == response.headers["x-request-id"]
    # A query commits nothing, so a lost commit cannot fail it.
    assert (await client.post("/graphql", json=PAGE)).status_code == 200

    # A route that lets a connection failure through, before its response: a JSON 503, not a 500.
    async def lost_connection(request, slug, version=None):
        raise ConnectionResetError("connection reset by peer")

    monkeypatch.setattr(app_module, "workload_twin", lost_connection)
    twin = await client.get(f"/workloads/{RESNET18}.json")
    assert twin.status_code == 503
    assert twin.json() == {"error": UNAVAILABLE_MESSAGE, "request_id": twin.headers["x-request-id"]}
