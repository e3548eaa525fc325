"""The data version and its change log: moved once by every committed transaction that changed a row of
a table the API shows, with what it changed (migration 0007)."""

from __future__ import annotations

import asyncpg
import pytest

from kernelindex.db.migrate import upgrade
from kernelindex.db.urls import to_libpq_url

NOT_VERSIONED = {"alembic_version", "data_version", "change_log", "api_tokens"}
# The fleet's tables (0011): no cached response reads them, and a job changing state must evict nothing.
NOT_VERSIONED |= {"submissions", "fleet_jobs", "procrastinate_jobs", "procrastinate_workers", "procrastinate_events",
                  "procrastinate_periodic_defers"}
NOT_VERSIONED |= {"fleet_workers"}  # registered workers (0013): no cached response reads them
NOT_VERSIONED |= {"problem_traces"}  # the importer's traces (0014): no cached response reads them
TRIGGERS = {"log_change_insert", "log_change_update", "log_change_delete", "log_change_truncate"}


async def _version(conn) -> int:
    return await conn.fetchval("SELECT version FROM data_version WHERE id = 1")


async def _log(conn, version: int) -> dict | None:
    row = await conn.fetchrow("SELECT workload_ids, catalogue_tables, everything FROM change_log WHERE version = $1", version)
    return None if row is None else {"workloads": sorted(row[0]), "tables": sorted(row[1]), "everything": row[2]}


@pytest.fixture
async def conn(db_url):
    connection = await asyncpg.connect(to_libpq_url(db_url))
    yield connection
    await connection.close()


