"""workload_sources (migration 0012): derived from the cohort bests by every write, equal to a rebuild
from runs after any sequence of writes, supersedes and retractions, in either order; what the page's
sources list reads."""

from __future__ import annotations

import copy

import asyncpg
import pytest
from alembic import command
from sqlalchemy import select, text

from kernelindex.db.engine import in_own_transaction, make_engine, make_sessionmaker
from kernelindex.db.migrate import alembic_config, upgrade
from kernelindex.db.models import Workload
from kernelindex.db.urls import to_libpq_url
from kernelindex.ingest.records import RunRecord
from kernelindex.ingest.writer import RunWriter
from kernelindex.services.evidence import load_evidence
from kernelindex.services.facts import load_catalogue
from kernelindex.services.pages import load_page_evidence
from kernelindex.services.records import rebuild_workload_sources, refresh_all_records, refresh_cohorts_of_runs
from kernelindex.services.workload_page import SOURCES_SHOWN
from tests.api.helpers import synthetic_records

RESNET, VGG = "kernelbench-l3-p9-resnet18", "kernelbench-l3-p12-vgg19"
SOURCE = "Synthetic test source"
IMPLEMENTATIONS = ("torch_eager", "torch_compile_inductor", "custom_kernel")
ROWS = ("SELECT workload_revision_id, configuration_key, source_snapshot_id, workload_id, source_name, snapshot_revision "
        "FROM workload_sources ORDER BY 1, 2, 3")


def _records(slug: str) -> list[dict]:
    """Twelve passed runs of `slug`, each from a snapshot of its own (s0…s11), in three environments."""
    out = synthetic_records(12, slug=slug, batch=2 if slug == RESNET else 10)  # each one's canonical batch size
    for i, rec in enumerate(out):
        rec["environment"]["label"] = f"pool-{i % 3}"
        rec["implementation"] = {"slug": IMPLEMENTATIONS[i % 3]}
        rec["source"] = {"name": SOURCE, "revision": f"s{i}"}
    return out


def _failed(record: dict) -> dict:
    """The same natural key, now a failed run: it supersedes the passed one and leaves the records."""
    rec = copy.deepcopy(record)
    rec.update(status="failed", statistics=None, failure_reason="wrong output")
    return rec


def _faster(record: dict) -> dict:
    rec = copy.deepcopy(record)
    mean = rec["statistics"]["mean"] - 0.15
    rec["statistics"].update(mean=mean, min=mean - 0.01, max=mean + 0.01)
    return rec


async def _ingest(db_url: str, records: list[dict]) -> None:
    """Through the writer alone: its own refresh is what keeps the table (no refresh_all_records after)."""
    async def work(session):
        await RunWriter().write(session, [RunRecord(r, "test", f"line {i + 1}") for i, r in enumerate(records)])
    await in_own_transaction(db_url, work)


async def _retract(db_url: str, slug: str, revision: str) -> None:
    """retractRun's write: the run marked, its cohorts refreshed, in one transaction."""
    async def work(session):
        run_id = (await session.execute(text(
            "SELECT r.id FROM runs r JOIN workloads w ON w.id = r.workload_id JOIN source_snapshots ss ON ss.id = r.source_snapshot_id "
            "WHERE w.slug = :slug AND ss.revision = :rev AND r.superseded_at IS NULL AND r.retracted_at IS NULL"
        ), {"slug": slug, "rev": revision})).scalar_one()
        await session.execute(text("UPDATE runs SET retracted_at = now(), retraction_reason = 'test' WHERE id = :id"), {"id": run_id})
        await refresh_cohorts_of_runs(session, [run_id])
    await in_own_transaction(db_url, work)


async def _rows(conn) -> list[tuple]:
    return [tuple(r) for r in await conn.fetch(ROWS)]


async def _rebuilt(db_url: str, *, from_runs: bool) -> list[tuple]:
    """The table recomputed in a transaction that is rolled back: from the cohort bests as they are, or
    with the cohort bests themselves rebuilt from runs first."""
    engine = make_engine(db_url, pool_size=1, max_overflow=0)
    try:
        async with make_sessionmaker(engine)() as session:
            await session.execute(text("DELETE FROM workload_sources"))
            if from_runs:
                await session.execute(text("DELETE FROM cohort_bests"))
                await refresh_all_records(session)
            else:
                await rebuild_workload_sources(session)
            rows = [tuple(r) for r in (await session.execute(text(ROWS))).all()]
            await session.rollback()
            return rows
    finally:
        await engine.dispose()


