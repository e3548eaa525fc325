"""Subscriptions over graphql-transport-ws: a job's state and a workload's record events, written by
another process, reach a websocket client of another server process (PostgreSQL LISTEN/NOTIFY, migration
0020); the gates a query passes apply; the bounds (websockets per process, operations per websocket,
notifications per subscription) hold."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import asyncpg
import httpx
import pytest
from websockets.exceptions import ConnectionClosed

from kernelindex.db.urls import to_libpq_url
from perf.graphql_ws import GraphQLWS
from tests.api.helpers import make_token, synthetic_records, write_records
from tests.serving import free_port, serve_in_thread

REPO = Path(__file__).resolve().parents[2]
RESNET = "kernelbench-l3-p9-resnet18"
VGG = "kernelbench-l3-p12-vgg19"
JOB = "subscription ($id: ID!) { job(id: $id) { databaseId state reason worker } }"
EVENTS = "subscription ($w: String!) { recordEvents(workload: $w) { databaseId kind workloadSlug run { id } } }"
CANCEL = "mutation ($id: ID!) { cancelJob(id: $id, reason: \"not needed\") { ok job { state } } }"
HISTORY = "query ($w: String!) { workload(slug: $w) { recordHistory(first: 100) { nodes { databaseId kind } } } }"


@contextmanager
def server_process(db_url: str, log: Path, **settings: str) -> Iterator[str]:
    """`kernelindex serve` as a process of its own on a free port; yields its base URL once healthy."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELINDEX_")}
    env["KERNELINDEX_DATABASE_URL"] = db_url
    env.update({f"KERNELINDEX_{k.upper()}": v for k, v in settings.items()})
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "kernelindex.cli", "serve", "--port", str(port), "--log-level",
                                 "warning"], env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(600):
                assert proc.poll() is None, log.read_text()
                try:
                    if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                subprocess.run(["sleep", "0.1"], check=True)
            else:
                raise AssertionError(f"the server did not start: {log.read_text()}")
            yield url
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def ws_url(base: str) -> str:
    return base.replace("http://", "ws://") + "/graphql"


async def sql(db_url: str, statement: str, *args):
    conn = await asyncpg.connect(to_libpq_url(db_url))
    try:
        return await conn.fetch(statement, *args)
    finally:
        await conn.close()


async def new_job(db_url: str, slug: str = RESNET) -> int:
    rows = await sql(db_url, """
        INSERT INTO fleet_jobs (dedupe_key, kind, workload_id, workload_revision_id, implementation_slug, hardware,
                                queue_name, max_attempts)
        SELECT 'test-' || gen_random_uuid(), 'sweep', id, current_revision_id, 'torch_eager', 'cpu', 'kernelindex/cpu', 3
          FROM workloads WHERE slug = $1 RETURNING id""", slug)
    return rows[0]["id"]


async def next_data(ws: GraphQLWS, id: str) -> dict:
    message = await ws.receive()
    assert message["id"] == id and message["type"] == "next", message
    assert "errors" not in message["payload"], message
    return message["payload"]["data"]


