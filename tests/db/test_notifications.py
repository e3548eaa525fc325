"""Migration 0020's notifications: what a subscription is woken by (kernelindex.db.notifications)."""

from __future__ import annotations

import asyncio
import json

import asyncpg

from kernelindex.db.notifications import JOBS_CHANNEL, RECORD_EVENTS_CHANNEL
from kernelindex.db.urls import to_libpq_url

MARKER = '{"marker": true}'


async def heard_until_marker(listener: asyncpg.Connection, channel: str, writer: asyncpg.Connection,
                             queue: asyncio.Queue) -> list[dict]:
    """Every notification of `channel` before a marker sent after the writes: NOTIFYs arrive in commit
    order, so once the marker is here every earlier one is too."""
    await writer.execute("SELECT pg_notify($1, $2)", channel, MARKER)
    out = []
    while True:
        payload = json.loads(await asyncio.wait_for(queue.get(), 10))
        if payload == json.loads(MARKER):
            return out
        out.append(payload)


async def listening(url: str, channel: str) -> tuple[asyncpg.Connection, asyncio.Queue]:
    listener = await asyncpg.connect(to_libpq_url(url))
    queue: asyncio.Queue = asyncio.Queue()
    await listener.add_listener(channel, lambda _c, _pid, _channel, payload: queue.put_nowait(payload))
    return listener, queue


async def test_a_job_notifies_what_a_subscriber_shows_and_not_its_insert_or_heartbeat(db_url):
    listener, queue = await listening(db_url, JOBS_CHANNEL)
    writer = await asyncpg.connect(to_libpq_url(db_url))
    try:
        job_id = await writer.fetchval("""
            INSERT INTO fleet_jobs (dedupe_key, kind, workload_id, workload_revision_id, implementation_slug, hardware,
                                    queue_name, max_attempts)
            SELECT 'n-1', 'sweep', id, current_revision_id, 'torch_eager', 'cpu', 'kernelindex/cpu', 3
              FROM workloads WHERE slug = 'kernelbench-l3-p9-resnet18' RETURNING id""")
        await writer.execute("UPDATE fleet_jobs SET updated_at = now() WHERE id = $1", job_id)  # a heartbeat
        await writer.execute("UPDATE fleet_jobs SET state = 'running', worker = 'w' WHERE id = $1", job_id)
        rolled_back = writer.transaction()  # a change never committed is never told
        await rolled_back.start()
        await writer.execute("UPDATE fleet_jobs SET state = 'passed' WHERE id = $1", job_id)
        await rolled_back.rollback()
        await writer.execute("UPDATE fleet_jobs SET state = 'running' WHERE id = $1", job_id)  # as it was: nothing
        await writer.execute("UPDATE fleet_jobs SET state = 'cancelled', reason = 'r' WHERE id = $1", job_id)
        assert await heard_until_marker(listener, JOBS_CHANNEL, writer, queue) == [
            {"id": job_id, "state": "running"}, {"id": job_id, "state": "cancelled"},  # not the insert
        ]
    finally:
        await writer.close()
        await listener.close()


async def test_one_statement_of_many_record_events_is_one_notification(db_url):
    listener, queue = await listening(db_url, RECORD_EVENTS_CHANNEL)
    writer = await asyncpg.connect(to_libpq_url(db_url))
    try:
        ids = await writer.fetch("""
            INSERT INTO record_events (workload_id, workload_revision_id, configuration_key, kind, rule_version)
            SELECT w.id, w.current_revision_id, '', 'revision_changed', 'test'
              FROM workloads w, generate_series(1, 1500)
             WHERE w.current_revision_id IS NOT NULL RETURNING id, workload_id""")
        workloads = sorted({row["workload_id"] for row in ids})
        assert len(workloads) >= 2 and len(ids) == 1500 * len(workloads)
        # An insert of nothing tells nothing.
        await writer.execute("INSERT INTO record_events (workload_id, workload_revision_id, configuration_key, kind, "
                             "rule_version) SELECT id, current_revision_id, '', 'revision_changed', 'test' "
                             "FROM workloads WHERE false")
        assert await heard_until_marker(listener, RECORD_EVENTS_CHANNEL, writer, queue) == [
            {"workloads": workloads, "last": max(row["id"] for row in ids)},
        ]
    finally:
        await writer.close()
        await listener.close()
