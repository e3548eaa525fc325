"""A comparison's rows come from ix_runs_cohort_top (migration 0010), not from sorting the cohort,
and Alembic's comparison of models and database really looks at that index's expression."""

from __future__ import annotations

import asyncio

import asyncpg
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Index, MetaData, event, select, text
from sqlalchemy.ext.asyncio import create_async_engine

from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.db.migrate import upgrade
from kernelindex.db.models import Base, Workload
from kernelindex.db.urls import to_async_url, to_libpq_url
from kernelindex.services.facts import load_catalogue
from kernelindex.services.pages import load_cohort_tops, load_page_evidence

SLUG = "kernelbench-l3-p9-resnet18"
EXTRA_RUNS = 3000  # in the record cohort: enough that reading the cohort in full costs more than the index


async def _grow_record_cohort(url: str, cohort: tuple[int, str, int, int]) -> None:
    rev, cfg, proto, env = cohort
    conn = await asyncpg.connect(to_libpq_url(url))
    try:
        source = await conn.fetchval("INSERT INTO sources (name) VALUES ('Index test source') RETURNING id")
        await conn.execute(
            "INSERT INTO source_snapshots (source_id, revision) SELECT $1, 'ix' || g FROM generate_series(1, $2) g",
            source, EXTRA_RUNS,
        )
        await conn.execute(
            """
            INSERT INTO runs (workload_id, workload_revision_id, bindings, dtype, configuration_key, implementation_id,
              environment_id, protocol_id, source_snapshot_id, status, mean_ms, std_ms, min_ms, max_ms,
              num_trials, observed_at, evidence, content_sha256, figure)
            SELECT r.workload_id, r.id, '{}'::jsonb, 'fp32', $2, (SELECT min(id) FROM implementations), $4, $3, s.id,
                   'passed', 50 + s.id % 97, 0.1, 49, 200, 100, timestamptz '2026-06-01', 'reported', md5(s.id::text), 50 + s.id % 97
            FROM workload_revisions r, source_snapshots s WHERE r.id = $1 AND s.source_id = $5
            """,
            rev, cfg, proto, env, source,
        )
        await conn.execute("ANALYZE runs")
    finally:
        await conn.close()


async def test_comparison_rows_are_an_index_range_under_a_generic_plan(db_url):
    engine = make_engine(db_url, pool_size=1, max_overflow=0)
    try:
        async with make_sessionmaker(engine)() as session:
            workload = await session.scalar(select(Workload).where(Workload.slug == SLUG))
            assert workload is not None
            page = (await load_page_evidence(session, [workload], await load_catalogue(session)))[workload.id]
            cohort = page.record_cohort
        assert cohort is not None
        await _grow_record_cohort(db_url, cohort)
        seen: list[str] = []

        def grab(conn, cursor, statement, parameters, context, executemany):
            seen.append(statement)

        event.listen(engine.sync_engine, "before_cursor_execute", grab)
        async with make_sessionmaker(engine)() as session:
            top = (await load_cohort_tops(session, [(cohort, 20)]))[(cohort, 20)]
        event.remove(engine.sync_engine, "before_cursor_execute", grab)
        assert len(top.rows) == 21  # the rows shown and the one after them
        statement = next(s for s in seen if "LATERAL" in s)
    finally:
        await engine.dispose()

    conn = await asyncpg.connect(to_libpq_url(db_url))
    try:
        # What a prepared statement ends up with after its first executions: one plan for any values.
        # (EXPLAIN (GENERIC_PLAN) takes $n without values, but only over the simple protocol: so in a DO block.)
        await conn.execute("CREATE TEMPORARY TABLE plan_lines (n serial, line text)")
        await conn.execute(
            "DO $do$ DECLARE r record; BEGIN FOR r IN EXECUTE $stmt$EXPLAIN (GENERIC_PLAN) " + statement + "$stmt$ "
            'LOOP INSERT INTO plan_lines (line) VALUES (r."QUERY PLAN"); END LOOP; END $do$'
        )
        plan = "\n".join(r[0] for r in await conn.fetch("SELECT line FROM plan_lines ORDER BY n"))
    finally:
        await conn.close()
    assert "ix_runs_cohort_top" in plan, plan
    assert "ix_runs_cohort_measured" in plan, plan
    assert "Sort Key: (LEAST" not in plan and "Sort Key: LEAST" not in plan, plan  # no sort of the cohort


def _copy() -> MetaData:
    """The models' metadata, copied (the copy may be changed)."""
    copy = MetaData()
    for table in Base.metadata.sorted_tables:
        table.to_metadata(copy)
    return copy


async def _index_diffs(url: str, metadata: MetaData) -> list[str]:
    engine = create_async_engine(to_async_url(url))
    try:
        async with engine.connect() as conn:
            diffs = await conn.run_sync(lambda sync: compare_metadata(MigrationContext.configure(sync), metadata))
    finally:
        await engine.dispose()
    return [d[1].name for d in diffs if isinstance(d, tuple) and d[0] in ("add_index", "remove_index")]


def test_alembic_compares_the_cohort_top_expression(empty_db_url):
    upgrade(empty_db_url)
    as_declared = _copy()
    assert "ix_runs_cohort_top" not in asyncio.run(_index_diffs(empty_db_url, as_declared))

    # The same index spelled as Python prints the bounds: PostgreSQL prints '1e-06' and '86400000',
    # so the comparison must see a different index (it is compared, not skipped).
    respelled = _copy()
    runs = respelled.tables["runs"]
    runs.indexes.discard(next(i for i in runs.indexes if i.name == "ix_runs_cohort_top"))
    Index(
        "ix_runs_cohort_top", runs.c.workload_revision_id, runs.c.configuration_key, runs.c.protocol_id,
        runs.c.environment_id, text("least(greatest(mean_ms, 1e-6), 86400000.0)"), runs.c.observed_at, runs.c.id,
        postgresql_where=text("superseded_at IS NULL AND retracted_at IS NULL AND status = 'passed'"),
    )
    assert "ix_runs_cohort_top" in asyncio.run(_index_diffs(empty_db_url, respelled))