async def test_a_jobs_states_reach_a_client_of_another_server_process(db_url, tmp_path):
    job_id = await new_job(db_url)
    operator = await make_token(db_url, "jobs:cancel", name="ops")
    with server_process(db_url, tmp_path / "a.log") as a, server_process(db_url, tmp_path / "b.log") as b:
        async with GraphQLWS(ws_url(a)) as ws:
            await ws.subscribe("1", JOB, {"id": str(job_id)})
            assert (await next_data(ws, "1"))["job"] == {"databaseId": job_id, "state": "QUEUED", "reason": None, "worker": None}
            # A worker's take, as its SQL does it, committed by this (third) process.
            await sql(db_url, "UPDATE fleet_jobs SET state = 'running', worker = 'w1', attempts = 1, started_at = now() "
                              "WHERE id = $1", job_id)
            assert (await next_data(ws, "1"))["job"]["state"] == "RUNNING"
            # A heartbeat changes nothing a subscriber shows: no message for it (the next one is the cancel's).
            await sql(db_url, "UPDATE fleet_jobs SET updated_at = now() WHERE id = $1", job_id)
            # The listening connection lost: what is told meanwhile is re-read once it listens again.
            ended = await sql(db_url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                      "WHERE application_name = 'kernelindex-notifications'")
            assert [row[0] for row in ended] == [True, True]  # each server process's one listener
            # Cancelled through the other server process's API.
            async with httpx.AsyncClient(base_url=b, timeout=10) as client:
                answer = (await client.post("/graphql", json={"query": CANCEL, "variables": {"id": str(job_id)}},
                                            headers={"Authorization": f"Bearer {operator}"})).json()
            assert answer["data"]["cancelJob"] == {"ok": True, "job": {"state": "CANCELLED"}}
            last = (await next_data(ws, "1"))["job"]
            assert last["state"] == "CANCELLED" and "(ops): not needed" in last["reason"]
            # A final state completes the subscription.
            assert await ws.receive() == {"id": "1", "type": "complete"}

            # No such job: null, then complete (the query's null).
            await ws.subscribe("2", JOB, {"id": "999999"})
            assert await next_data(ws, "2") == {"job": None}
            assert await ws.receive() == {"id": "2", "type": "complete"}


async def test_a_workloads_record_events_as_an_import_writes_them(db_url, tmp_path):
    with server_process(db_url, tmp_path / "a.log") as a, server_process(db_url, tmp_path / "b.log") as b:
        async with GraphQLWS(ws_url(a)) as ws:
            await ws.subscribe("resnet", EVENTS, {"w": RESNET})
            await ws.subscribe("vgg", EVENTS, {"w": VGG})
            # Both subscribed before the write (a subscription starts after the newest event it finds).
            async with httpx.AsyncClient(base_url=b, timeout=10) as client:
                before = (await client.post("/graphql", json={"query": HISTORY, "variables": {"w": RESNET}})).json()
            # Runs written and records refreshed (record_events by COPY) in one transaction of this process.
            await write_records(db_url, synthetic_records(6, RESNET))
            async with httpx.AsyncClient(base_url=b, timeout=10) as client:
                after = (await client.post("/graphql", json={"query": HISTORY, "variables": {"w": RESNET}})).json()
            known = {n["databaseId"] for n in before["data"]["workload"]["recordHistory"]["nodes"]}
            new = [n for n in reversed(after["data"]["workload"]["recordHistory"]["nodes"]) if n["databaseId"] not in known]
            assert new, "the import made no record event to follow"
            received = [(await next_data(ws, "resnet"))["recordEvents"] for _ in new]
            # Every new event, oldest first, as the query shows it.
            assert [(e["databaseId"], e["kind"]) for e in received] == [(n["databaseId"], n["kind"]) for n in new]
            assert {e["workloadSlug"] for e in received} == {RESNET}
            # The other workload's subscription was told nothing of these: its first message is its own event.
            rows = await sql(db_url, "INSERT INTO record_events (workload_id, workload_revision_id, configuration_key, kind, "
                                     "rule_version) SELECT id, current_revision_id, '', 'revision_changed', 'test' "
                                     "FROM workloads WHERE slug = $1 RETURNING id", VGG)
            first = (await next_data(ws, "vgg"))["recordEvents"]
            assert (first["databaseId"], first["kind"], first["workloadSlug"]) == (rows[0]["id"], "REVISION_CHANGED", VGG)


