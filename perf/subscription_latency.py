"""Subscription fan-out latency (not a test): from a job's state change committed by one process to its
receipt by a websocket client of another server process, p50/p95 over N changes.

    python -m perf.subscription_latency [--changes 50] [--cancels 20]

A temporary embedded PostgreSQL; two `kernelindex serve` processes on it (A migrated and seeded, B on
the same database). A websocket client (graphql-transport-ws, perf.graphql_ws) subscribes to
`job(id:)` on A. Then:

- worker: this script (a third process, as a fleet worker is) commits `--changes` state changes of the
  job, one at a time, by an UPDATE in autocommit as the worker's own SQL does (running ↔ queued, the
  attempts counted up); each is timed from sending the UPDATE to the client's receipt of the new
  state on A: the statement and its commit, the trigger's NOTIFY, A's listener, the subscription's
  re-read of the job and the message over the websocket.
- cancelJob: `--cancels` jobs, each subscribed on A, cancelled by a POST of cancelJob to B; timed from
  sending the POST to the CANCELLED state's receipt on A (B's request, its commit, then as above).

Five changes are made first and not counted. Wall time on one machine (perf_counter, the client's clock).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import asyncpg
import httpx

from kernelindex.db.embedded import temporary_embedded
from kernelindex.db.urls import to_libpq_url
from perf.graphql_ws import GraphQLWS
from perf.server import Server

WORKLOAD = "kernelbench-l3-p9-resnet18"
WARMUP = 5
JOB = "subscription ($id: ID!) { job(id: $id) { databaseId state attempts } }"
CANCEL = "mutation ($id: ID!) { cancelJob(id: $id) { ok } }"
NEW_JOB = """
INSERT INTO fleet_jobs (dedupe_key, kind, workload_id, workload_revision_id, implementation_slug, hardware, queue_name,
                        max_attempts)
SELECT 'perf-' || gen_random_uuid(), 'sweep', id, current_revision_id, 'torch_eager', 'cpu', 'kernelindex/cpu', 1000000
  FROM workloads WHERE slug = $1 RETURNING id
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def report(name: str, ms: list[float]) -> None:
    print(f"{name:<44} n={len(ms):<4} p50 {percentile(ms, 0.5):7.2f} ms  p95 {percentile(ms, 0.95):7.2f} ms  "
          f"mean {statistics.fmean(ms):7.2f} ms  max {max(ms):7.2f} ms")


async def next_job(ws: GraphQLWS, id: str) -> dict:
    message = await ws.receive()
    if message.get("type") != "next" or message.get("id") != id or "errors" in message["payload"]:
        raise RuntimeError(f"unexpected message: {message}")
    return message["payload"]["data"]["job"]


async def worker_changes(db: asyncpg.Connection, ws_url: str, changes: int) -> list[float]:
    job_id = await db.fetchval(NEW_JOB, WORKLOAD)
    out = []
    async with GraphQLWS(ws_url) as ws:
        await ws.subscribe("job", JOB, {"id": str(job_id)})
        assert (await next_job(ws, "job"))["state"] == "QUEUED"
        for i in range(WARMUP + changes):
            state = "running" if i % 2 == 0 else "queued"
            start = time.perf_counter()
            await db.execute("UPDATE fleet_jobs SET state = $2, attempts = attempts + 1, updated_at = now() WHERE id = $1",
                             job_id, state)
            job = await next_job(ws, "job")
            elapsed = (time.perf_counter() - start) * 1000
            if (job["state"], job["attempts"]) != (state.upper(), i + 1):
                raise RuntimeError(f"change {i}: received {job}")
            if i >= WARMUP:
                out.append(elapsed)
    return out


async def cancels(db: asyncpg.Connection, ws_url: str, b_url: str, token: str, count: int) -> list[float]:
    out = []
    async with GraphQLWS(ws_url) as ws, httpx.AsyncClient(base_url=b_url, timeout=10,
                                                          headers={"Authorization": f"Bearer {token}"}) as client:
        for i in range(WARMUP + count):
            job_id = await db.fetchval(NEW_JOB, WORKLOAD)
            await ws.subscribe(str(i), JOB, {"id": str(job_id)})
            assert (await next_job(ws, str(i)))["state"] == "QUEUED"
            start = time.perf_counter()
            answer = (await client.post("/graphql", json={"query": CANCEL, "variables": {"id": str(job_id)}})).json()
            job = await next_job(ws, str(i))
            elapsed = (time.perf_counter() - start) * 1000
            if answer.get("data") != {"cancelJob": {"ok": True}} or job["state"] != "CANCELLED":
                raise RuntimeError(f"cancel {i}: {answer} / {job}")
            if (await ws.receive())["type"] != "complete":
                raise RuntimeError("the subscription did not complete after CANCELLED")
            if i >= WARMUP:
                out.append(elapsed)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--changes", type=int, default=50, help="state changes committed by this process (default 50)")
    parser.add_argument("--cancels", type=int, default=20, help="jobs cancelled through server B (default 20; 0: none)")
    args = parser.parse_args()
    with temporary_embedded("kernelindex-subs-perf-") as pg:
        url = pg.url
        with Server(database_url=url, migrate_and_seed=True) as a, Server(database_url=url, migrate_and_seed=False) as b:
            token = a.kernelindex("token", "create", "--scope", "jobs:cancel", "--name", "perf").strip().split()[-1]
            ws_url = a.url.replace("http://", "ws://") + "/graphql"

            async def run() -> None:
                db = await asyncpg.connect(to_libpq_url(url))
                try:
                    report("worker UPDATE (3rd process) → client on A", await worker_changes(db, ws_url, args.changes))
                    if args.cancels:
                        report("cancelJob POST to B → client on A", await cancels(db, ws_url, b.url, token, args.cancels))
                finally:
                    await db.close()

            asyncio.run(run())


if __name__ == "__main__":
    main()
