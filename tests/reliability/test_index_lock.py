"""Every writer of the index takes the one index lock before its first write (kernelindex.db.locks):
while another transaction holds it, each path waits instead of taking row locks in its own order,
which is what let two overlapping ingests deadlock."""

from __future__ import annotations

import asyncpg
import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.db.locks import INDEX_WRITE_LOCK_KEY
from kernelindex.db.urls import to_libpq_url
from kernelindex.ingest.catalog import apply_catalog
from kernelindex.ingest.records import RunRecord
from kernelindex.ingest.workloads import WorkloadSpec, record_snapshot
from kernelindex.ingest.writer import RunWriter
from tests.api.helpers import synthetic_records


async def _write_runs(session):
    await RunWriter().write(session, [RunRecord(synthetic_records(1)[0], "lock-test", "line 1")])


async def _record_events(session):
    await RunWriter(defer_events=True).record_events(session)


async def _catalogue(session):
    line = {"format": "kernelindex.hardware/1", "sku": "Lock Test GPU", "short_name": "LockTest", "family": "LockTest", "vendor": "Test"}
    await apply_catalog(session, [("line 1", line)])


async def _snapshot(session):
    spec = WorkloadSpec(suite="locktest", level=1, problem_number=1, name="Lock", reference_source="x = 1\n")
    await record_snapshot(session, "locktest", "rev-1", None, [spec], complete=True)


@pytest.mark.parametrize("path", [_write_runs, _record_events, _catalogue, _snapshot], ids=lambda f: f.__name__.strip("_"))
async def test_each_writer_waits_for_the_index_lock(db_url, path):
    holder = await asyncpg.connect(to_libpq_url(db_url))
    engine = make_engine(db_url, pool_size=1, max_overflow=0)
    try:
        await holder.execute("SELECT pg_advisory_lock($1)", INDEX_WRITE_LOCK_KEY)
        async with make_sessionmaker(engine)() as session:
            await session.execute(text("SET LOCAL lock_timeout = '300ms'"))
            with pytest.raises(DBAPIError, match="lock timeout"):
                await path(session)
            await session.rollback()
        # Released, the same path goes through.
        await holder.execute("SELECT pg_advisory_unlock($1)", INDEX_WRITE_LOCK_KEY)
        async with make_sessionmaker(engine)() as session:
            await session.execute(text("SET LOCAL lock_timeout = '5s'"))
            await path(session)
            await session.rollback()
    finally:
        await holder.close()
        await engine.dispose()