async def test_an_unknown_workload_is_bad_user_input(db_url, tmp_path):
    with server_process(db_url, tmp_path / "a.log") as a:
        async with GraphQLWS(ws_url(a)) as ws:
            await ws.subscribe("1", EVENTS, {"w": "no-such-workload"})
            message = await ws.receive()
            assert message["type"] == "next" and message["payload"]["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
            assert await ws.receive() == {"id": "1", "type": "complete"}


@contextmanager
def app_server(db_url: str, **settings) -> Iterator[str]:
    from kernelindex.settings import Settings
    from kernelindex.web.app import create_app

    with serve_in_thread(create_app(Settings(**settings), database_url=db_url)) as url:
        yield url


async def test_the_gates_of_a_query_apply(db_url, tmp_path):
    from kernelindex.web.persisted import sha256_hex

    job_id = await new_job(db_url)
    registered = "subscription Follow($id: ID!) { job(id: $id) { state } }"
    operations = tmp_path / "operations"
    operations.mkdir()
    (operations / "follow.graphql").write_text(registered)
    with app_server(db_url, persisted_only=True, persisted_query_files=[operations]) as url:
        # Over HTTP, a document not registered is refused…
        async with httpx.AsyncClient(base_url=url, timeout=10) as client:
            http = (await client.post("/graphql", json={"query": "{ job(id: \"1\") { state } }"})).json()
        assert http["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_ALLOWED"
        async with GraphQLWS(ws_url(url)) as ws:
            # … and over the websocket alike, with the same code.
            await ws.subscribe("1", JOB, {"id": str(job_id)})
            refused = await ws.receive()
            assert refused["type"] == "error" and refused["payload"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_ALLOWED"
            # The registered document runs, sent whole or by its hash.
            await ws.subscribe("2", registered, {"id": str(job_id)})
            assert await next_data(ws, "2") == {"job": {"state": "QUEUED"}}
            await ws.subscribe("3", None, {"id": str(job_id)},
                               extensions={"persistedQuery": {"version": 1, "sha256Hash": sha256_hex(registered)}})
            assert await next_data(ws, "3") == {"job": {"state": "QUEUED"}}

    with app_server(db_url, max_query_depth=2) as url:
        async with GraphQLWS(ws_url(url)) as ws:
            # Queries and mutations go over HTTP, where each is one request and one transaction.
            await ws.subscribe("1", "{ job(id: \"1\") { state } }")
            refused = await ws.receive()
            assert refused["type"] == "error" and "POST queries and mutations" in refused["payload"][0]["message"]
            # The schema's limits are a query's: too deep is refused before it runs.
            await ws.subscribe("2", "subscription ($id: ID!) { job(id: $id) { workload { implementations { slug } } } }",
                               {"id": str(job_id)})
            refused = await ws.receive()
            assert refused["type"] == "error" and refused["payload"][0]["extensions"]["code"] == "QUERY_TOO_COMPLEX"


async def test_websockets_and_operations_are_bounded(db_url):
    job_id = await new_job(db_url)
    with app_server(db_url, max_websocket_connections=1, max_subscriptions_per_connection=1) as url:
        async with GraphQLWS(ws_url(url)) as ws:
            await ws.subscribe("1", JOB, {"id": str(job_id)})
            assert (await next_data(ws, "1"))["job"]["state"] == "QUEUED"
            # A second operation on the same websocket is over its bound.
            await ws.subscribe("2", JOB, {"id": str(job_id)})
            refused = await ws.receive()
            assert refused == {"id": "2", "type": "error", "payload": [{"message": "Subscription limit reached"}]}
            # A second websocket is over the process's bound: closed at once with 1013 (try again later).
            with pytest.raises(ConnectionClosed) as closed:
                async with GraphQLWS(ws_url(url)):
                    pass
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013
            assert "1 websockets at most" in closed.value.rcvd.reason
            # /metrics says so.
            async with httpx.AsyncClient(base_url=url, timeout=10) as client:
                text = (await client.get("/metrics")).text
            figures = {line.split("{")[0]: line.rsplit(" ", 1)[1] for line in text.splitlines()
                       if line.startswith("kernelindex_subscriptions_")}
            assert figures == {"kernelindex_subscriptions_websockets": "1", "kernelindex_subscriptions_websockets_refused_total": "1",
                               "kernelindex_subscriptions_websockets_stalled_total": "0",
                               "kernelindex_subscriptions_subscriptions": "1", "kernelindex_subscriptions_notifications_total": "0",
                               "kernelindex_subscriptions_overflows_total": "0",
                               # 1 once the LISTEN connection holds (it opens beside start-up, not before it).
                               "kernelindex_subscriptions_listening": figures["kernelindex_subscriptions_listening"]}
        # Once the first has gone, a websocket is served again.
        for _ in range(50):
            try:
                async with GraphQLWS(ws_url(url)) as again:
                    await again.subscribe("1", JOB, {"id": str(job_id)})
                    assert (await next_data(again, "1"))["job"]["state"] == "QUEUED"
                break
            except ConnectionClosed:  # the server has not yet seen the first one close
                await asyncio.sleep(0.1)
        else:
            raise AssertionError("no websocket served after the first closed")


async def test_a_subscription_that_falls_behind_is_ended_with_an_error(db_url):
    """The per-subscription queue: one notification more than it holds ends the subscription with
    SUBSCRIPTION_OVERFLOW (never a longer queue, never a silent gap)."""
    from kernelindex.db.engine import make_engine, make_sessionmaker
    from kernelindex.db.notifications import JOBS_CHANNEL, Notice, Notifications
    from kernelindex.graphql.context import Context
    from kernelindex.graphql.schema import build_schema
    from kernelindex.settings import Settings
    from tests.conftest import FIXED_NOW

    job_id = await new_job(db_url)
    settings = Settings()
    engine = make_engine(db_url)
    notifications = Notifications(db_url, queue_size=2)  # not listening: the notices are published by hand
    try:
        context = Context(session=make_sessionmaker(engine)(), now=FIXED_NOW, settings=settings, notifications=notifications)
        stream = await build_schema(settings).subscribe(JOB, variable_values={"id": str(job_id)}, context_value=context)
        assert not isinstance(stream, type(None))
        first = await stream.__anext__()  # type: ignore[union-attr]
        assert first.data == {"job": {"databaseId": job_id, "state": "QUEUED", "reason": None, "worker": None}}
        (subscriber,) = notifications.subscribers
        # While the client has not taken the next message, three notices come for a queue of two.
        for _ in range(3):
            notifications.publish(Notice(channel=JOBS_CHANNEL, payload={"id": job_id, "state": "queued"}))
        assert subscriber.overflowed and notifications.overflows == 1
        ended = await stream.__anext__()  # type: ignore[union-attr]
        assert ended.errors and ended.errors[0].extensions["code"] == "SUBSCRIPTION_OVERFLOW"
        assert "fell 2 notifications behind" in ended.errors[0].message
        # Ended: it is no longer among the process's subscribers.
        assert not notifications.subscribers
        await context.session.close()
    finally:
        await engine.dispose()


async def test_the_frontend_examples_run(db_url):
    """examples/operations/live.graphql, sent as a client assembles it (with the fragments it spreads)."""
    from graphql import FragmentDefinitionNode, OperationDefinitionNode, print_ast

    from tests.api.test_frontend_tooling import documents, with_fragments

    parsed = documents()
    fragments = {d.name.value: d for doc in parsed.values() for d in doc.definitions if isinstance(d, FragmentDefinitionNode)}
    live = next(doc for path, doc in parsed.items() if path.name == "live.graphql")
    sent = print_ast(with_fragments(live, fragments))
    names = [d.name.value for d in live.definitions if isinstance(d, OperationDefinitionNode) and d.name]
    assert names == ["JobLive", "WorkloadRecordEventsLive"]
    job_id = await new_job(db_url)
    with app_server(db_url) as url:
        async with GraphQLWS(ws_url(url)) as ws:
            await ws.send({"id": "job", "type": "subscribe",
                           "payload": {"query": sent, "operationName": "JobLive", "variables": {"id": str(job_id)}}})
            job = (await next_data(ws, "job"))["job"]
            assert (job["databaseId"], job["state"], job["workload"]["slug"]) == (job_id, "QUEUED", RESNET)
            await ws.send({"id": "events", "type": "subscribe", "payload": {
                "query": sent, "operationName": "WorkloadRecordEventsLive", "variables": {"slug": RESNET}}})
            await write_records(db_url, synthetic_records(2, RESNET))
            event = (await next_data(ws, "events"))["recordEvents"]
            assert event["workloadSlug"] == RESNET and event["words"]


async def test_a_subscription_over_http_is_refused_not_answered_null(db_url):
    job_id = await new_job(db_url)
    with app_server(db_url) as url:
        async with httpx.AsyncClient(base_url=url, timeout=10) as client:
            for accept in ("application/json", "application/graphql-response+json"):
                response = await client.post("/graphql", json={"query": JOB, "variables": {"id": str(job_id)}},
                                             headers={"accept": accept})
                error = response.json()["errors"][0]
                assert error["extensions"]["code"] == "BAD_REQUEST" and "websocket" in error["message"]
                assert response.status_code == (400 if accept == "application/graphql-response+json" else 200)


async def test_a_browsers_websocket_from_another_origin_needs_cors_allowed_origins(db_url):
    from websockets.exceptions import InvalidStatus

    job_id = await new_job(db_url)
    with app_server(db_url, cors_allowed_origins=["https://app.example.org"]) as url:
        with pytest.raises(InvalidStatus) as refused:
            async with GraphQLWS(ws_url(url), origin="https://evil.example.com"):
                pass
        assert refused.value.response.status_code == 403
        async with GraphQLWS(ws_url(url), origin="https://app.example.org") as ws:
            await ws.subscribe("1", JOB, {"id": str(job_id)})
            assert (await next_data(ws, "1"))["job"]["state"] == "QUEUED"


async def test_a_wake_takes_every_notice_waiting():
    """A notice only wakes a subscription, whose re-read covers every change committed before it: the
    notices that came while it was busy are taken with the first (one re-read, and no count against the
    queue's bound once read), and a RESYNC among them is what is returned."""
    from kernelindex.db.notifications import JOBS_CHANNEL, RESYNC, Notice, Notifications

    notifications = Notifications("postgresql://unused/x", queue_size=5)  # not listening: published by hand
    with notifications.subscribe(JOBS_CHANNEL, lambda payload: True) as subscriber:
        for n in range(3):
            notifications.publish(Notice(channel=JOBS_CHANNEL, payload={"id": n}))
        assert (await subscriber.next()).payload == {"id": 0} and subscriber.queue.empty()
        notifications.publish(Notice(channel=JOBS_CHANNEL, payload={"id": 3}))
        notifications.publish(RESYNC)
        notifications.publish(Notice(channel=JOBS_CHANNEL, payload={"id": 4}))
        assert (await subscriber.next()) is RESYNC and subscriber.queue.empty()
        # Five more fit again: the bound counts notices not yet read, not all since subscribing.
        for n in range(5):
            notifications.publish(Notice(channel=JOBS_CHANNEL, payload={"id": n}))
        assert not subscriber.overflowed and notifications.overflows == 0


async def test_closing_the_listener_ends_it_even_when_a_cancellation_is_swallowed():
    """Python 3.11's asyncio.wait_for can swallow a cancellation that arrives as its inner wait completes; the
    listener then went on checking its connection while close() waited forever (a CI run hung in an app's
    shutdown). A loop that swallows every cancellation, as that race does once, still ends at close()."""
    from kernelindex.db.notifications import Notifications

    class Swallowing(Notifications):
        swallowed = 0

        async def _run(self) -> None:
            while not self._closing:
                try:
                    await asyncio.sleep(0.05)
                except asyncio.CancelledError:
                    self.swallowed += 1  # the race: the cancellation is lost and the loop goes on

    notifications = Swallowing("postgresql://unused/x", queue_size=1)
    notifications.start()
    await asyncio.sleep(0.1)
    await asyncio.wait_for(notifications.close(), timeout=10)
    assert notifications.swallowed >= 1 and notifications._task is None
