"""perf.statement_times: every statement a process sends is timed once, by its text, whether it went
through SQLAlchemy or the asyncpg connection itself; the driver is left as it was; the tool runs a
module with its own arguments and passes on its exit status."""

from __future__ import annotations

import asyncio

import asyncpg
from sqlalchemy import text

from kernelindex.db.engine import make_engine
from kernelindex.db.urls import to_libpq_url
from perf.statement_times import StatementTimes, main, statement_key


def test_a_statement_is_keyed_on_one_line():
    assert statement_key("SELECT a,\n       b\n  FROM t  ") == "SELECT a, b FROM t"
    assert len(statement_key("SELECT " + "x, " * 100 + "y")) == 110


async def test_statements_through_sqlalchemy_and_the_driver_are_each_timed_once(empty_db_url):
    fetch = asyncpg.Connection.fetch
    times = StatementTimes()
    engine = make_engine(empty_db_url, pool_size=1, max_overflow=0)
    try:
        async with engine.connect() as connection:
            await connection.execute(text("SELECT 1"))  # the first use connects: the dialect's own set-up is not ours
            with times.timing():
                await connection.execute(text("SELECT 1"))
                await connection.execute(text("SELECT 1"))
                driver = (await connection.get_raw_connection()).driver_connection
                await driver.execute("CREATE TEMPORARY TABLE timed (a int)")
                await driver.copy_records_to_table("timed", records=[(1,), (2,)], columns=["a"])
                assert await driver.fetchval("SELECT count(*) FROM timed") == 2
            await connection.execute(text("SELECT 2"))  # after: not counted
    finally:
        await engine.dispose()
    assert dict(times.counts) == {"SELECT 1": 2, "CREATE TEMPORARY TABLE timed (a int)": 1, "COPY timed": 1,
                                  "SELECT count(*) FROM timed": 1}
    assert all(seconds > 0 for seconds in times.seconds.values())
    assert asyncpg.Connection.fetch is fetch  # the driver as it was
    report = times.report(top=2).splitlines()
    assert report[0].startswith("5 statements") and len(report) == 3


def test_main_runs_the_module_with_its_arguments_and_its_exit_status(empty_db_url, tmp_path, monkeypatch, capsys):
    (tmp_path / "statement_probe.py").write_text(
        "import asyncio, sys\nimport asyncpg\n\n"
        "async def probe(url):\n    connection = await asyncpg.connect(url)\n"
        "    print('probe got', await connection.fetchval('SELECT 40 + 2'), sys.argv[1:])\n    await connection.close()\n\n"
        "asyncio.run(probe(sys.argv[2]))\nsys.exit(3)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr("sys.argv", ["statement_times"])
    url = to_libpq_url(empty_db_url)
    assert main(["--top", "3", "-m", "statement_probe", "--top", url]) == 3
    out = capsys.readouterr().out
    assert f"probe got 42 ['--top', '{url}']" in out  # its arguments, even one named like the tool's
    assert "1x" in out and "SELECT 40 + 2" in out


async def test_statements_of_sessions_that_overlap_are_each_timed_by_their_own_connection(empty_db_url):
    times = StatementTimes()
    engine = make_engine(empty_db_url, pool_size=2, max_overflow=0)

    async def run(sql: str, after_s: float) -> None:
        async with engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
            await asyncio.sleep(after_s)
            await connection.execute(text(sql))

    try:
        with times.timing():
            # The short one starts first and ends first: a start taken from the wrong statement would
            # give it the long one's time or the other way round.
            await asyncio.gather(run("SELECT pg_sleep(0.1)", 0), run("SELECT pg_sleep(0.5)", 0.05))
    finally:
        await engine.dispose()
    assert 0.1 <= times.seconds["SELECT pg_sleep(0.1)"] < 0.4, dict(times.seconds)
    assert times.seconds["SELECT pg_sleep(0.5)"] >= 0.5, dict(times.seconds)
