"""Plain SQL on a test database, outside the app's engine (asyncpg, one connection a call): the migration
tests read and write rows the way an operator's psql would."""

from __future__ import annotations

import asyncio

import asyncpg

from kernelindex.db.urls import to_libpq_url


async def fetch(db_url: str, sql: str, *args):
    conn = await asyncpg.connect(to_libpq_url(db_url))
    try:
        return await conn.fetch(sql, *args)
    finally:
        await conn.close()


def run_sql(db_url: str, sql: str, *args):
    """fetch() from synchronous code (a test without an event loop)."""
    return asyncio.run(fetch(db_url, sql, *args))
