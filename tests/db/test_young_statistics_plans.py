"""The statements a write runs against `runs` for each staged row or cohort probe an index per row, whatever
the planner's statistics say. A young index is the case that matters: runs arrive faster than autovacuum
analyses them, so the planner thinks the table holds a few rows, and a join there hashed every live run
for each batch (a cost that grew with the index: kernelindex.ingest.merge._live_of_staged,
kernelindex.services.records._FAST_BESIDE_FIRST_BASELINE)."""

from __future__ import annotations

from datetime import UTC, datetime

import asyncpg
from sqlalchemy import text

from kernelindex.db.engine import in_own_transaction
from kernelindex.db.urls import to_libpq_url
from kernelindex.ingest import merge
from kernelindex.ingest.stage import create_stage
from kernelindex.services import records

RUNS = 4000


async def _runs_after_the_statistics(url: str) -> tuple[int, str, int, int]:
    """ANALYZE, then RUNS live runs more (as a burst of writes leaves a young index); returns a cohort of them."""
    conn = await asyncpg.connect(to_libpq_url(url))
    try:
        await conn.execute("ANALYZE runs")
        run = await conn.fetchrow("SELECT workload_id, workload_revision_id, implementation_id, environment_id, protocol_id, "
                                  "source_snapshot_id FROM runs LIMIT 1")
        await conn.execute(
            """
            INSERT INTO runs (workload_id, workload_revision_id, bindings, dtype, configuration_key, implementation_id,
              environment_id, protocol_id, source_snapshot_id, status, mean_ms, num_trials, observed_at, evidence,
              content_sha256, figure)
            SELECT $1, $2, '{}'::jsonb, 'fp32', 'young-' || g, $3, $4, $5, $6, 'passed', 1.5, 10, timestamptz '2026-06-01',
                   'reported', md5(g::text), 1.5
            FROM generate_series(1, $7) g
            """,
            *run, RUNS,
        )
        return run["workload_revision_id"], "young-1", run["protocol_id"], run["environment_id"]
    finally:
        await conn.close()


async def _plans(session, cohort: tuple[int, str, int, int]) -> dict[str, str]:
    await create_stage(session)

    async def plan(statement, params=None) -> str:
        return "\n".join(r[0] for r in (await session.execute(text("EXPLAIN " + statement.text), params or {})).all())

    return {
        "staged live": await plan(merge._STAGED_LIVE),
        "supersede": await plan(merge._SUPERSEDE, {"now": datetime(2026, 12, 1, tzinfo=UTC)}),
        "fleet held": await plan(merge._FLEET_HELD),
        "fast beside": await plan(records._FAST_BESIDE_FIRST_BASELINE, {
            "revs": [cohort[0]], "cfgs": [cohort[1]], "protos": [cohort[2]], "envs": [cohort[3]], "bounds": [1.0],
            "impls": [1], "arrived": [1, 2, 3],
        }),
    }


async def test_a_young_index_is_probed_not_hashed(db_url):
    cohort = await _runs_after_the_statistics(db_url)
    plans = await in_own_transaction(db_url, lambda session: _plans(session, cohort))
    for name in ("staged live", "supersede", "fleet held"):
        assert "uq_runs_natural_key_live" in plans[name], (name, plans[name])
    assert "ix_runs_cohort_top" in plans["fast beside"], plans["fast beside"]
    for name, plan in plans.items():
        assert "Hash" not in plan and "Seq Scan on runs" not in plan, (name, plan)
