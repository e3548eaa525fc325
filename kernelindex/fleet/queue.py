"""The job queue: procrastinate, one queue per kind of hardware, in the index's own database.

Deferring goes through procrastinate's own SQL function (``procrastinate_defer_jobs_v1``, what its
connector calls) on the caller's session, so that a submission, its ``fleet_jobs`` row and the queue
entry commit or roll back together: a job on the queue always has its row, and the other way round.
The worker side (fetching, heartbeats, retries) is procrastinate's worker over psycopg 3
(kernelindex.fleet.worker).
"""

from __future__ import annotations

import json
import re

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

# The one task the fleet runs: measure the fleet job whose id it is given.
TASK_NAME = "kernelindex.measure"
# procrastinate's queue names are varchar(128).
_QUEUE_PREFIX = "kernelindex/"
CPU = "cpu"

_DEFER = text(
    "SELECT unnest(procrastinate_defer_jobs_v1(ARRAY[ROW(:queue, :task, 0, NULL, :lock, CAST(:args AS jsonb), NULL)"
    "::procrastinate_job_to_defer_v1])) AS id"
)


def queue_for(hardware: str) -> str:
    """The queue of a kind of hardware: 'cpu', or a hardware SKU of the catalogue ('NVIDIA H200 SXM 141GB').
    Every worker on that SKU listens to it, and only to it."""
    name = _QUEUE_PREFIX + re.sub(r"\s+", " ", hardware.strip())
    if len(name) > 128:
        raise ValueError(f"hardware name too long for a queue: {hardware[:40]!r}…")
    return name


def hardware_of_queue(queue: str) -> str:
    return queue.removeprefix(_QUEUE_PREFIX)


async def defer(session: AsyncSession, *, queue: str, job_id: int, lock: str) -> int:
    """Put fleet job ``job_id`` on ``queue`` in the session's transaction; procrastinate's job id.
    ``lock`` is procrastinate's queueing lock (at most one waiting entry per key): the fleet job's
    dedupe key, so even a second row could never queue the same measurement twice."""
    row = await session.execute(
        _DEFER, {"queue": queue, "task": TASK_NAME, "lock": lock, "args": json.dumps({"job_id": job_id})}
    )
    return int(row.scalar_one())
