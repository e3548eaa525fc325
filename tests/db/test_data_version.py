"""The data version: moved once by every committed writing transaction, on every table the API shows."""

from __future__ import annotations

import asyncpg
import pytest

from kernelindex.db.migrate import upgrade
from kernelindex.db.urls import to_libpq_url

NOT_VERSIONED = {"alembic_version", "data_version", "api_tokens"}


async def _version(conn) -> int:
    return await conn.fetchval("SELECT version FROM data_version WHERE id = 1")


@pytest.fixture
async def conn(db_url):
    connection = await asyncpg.connect(to_libpq_url(db_url))
    yield connection
    await connection.close()


async def test_every_table_but_tokens_moves_the_version(conn):
    tables = {r["tablename"] for r in await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
    triggered = {r["t"] for r in await conn.fetch(
        "SELECT DISTINCT event_object_table AS t FROM information_schema.triggers WHERE trigger_name = 'bump_data_version'")}
    assert triggered == tables - NOT_VERSIONED


async def test_one_bump_per_committed_transaction(conn):
    start = await _version(conn)
    async with conn.transaction():
        await conn.execute("UPDATE hardware SET sku = sku WHERE id IN (SELECT id FROM hardware LIMIT 2)")
        await conn.execute("UPDATE implementations SET title = title")
        await conn.execute("UPDATE workloads SET name = name")
    assert await _version(conn) == start + 1


async def test_reads_and_rolled_back_writes_leave_it(conn):
    start = await _version(conn)
    await conn.fetch("SELECT * FROM runs LIMIT 5")
    tx = conn.transaction()
    await tx.start()
    await conn.execute("UPDATE workloads SET name = name")
    await tx.rollback()
    assert await _version(conn) == start


async def test_token_use_leaves_it(conn):
    start = await _version(conn)
    await conn.execute("UPDATE api_tokens SET last_used_at = now()")
    assert await _version(conn) == start


def test_a_fresh_database_starts_at_one(empty_db_url):
    import asyncio

    upgrade(empty_db_url)

    async def version() -> int:
        conn = await asyncpg.connect(to_libpq_url(empty_db_url))
        try:
            return await _version(conn)
        finally:
            await conn.close()

    assert asyncio.run(version()) == 1
