"""kernelindex.db.scratch: a scratch table is empty at the start of every transaction, and `emptied`
truncates it within one only when it holds rows (a TRUNCATE of an empty table costs new files)."""

from __future__ import annotations

import asyncio

from sqlalchemy import text
from sqlalchemy.ext.asyncio import async_sessionmaker

from kernelindex.db.engine import in_own_transaction, make_engine
from kernelindex.db.scratch import SCRATCH, emptied


def test_a_scratch_table_is_truncated_only_when_it_holds_rows(db_url):
    async def made(session) -> None:
        await session.execute(text(f"CREATE TEMPORARY TABLE IF NOT EXISTS scratch_a (n int PRIMARY KEY) {SCRATCH}"))
        await session.execute(text(f"CREATE TEMPORARY TABLE IF NOT EXISTS scratch_b (n int) {SCRATCH}"))

    async def files(session) -> tuple[int, int]:
        row = (await session.execute(text("SELECT pg_relation_filenode('scratch_a'), pg_relation_filenode('scratch_b')"))).one()
        return row[0], row[1]

    async def used(session) -> None:
        # Tables made by an earlier transaction (a TRUNCATE of one made in this one reuses its files).
        await session.execute(text("INSERT INTO scratch_a SELECT generate_series(1, 10)"))
        a, b = await files(session)
        await session.execute(text(emptied("scratch_a", "scratch_b")))
        assert (await session.execute(text("SELECT count(*) FROM scratch_a"))).scalar_one() == 0
        after_a, after_b = await files(session)
        # The filled table was truncated (new files), the empty one left as it was.
        assert after_a != a and after_b == b
        await session.execute(text("INSERT INTO scratch_a VALUES (1)"))
        await session.execute(text("INSERT INTO scratch_b VALUES (1), (2)"))

    async def left(session) -> int:
        return (await session.execute(text("SELECT (SELECT count(*) FROM scratch_a) + (SELECT count(*) FROM scratch_b)"))).scalar_one()

    async def in_turn() -> int:
        # One connection, so that each transaction sees the temporary tables of the one before.
        engine = make_engine(db_url, pool_size=1, max_overflow=0)
        try:
            sessions = async_sessionmaker(engine, expire_on_commit=False)
            for step in (made, used):
                async with sessions() as session, session.begin():
                    await step(session)
            async with sessions() as session, session.begin():
                return await left(session)  # the commit emptied both
        finally:
            await engine.dispose()

    assert asyncio.run(in_turn()) == 0


def test_emptied_names_each_table_once(db_url):
    statement = emptied("x_one", "x_two")
    assert statement.count("TRUNCATE x_one;") == 1 and statement.count("TRUNCATE x_two;") == 1
    assert statement.startswith("DO $$") and statement.endswith("$$")

    async def runs(session) -> int:
        await session.execute(text(f"CREATE TEMPORARY TABLE x_one (n int) {SCRATCH}"))
        await session.execute(text(f"CREATE TEMPORARY TABLE x_two (n int) {SCRATCH}"))
        await session.execute(text("INSERT INTO x_two VALUES (1)"))
        await session.execute(text(statement))
        return (await session.execute(text("SELECT count(*) FROM x_two"))).scalar_one()

    assert asyncio.run(in_own_transaction(db_url, runs)) == 0