async def test_every_table_but_tokens_carries_the_change_triggers(conn):
    tables = {r["tablename"] for r in await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
    rows = await conn.fetch(
        "SELECT event_object_table AS t, trigger_name AS name, action_timing AS timing, action_orientation AS level "
        "FROM information_schema.triggers WHERE trigger_name LIKE 'log_change_%'")
    by_table: dict[str, set[str]] = {}
    for r in rows:
        assert (r["timing"], r["level"]) == ("AFTER", "STATEMENT"), r  # never a trigger per row
        by_table.setdefault(r["t"], set()).add(r["name"])
    # information_schema does not list TRUNCATE triggers; pg_trigger does.
    for r in await conn.fetch("SELECT tgrelid::regclass::text AS t FROM pg_trigger WHERE tgname = 'log_change_truncate'"):
        by_table.setdefault(r["t"], set()).add("log_change_truncate")
    assert set(by_table) == tables - NOT_VERSIONED
    assert all(names == TRIGGERS for names in by_table.values()), by_table
    # 0004's trigger (any statement, rows or not) is gone.
    assert await conn.fetchval("SELECT count(*) FROM pg_trigger WHERE tgname = 'bump_data_version'") == 0


async def test_one_bump_per_committed_transaction_with_everything_it_changed(conn):
    start = await _version(conn)
    resnet, vgg = await conn.fetchval("SELECT array_agg(id ORDER BY id) FROM workloads WHERE slug IN "
                                      "('kernelbench-l3-p9-resnet18', 'kernelbench-l3-p12-vgg19')")
    async with conn.transaction():
        await conn.execute("UPDATE hardware SET memory_gb = memory_gb + 1 WHERE id = (SELECT min(id) FROM hardware)")
        await conn.execute("UPDATE runs SET observed_at = observed_at - interval '1 second' WHERE workload_id = $1", resnet)
        await conn.execute("UPDATE cohort_bests SET last_observed_at = last_observed_at - interval '1 second' WHERE workload_id = $1", vgg)
    assert await _version(conn) == start + 1
    assert await _log(conn, start + 1) == {"workloads": sorted([resnet, vgg]), "tables": ["hardware"], "everything": False}
    assert await _edited(conn, start + 1) == ["hardware"]


async def test_statements_that_change_no_row_move_nothing(conn):
    start = await _version(conn)
    await conn.execute("UPDATE hardware SET sku = sku")  # rows touched, none changed
    await conn.execute("UPDATE workloads SET name = name")
    await conn.execute("UPDATE runs SET mean_ms = mean_ms WHERE id IN (SELECT id FROM runs LIMIT 5)")
    await conn.execute("DELETE FROM runs WHERE id < 0")
    await conn.execute("INSERT INTO protocols SELECT * FROM protocols ON CONFLICT DO NOTHING")
    sku = await conn.fetchval("SELECT sku FROM hardware LIMIT 1")
    await conn.execute(
        "INSERT INTO hardware SELECT * FROM hardware WHERE sku = $1 ON CONFLICT (id) DO UPDATE SET sku = excluded.sku", sku)
    async with conn.transaction():
        await conn.execute("UPDATE implementations SET title = title")
    assert await _version(conn) == start
    assert await conn.fetchval("SELECT count(*) FROM change_log WHERE version > $1", start) == 0


async def _edited(conn, version: int) -> list[str]:
    return sorted(await conn.fetchval("SELECT catalogue_edited FROM change_log WHERE version = $1", version))


async def test_a_new_catalogue_row_is_logged_apart_from_an_edited_one(conn):
    """0021: catalogue_tables names every catalogue table with a new or changed row (as before), and
    catalogue_edited those an existing row of which changed: what a new row alone does not do."""
    start = await _version(conn)
    await conn.execute("INSERT INTO sources (name) VALUES ('a new source')")
    assert await _log(conn, start + 1) == {"workloads": [], "tables": ["sources"], "everything": False}
    assert await _edited(conn, start + 1) == []
    async with conn.transaction():  # new rows in two tables, one existing row edited in one of them
        await conn.execute("INSERT INTO source_snapshots (source_id, revision) SELECT id, 'r1' FROM sources WHERE name = 'a new source'")
        await conn.execute("INSERT INTO sources (name) VALUES ('another new source')")
        await conn.execute("UPDATE sources SET url = 'https://example.org' WHERE name = 'a new source'")
    assert (await _log(conn, start + 2))["tables"] == ["source_snapshots", "sources"]
    assert await _edited(conn, start + 2) == ["sources"]
    # An upsert that changes an existing row is an edit; one that only inserts is not.
    await conn.execute("INSERT INTO sources (name, url) VALUES ('a new source', 'https://example.com') "
                       "ON CONFLICT (name) DO UPDATE SET url = excluded.url")
    assert await _edited(conn, start + 3) == ["sources"]
    await conn.execute("INSERT INTO sources (name, url) VALUES ('a third source', 'https://example.com') "
                       "ON CONFLICT (name) DO UPDATE SET url = excluded.url")
    assert (await _log(conn, start + 4))["tables"] == ["sources"] and await _edited(conn, start + 4) == []
    await conn.execute("DELETE FROM sources WHERE name = 'a third source'")
    assert await _edited(conn, start + 5) == ["sources"]
    # A workload's row is never a catalogue table, new or not.
    await conn.execute("UPDATE workloads SET name = name || '!' WHERE id = (SELECT min(id) FROM workloads)")
    assert await _edited(conn, start + 6) == []


async def test_an_update_of_a_primary_key_is_logged_by_both_images(conn):
    resnet, vgg = await conn.fetchval("SELECT array_agg(id ORDER BY id) FROM workloads WHERE slug IN "
                                      "('kernelbench-l3-p9-resnet18', 'kernelbench-l3-p12-vgg19')")
    start = await _version(conn)
    # configuration_key is part of cohort_bests' primary key: the new rows find no partner by key.
    await conn.execute("UPDATE cohort_bests SET configuration_key = configuration_key || '-x' WHERE workload_id = $1", resnet)
    assert await _log(conn, start + 1) == {"workloads": [resnet], "tables": [], "everything": False}
    # A row moved to another workload (with a revision of it: one key holds the two together): both are logged.
    await conn.execute("UPDATE record_events SET workload_id = $2, workload_revision_id = (SELECT current_revision_id FROM workloads "
                       "WHERE id = $2) WHERE id = (SELECT min(id) FROM record_events WHERE workload_id = $1)", resnet, vgg)
    assert await _log(conn, start + 2) == {"workloads": sorted([resnet, vgg]), "tables": [], "everything": False}


async def test_flags_and_reviews_are_logged_by_their_runs_workload(conn):
    run_id, workload = (await conn.fetchrow("SELECT id, workload_id FROM runs ORDER BY id LIMIT 1"))
    start = await _version(conn)
    await conn.execute("INSERT INTO run_flags (run_id, code, reason, rule_version) VALUES ($1, 'test', 'why', 't/1')", run_id)
    assert await _log(conn, start + 1) == {"workloads": [workload], "tables": [], "everything": False}
    await conn.execute("INSERT INTO run_reviews (run_id, decision, reviewer) VALUES ($1, 'approved', 'me')", run_id)
    assert await _log(conn, start + 2) == {"workloads": [workload], "tables": [], "everything": False}


async def test_a_truncate_is_everything(conn):
    start = await _version(conn)
    await conn.execute("TRUNCATE run_reviews")
    assert (await _log(conn, start + 1))["everything"] is True


async def test_reads_and_rolled_back_writes_leave_it(conn):
    start = await _version(conn)
    await conn.fetch("SELECT * FROM runs LIMIT 5")
    tx = conn.transaction()
    await tx.start()
    await conn.execute("UPDATE workloads SET name = name || '!'")
    await tx.rollback()
    assert await _version(conn) == start
    assert await _log(conn, start + 1) is None


async def test_a_rolled_back_savepoint_takes_its_changes_out_of_the_log(conn):
    start = await _version(conn)
    first, second = [r["id"] for r in await conn.fetch("SELECT id FROM workloads ORDER BY id LIMIT 2")]
    async with conn.transaction():
        savepoint = conn.transaction()
        await savepoint.start()
        await conn.execute("UPDATE workloads SET name = name || '!' WHERE id = $1", first)
        await savepoint.rollback()
        await conn.execute("UPDATE workloads SET name = name || '?' WHERE id = $1", second)
    assert await _version(conn) == start + 1
    assert (await _log(conn, start + 1))["workloads"] == [second]


async def test_token_use_leaves_it(conn):
    start = await _version(conn)
    await conn.execute("UPDATE api_tokens SET last_used_at = now()")
    assert await _version(conn) == start


async def test_the_log_keeps_the_last_versions_only(conn):
    keep = 10_000
    # Jump the version close to a pruning point, as if many transactions had committed.
    start = await _version(conn)
    await conn.execute("UPDATE data_version SET version = $1 WHERE id = 1", keep * 3 - 1)
    await conn.execute("INSERT INTO change_log (version) SELECT g FROM generate_series($1::bigint, $2::bigint) g",
                       keep * 2 - 10, keep * 3 - 1)
    await conn.execute("UPDATE workloads SET name = name || '!' WHERE id = (SELECT min(id) FROM workloads)")
    assert await _version(conn) == keep * 3 > start
    oldest = await conn.fetchval("SELECT min(version) FROM change_log")
    assert oldest == keep * 2 + 1  # every 100th version prunes what is older than the last 10,000


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