async def _check(db_url: str) -> dict[str, list[tuple[str, str]]]:
    """The maintained table equals both rebuilds, and each workload's sources in it are exactly those of
    its eligible runs (the full computation over every live run); the page shows the first of them.
    Returns each workload's synthetic sources, (name, revision), by slug."""
    conn = await asyncpg.connect(to_libpq_url(db_url))
    try:
        maintained = await _rows(conn)
    finally:
        await conn.close()
    assert maintained, "the seed's workloads have sources"
    assert maintained == await _rebuilt(db_url, from_runs=False)
    assert maintained == await _rebuilt(db_url, from_runs=True)
    engine = make_engine(db_url, pool_size=1, max_overflow=0)
    try:
        async with make_sessionmaker(engine)() as session:
            workloads = (await session.scalars(select(Workload))).all()
            catalogue = await load_catalogue(session)
            full = await load_evidence(session, workloads, catalogue)
            fast = await load_page_evidence(session, workloads, catalogue)
            out = {}
            for w in workloads:
                everything = full[w.id].page.sources  # every source of the eligible runs, by name and revision
                mine = sorted((r[4], r[5]) for r in maintained if r[0] == w.current_revision_id
                              and r[1] == full[w.id].page.facts.canonical_configuration_key)
                assert mine == [(s.name, s.revision or "") for s in everything], w.slug
                assert [s.id for s in fast[w.id].sources] == [s.id for s in everything][:SOURCES_SHOWN], w.slug
                out[w.slug] = [s for s in mine if s[0] == SOURCE]
            await session.rollback()
    finally:
        await engine.dispose()
    return out


async def test_kept_equal_to_a_rebuild_through_writes_supersedes_and_retractions_in_both_orders(db_url):
    resnet, vgg = _records(RESNET), _records(VGG)
    every = [(SOURCE, f"s{i}") for i in range(12)]
    assert (await _check(db_url))[RESNET] == []
    await _ingest(db_url, resnet + vgg)
    state = await _check(db_url)
    assert sorted(state[RESNET]) == sorted(every) and sorted(state[VGG]) == sorted(every)

    # The same three changes to each workload, in opposite orders; s4 and s7 are shared snapshots, so
    # one workload losing them must leave the other's rows alone.
    steps = {
        "supersede by a failed run": lambda recs, slug: _ingest(db_url, [_failed(recs[4])]),
        "retract": lambda recs, slug: _retract(db_url, slug, "s7"),
        "supersede by a faster run": lambda recs, slug: _ingest(db_url, [_faster(recs[2])]),
    }
    order = list(steps)
    for i, name in enumerate(order):
        await steps[name](resnet, RESNET)
        await steps[order[-1 - i]](vgg, VGG)
        await _check(db_url)
    final = await _check(db_url)
    gone = {(SOURCE, "s4"), (SOURCE, "s7")}
    assert final[RESNET] == final[VGG] == sorted(set(every) - gone)


async def test_an_unchanged_refresh_writes_nothing(db_url):
    await _ingest(db_url, _records(RESNET))
    conn = await asyncpg.connect(to_libpq_url(db_url))
    try:
        before = await conn.fetchval("SELECT version FROM data_version WHERE id = 1")
        await in_own_transaction(db_url, refresh_all_records)
        assert await conn.fetchval("SELECT version FROM data_version WHERE id = 1") == before
    finally:
        await conn.close()


async def test_a_change_is_logged_under_its_workload(db_url):
    conn = await asyncpg.connect(to_libpq_url(db_url))
    try:
        workload, revision, cfg, snapshot = await conn.fetchrow(
            "SELECT workload_id, workload_revision_id, configuration_key, source_snapshot_id FROM workload_sources LIMIT 1")
        before = await conn.fetchval("SELECT version FROM data_version WHERE id = 1")
        await conn.execute("DELETE FROM workload_sources WHERE workload_revision_id = $1 AND configuration_key = $2 "
                           "AND source_snapshot_id = $3", revision, cfg, snapshot)
        log = await conn.fetchrow("SELECT workload_ids, everything FROM change_log WHERE version = $1", before + 1)
        assert (list(log["workload_ids"]), log["everything"]) == ([workload], False)
    finally:
        await conn.close()


@pytest.mark.parametrize("extra", [False, True])
def test_the_migration_fills_it_from_the_cohort_bests_there_are(db_url, extra):
    import asyncio

    if extra:
        asyncio.run(_ingest(db_url, _records(VGG)))

    async def rows():
        conn = await asyncpg.connect(to_libpq_url(db_url))
        try:
            return await _rows(conn), await conn.fetchval("SELECT version FROM data_version WHERE id = 1")
        finally:
            await conn.close()

    before, version = asyncio.run(rows())
    command.downgrade(alembic_config(db_url), "0011")
    upgrade(db_url)
    after, version_after = asyncio.run(rows())
    assert after == before
    assert version_after == version  # filled before its triggers: nothing shown changed
