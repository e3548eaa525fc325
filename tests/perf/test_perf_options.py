"""perf.page_split's graphql-core share (what counts as graphql-core's own time) and perf.api_speed's
--targets names, on made-up inputs."""

from __future__ import annotations

import os

import pytest

from perf.api_speed import TARGETS, target_labels
from perf.page_split import _graphql_core_files, core_self_time


def test_graphql_core_self_time_counts_its_functions_and_the_builtins_it_calls():
    core = _graphql_core_files()
    executor = (os.path.join(core, "execution", "executor.py"), 10, "complete_leaf_value")
    ours = ("/srv/kernelindex/graphql/plan.py", 20, "run_leaf")
    isinstance_ = ("~", 0, "<built-in method builtins.isinstance>")
    # cProfile's raw stats: func -> (primitive calls, calls, self time, cumulative, {caller: (.., .., time, ..)})
    stats = {
        executor: (1, 1, 0.002, 0.003, {ours: (1, 1, 0.002, 0.003)}),
        ours: (1, 1, 0.005, 0.010, {}),
        isinstance_: (3, 3, 0.004, 0.004, {executor: (1, 1, 0.001, 0.001), ours: (2, 2, 0.003, 0.003)}),
    }
    total, graphql_core, top = core_self_time(stats, core)
    assert total == pytest.approx(0.011)
    assert graphql_core == pytest.approx(0.003)  # its own 2 ms and the 1 ms of isinstance it called
    assert top[0] == (pytest.approx(0.002), os.path.join("execution", "executor.py") + ":complete_leaf_value")


def test_api_speed_targets_by_short_name():
    assert target_labels("uncached") == ["api, cache off"]
    assert target_labels("api, floor") == ["api", "floor"]
    assert len(target_labels(",".join(TARGETS))) == 4
    with pytest.raises(SystemExit):
        target_labels("api, cache off")  # a label is not a short name


def test_importing_the_perf_tools_tests_use_changes_no_environment_variable():
    # page_split once turned the response cache off at import, for every later test of the process.
    import subprocess
    import sys

    code = ("import os; before = dict(os.environ); import perf.page_split, perf.api_speed; "
            "changed = sorted(k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k)); "
            "print(changed); raise SystemExit(1 if changed else 0)")
    # Without the KERNELINDEX_ variables: this process imported those modules too, and one that sets a variable
    # here would hide it from the child.
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELINDEX_")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_floors_sql_is_every_statement_the_request_ran_the_drivers_own_too(db_url, monkeypatch):
    """perf.api_speed's floor runs the SQL an executed request ran. Caught where asyncpg runs it: the
    statements the page runs by the driver itself (kernelindex.db.driver) never reach SQLAlchemy's
    cursor events, and a floor without them answered 3,000 pages a second from next to no SQL."""
    import asyncio

    from kernelindex.db import driver
    from kernelindex.web.twins import WORKLOAD_PAGE_QUERY
    from perf.api_speed import capture_sql

    # The driver compiles each statement on its first run in a process: emptied, it holds this request's alone.
    monkeypatch.setattr(driver, "_COMPILED", {})
    sql, bodies, counts = asyncio.run(capture_sql(db_url, {"page": (WORKLOAD_PAGE_QUERY, {"slug": "kernelbench-l3-p9-resnet18"})}))
    statements = {statement for statement, _ in sql["page"]}
    by_driver = {compiled.sql for compiled in driver._COMPILED.values() if compiled is not None}
    assert by_driver and by_driver <= statements
    assert counts["page"] == len(sql["page"]) > len(by_driver)  # SQLAlchemy's statements are there too
    assert b'"workload"' in bodies["page"]


def test_ingest_speed_repeats_give_each_rounds_ratio_and_their_median():
    from perf.ingest_speed import repeats_summary

    def part(label: str, wall: float) -> dict:
        return {"label": label, "wall_s": wall}

    rounds = [
        {"floor_first": part("floor", 2.0), "first": part("ingest runs (all new)", 6.0),
         "floor_second": part("floor again", 1.0), "second": part("ingest runs again", 0.5)},
        {"floor_first": part("floor", 4.0), "first": part("ingest runs (all new)", 8.0),
         "floor_second": part("floor again", 2.0), "second": part("ingest runs again", 0.6)},
        {"floor_first": part("floor", 3.0), "first": part("ingest runs (all new)", 7.5),
         "floor_second": part("floor again", 1.0), "second": part("ingest runs again", 0.4)},
    ]
    lines = repeats_summary(rounds).splitlines()
    assert lines[0].startswith("3 rounds")
    # Ratios 3.0, 2.0 and 2.5: the median is the middle one, not the ratio of the median walls (7.5 / 3.0).
    assert lines[1] == ("  ingest runs (all new): median 2.50× its floor "
                        "(6.00/2.00 s 3.00×, 8.00/4.00 s 2.00×, 7.50/3.00 s 2.50×)")
    assert lines[2].startswith("  ingest runs again: median 0.40× its floor (0.50/1.00 s 0.50×, 0.60/2.00 s 0.30×")
    assert len(lines) == 3  # no dry run was timed: no line for it


def test_ingest_speed_rounds_start_from_copies_of_the_prepared_database(db_url):
    import asyncio

    import asyncpg

    from kernelindex.db.urls import to_libpq_url
    from perf.ingest_speed import _copies
    from tests.conftest import _admin

    async def prepare() -> None:
        conn = await asyncpg.connect(to_libpq_url(db_url))
        try:
            await conn.execute("CREATE TABLE prepared_marker (n int); INSERT INTO prepared_marker VALUES (42)")
        finally:
            await conn.close()

    async def marker(url: str) -> tuple[int, int]:
        conn = await asyncpg.connect(to_libpq_url(url))
        try:
            return await conn.fetchval("SELECT n FROM prepared_marker"), await conn.fetchval("SELECT count(*) FROM hardware")
        finally:
            await conn.close()

    asyncio.run(prepare())
    copies = asyncio.run(_copies(db_url, 2))
    try:
        assert len(set(copies)) == 2 and db_url not in copies
        seeded = asyncio.run(marker(db_url))[1]
        assert seeded > 0
        for url in copies:
            assert asyncio.run(marker(url)) == (42, seeded)
    finally:
        for url in copies:
            name = to_libpq_url(url).rsplit("/", 1)[1].split("?")[0]
            asyncio.run(_admin(db_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
