"""A real worker measures a submitted job while a websocket client of a server process follows it: the
job's states and the workload's record events arrive as the worker commits them (issue 29, point 4)."""

from __future__ import annotations

from kernelindex.fleet import jobs
from perf.graphql_ws import GraphQLWS
from tests.api.test_subscriptions import EVENTS, HISTORY, server_process, ws_url
from tests.fleet.conftest import candidate

JOB = "subscription ($id: ID!) { job(id: $id) { state worker run { databaseId } } }"


async def test_a_client_follows_a_worker_measuring_a_job(engine, db_url, tiny_workload, start_worker, tmp_path):
    import httpx

    from kernelindex.db.engine import make_sessionmaker

    async with make_sessionmaker(engine)() as session, session.begin():
        (result,) = await jobs.submit_implementation(
            session, workload_slug=tiny_workload, source=candidate("honest"), filename="honest.py", title="honest",
            licence="MIT", source_url=None, hardware="cpu")
    job_id = result.job.id
    with server_process(db_url, tmp_path / "serve.log") as url:
        async with GraphQLWS(ws_url(url), timeout_s=240) as ws:
            await ws.subscribe("job", JOB, {"id": str(job_id)})
            await ws.subscribe("events", EVENTS, {"w": tiny_workload})
            first = await ws.receive()
            assert first["id"] == "job" and first["payload"]["data"]["job"]["state"] == "QUEUED", first
            worker = start_worker("--until-idle", "--job-timeout", "60", name="followed")
            states, events = [], []
            while True:
                message = await ws.receive()
                assert message["type"] in ("next", "complete") and "errors" not in message.get("payload", {}), message
                if message == {"id": "job", "type": "complete"}:
                    break
                if message["id"] == "job":
                    states.append(message["payload"]["data"]["job"])
                else:
                    events.append(message["payload"]["data"]["recordEvents"])
            out, _ = worker.communicate(timeout=120)
            assert worker.returncode == 0, out
            # In order, the worker's take then its result (a state is shown once it is committed).
            assert [s["state"] for s in states] == ["RUNNING", "PASSED"], (states, out)
            assert states[0]["worker"] == "followed" and states[1]["run"] is not None
            # The record events the worker's refresh appended (committed with the PASSED state), each once,
            # oldest first, as the query lists them: those not yet received are on their way.
            async with httpx.AsyncClient(base_url=url, timeout=10) as client:
                history = (await client.post("/graphql", json={"query": HISTORY, "variables": {"w": tiny_workload}})).json()
            listed = [n["databaseId"] for n in reversed(history["data"]["workload"]["recordHistory"]["nodes"])]
            assert listed, "the measured job made no record event"
            while len(events) < len(listed):
                message = await ws.receive()
                assert message["id"] == "events" and message["type"] == "next", message
                events.append(message["payload"]["data"]["recordEvents"])
            assert [e["databaseId"] for e in events] == listed
