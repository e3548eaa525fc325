"""The one lock every writer of the index takes first in its transaction.

Ingest batches, their deferred record events, catalogue lines, suite snapshots and the GraphQL
mutations that refresh records all write the same rows (runs, cohort records, record events,
workload revisions), in orders that differ by path. Row locks taken in different orders by two
transactions deadlock (two overlapping `ingest runs` did: one refreshing its record events while
the other wrote a batch). So every such transaction takes this transaction-scoped advisory lock
before its first write: writers of the index go one at a time, readers are never blocked.

One key for all of them, not one per path: two keys taken in different orders would deadlock too.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

INDEX_WRITE_LOCK_KEY = 7_311_001


async def hold_index_writes(session: AsyncSession) -> None:
    """Wait for, then hold until the transaction ends, the index's write lock. Re-entrant: a
    transaction that already holds it (a savepoint inside --strict's one transaction) passes."""
    await session.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": INDEX_WRITE_LOCK_KEY})
