"""The records a write refreshes from its new runs alone (services.records.refresh_after_arrivals) are
the records a full judgement of every run of each touched cohort makes (refresh_cohorts).

Differential: the same random writes (new runs, runs that supersede, a baseline that arrives after the
candidates, implausibly fast and below-floor runs, several cohorts and configurations, retractions and
reviews between writes) go into two copies of the seeded database, one refreshing as the writer does
and one with every refresh in full; every precomputed table must come out the same, row for row (run
ids included: the same writes in the same order on the same template). Then a rebuild changes nothing.
"""

from __future__ import annotations

import asyncio
import copy
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest

from kernelindex.db.urls import to_libpq_url
from tests.api.helpers import synthetic_records
from tests.conftest import TEMPLATE_DB, _admin, _fresh_database, _with_database

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
IMPLEMENTATIONS = ("torch_eager", "arrivals_a", "arrivals_b", "arrivals_c")
TABLES = {
    "cohort_bests": "SELECT * FROM cohort_bests ORDER BY workload_revision_id, configuration_key, protocol_id, "
                    "environment_id, implementation_id",
    "outdated": "SELECT id FROM source_snapshots WHERE outdated ORDER BY id",
    "run_flags": "SELECT run_id, code, reason, rule_version FROM run_flags ORDER BY run_id, code",
    "workload_sources": "SELECT * FROM workload_sources ORDER BY workload_revision_id, configuration_key, source_snapshot_id",
    "record_events": "SELECT id, workload_revision_id, configuration_key, protocol_id, environment_id, kind, run_id, "
                     "previous_run_id, improvement_percent, rule_version FROM record_events ORDER BY id",
}


@pytest.fixture
def twin_db_url(pg_url, template_url) -> Any:
    name = _fresh_database(pg_url, TEMPLATE_DB)
    yield _with_database(pg_url, name)
    asyncio.run(_admin(pg_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def _record(rng: random.Random, base: dict, written: list[dict]) -> dict:
    """A random record: a new run, or (one in six) new content under an earlier run's natural key."""
    if written and rng.random() < 1 / 6:
        record = copy.deepcopy(rng.choice(written))
    else:
        record = copy.deepcopy(base)
        impl = rng.choice(IMPLEMENTATIONS)
        record["implementation"] = (
            {"slug": impl} if impl == "torch_eager" else {"slug": impl, "title": impl, "role": "candidate"}
        )
        record["environment"]["label"] = f"arrivals-{rng.randrange(3)}"
        if rng.random() < 0.25:  # another configuration: a cohort of its own, not the headline one
            record["configuration"]["bindings"] = {"batch_size": 4}
        record["source"]["revision"] = f"r{rng.randrange(4)}"
    kind = rng.random()
    # Most runs near a millisecond; some implausibly fast beside an eager baseline, some below any floor.
    mean = 1e-5 if kind < 0.05 else rng.uniform(0.05, 0.09) if kind < 0.15 else round(rng.uniform(0.8, 3.0), 3)
    record["statistics"] = {"mean": mean, "std": mean / 100, "min": mean * 0.99, "max": mean * 1.01, "num_trials": 100}
    record["observed_at"] = (NOW - timedelta(days=rng.randrange(60), minutes=rng.randrange(1440))).isoformat()
    return record


async def judge_at_random(db_url: str, rng: random.Random) -> None:
    """Between two writes, now and then a retraction of a live run or a review of a flagged one (the
    writes that are not arrivals: their cohorts are judged again in full)."""
    from kernelindex.db.engine import in_own_transaction
    from kernelindex.services.judgements import retract_run, review_run

    choice = rng.random()
    conn = await asyncpg.connect(to_libpq_url(db_url))
    try:
        flagged = await conn.fetch("SELECT DISTINCT run_id FROM run_flags ORDER BY run_id")
        live = await conn.fetch(
            "SELECT r.id FROM runs r JOIN environments e ON e.id = r.environment_id "
            "WHERE e.label LIKE 'arrivals-%' AND r.superseded_at IS NULL AND r.retracted_at IS NULL ORDER BY r.id")
    finally:
        await conn.close()
    if choice < 0.15 and live:
        run_id = rng.choice(live)["id"]
        await in_own_transaction(db_url, lambda s, run_id=run_id: retract_run(s, run_id, "test", NOW))
    elif choice < 0.3 and flagged:
        run_id = rng.choice(flagged)["run_id"]
        decision = rng.choice(("approved", "rejected"))
        await in_own_transaction(db_url, lambda s, run_id=run_id, decision=decision: review_run(
            s, run_id, decision, "tester", None, NOW))


async def _writes(db_url: str, seed: int, *, full: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """write_at_random, refreshing after each batch by the delta (or every cohort in full)."""
    from kernelindex.ingest import merge
    from kernelindex.services import records as records_service

    if full:
        async def every_cohort_in_full(session, cohorts, arrived, *, left=(), now=None, events=True, storing=None, new_environments=()):
            if storing is not None:  # the new runs' INSERT, planned: run before the cohorts are read
                await storing()
            return await records_service.refresh_cohorts(session, cohorts, now=now, arrived=arrived, events=events)
        monkeypatch.setattr(merge, "refresh_after_arrivals", every_cohort_in_full)
    else:
        monkeypatch.setattr(merge, "refresh_after_arrivals", records_service.refresh_after_arrivals)
    await write_at_random(db_url, seed, defer_events=False)


async def write_at_random(db_url: str, seed: int, *, defer_events: bool) -> None:
    """Ten seeded random batches, each in a transaction of its own (as submitRuns and the fleet
    write), with a retraction or a review now and then between them, and one source revision's
    snapshot outdated after the fifth. `defer_events`: the writer defers its record events to the
    batch's end (as an import does) rather than writing them as it goes. The same seed gives the
    same sequence either way, so two databases written so can be compared row for row."""
    from kernelindex.db.engine import in_own_transaction
    from kernelindex.ingest.records import RunRecord
    from kernelindex.ingest.writer import RunWriter

    rng = random.Random(seed)
    base = synthetic_records(1, start=7)[0]
    written: list[dict] = []
    for step in range(10):
        batch = [_record(rng, base, written) for _ in range(rng.randrange(1, 12))]
        written += batch

        async def write(session, batch=batch, step=step):
            writer = RunWriter(now=NOW + timedelta(minutes=step), defer_events=defer_events)
            summary = await writer.write(session, [RunRecord(r, "arrivals", f"line {i + 1}") for i, r in enumerate(batch)])
            if defer_events:
                await writer.record_events(session)
            return summary

        summary = await in_own_transaction(db_url, write)
        # Only a natural key stated twice in one batch is refused: every other record is written.
        assert all("same natural key" in p.reason for p in summary.problems), summary.problems
        if step == 4:
            # One source revision's snapshot is outdated from here on: its runs count for nothing, and
            # its baseline runs are still their cohorts' baselines (refresh_cohorts reads them).
            await in_own_transaction(db_url, _outdate_r0)
        await judge_at_random(db_url, rng)


async def _outdate_r0(session) -> None:
    from sqlalchemy import text

    from kernelindex.services.records import refresh_all_records

    await session.execute(text(
        "UPDATE source_snapshots SET outdated = true WHERE revision = 'r0' "
        "AND source_id IN (SELECT id FROM sources WHERE name = 'Synthetic test source')"))
    await refresh_all_records(session, now=NOW)


async def _tables(db_url: str) -> dict[str, list[tuple]]:
    conn = await asyncpg.connect(to_libpq_url(db_url))
    try:
        return {name: [tuple(row) for row in await conn.fetch(query)] for name, query in TABLES.items()}
    finally:
        await conn.close()


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_arrivals_refresh_equals_a_full_one(db_url, twin_db_url, seed, monkeypatch):
    asyncio.run(_writes(db_url, seed, full=False, monkeypatch=monkeypatch))
    asyncio.run(_writes(twin_db_url, seed, full=True, monkeypatch=monkeypatch))
    delta, full = asyncio.run(_tables(db_url)), asyncio.run(_tables(twin_db_url))
    assert delta["cohort_bests"], "the writes made records"
    assert any(row[1] == "implausible_speedup" for row in delta["run_flags"]), "some run was judged against a baseline"
    for name in TABLES:
        assert delta[name] == full[name], name

    # And a rebuild of every record from every run changes nothing (and adds no event).
    from kernelindex.db.engine import in_own_transaction
    from kernelindex.services.records import refresh_all_records

    asyncio.run(in_own_transaction(db_url, lambda s: refresh_all_records(s, now=NOW)))
    assert asyncio.run(_tables(db_url)) == delta


def test_arrivals_in_an_import_equal_a_full_refresh(db_url, twin_db_url, tmp_path, monkeypatch):
    """The import's path: batches of a file with their events deferred to its end."""
    import json

    from kernelindex.ingest import merge
    from kernelindex.ingest.runs import ingest_runs_file
    from kernelindex.services import records as records_service

    rng = random.Random(7)
    base = synthetic_records(1, start=7)[0]
    records: list[dict] = []
    for _ in range(80):
        records.append(_record(rng, base, records))
    # A file states each natural key once: the later statements of a key are dropped.
    seen: dict[tuple, dict] = {}
    for r in records:
        seen[(r["implementation"]["slug"], r["environment"]["label"], str(r["configuration"]), r["source"]["revision"])] = r
    path = tmp_path / "arrivals.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in seen.values()))

    async def every_cohort_in_full(session, cohorts, arrived, *, left=(), now=None, events=True, storing=None, new_environments=()):
        if storing is not None:  # the new runs' INSERT, planned: run before the cohorts are read
            await storing()
        return await records_service.refresh_cohorts(session, cohorts, now=now, arrived=arrived, events=events)

    for url, full in ((db_url, False), (twin_db_url, True)):
        monkeypatch.setattr(merge, "refresh_after_arrivals", every_cohort_in_full if full else records_service.refresh_after_arrivals)
        summary = asyncio.run(ingest_runs_file(url, path, str(path), progress=False, batch_size=7, now=NOW))
        assert summary.problems == [] and summary.inserted == len(seen)
    assert asyncio.run(_tables(db_url)) == asyncio.run(_tables(twin_db_url))


async def _outdated_baseline_writes(db_url: str) -> None:
    """An eager run in a snapshot that is then outdated, the only baseline of its cohort; then a
    candidate forty times faster arrives in another snapshot."""
    from kernelindex.db.engine import in_own_transaction
    from kernelindex.ingest.records import RunRecord
    from kernelindex.ingest.writer import RunWriter

    base = synthetic_records(1, start=7)[0]
    base["environment"]["label"] = "arrivals-outdated"
    eager, candidate = copy.deepcopy(base), copy.deepcopy(base)
    eager["implementation"] = {"slug": "torch_eager"}
    eager["source"]["revision"] = "r0"
    eager["statistics"] = {"mean": 2.0, "std": 0.02, "min": 1.98, "max": 2.02, "num_trials": 100}
    candidate["implementation"] = {"slug": "arrivals_a", "title": "arrivals_a", "role": "candidate"}
    candidate["source"]["revision"] = "r1"
    candidate["statistics"] = {"mean": 0.05, "std": 0.0005, "min": 0.0495, "max": 0.0505, "num_trials": 100}
    for step, batch in enumerate(([eager], None, [candidate])):
        if batch is None:
            await in_own_transaction(db_url, _outdate_r0)
            continue
        await in_own_transaction(db_url, lambda s, batch=batch, step=step: RunWriter(now=NOW + timedelta(minutes=step)).write(
            s, [RunRecord(r, "arrivals", f"line {i + 1}") for i, r in enumerate(batch)]))


def test_an_outdated_baseline_still_judges_new_runs(db_url, twin_db_url, monkeypatch):
    from kernelindex.ingest import merge
    from kernelindex.services import records as records_service

    async def every_cohort_in_full(session, cohorts, arrived, *, left=(), now=None, events=True, storing=None, new_environments=()):
        if storing is not None:  # the new runs' INSERT, planned: run before the cohorts are read
            await storing()
        return await records_service.refresh_cohorts(session, cohorts, now=now, arrived=arrived, events=events)

    for url, full in ((db_url, False), (twin_db_url, True)):
        monkeypatch.setattr(merge, "refresh_after_arrivals", every_cohort_in_full if full else records_service.refresh_after_arrivals)
        asyncio.run(_outdated_baseline_writes(url))
    delta, full_tables = asyncio.run(_tables(db_url)), asyncio.run(_tables(twin_db_url))
    assert [row[1] for row in delta["run_flags"]] == ["implausible_speedup"]
    assert delta == full_tables


def test_the_python_delta_refuses_ids_without_the_runs_values(db_url):
    # The SQL delta (events deferred) reads the new runs where they are stored and takes their ids alone;
    # the Python delta judges them from their writer's values, and says so before reading anything.
    from kernelindex.db.engine import in_own_transaction
    from kernelindex.services.records import refresh_after_arrivals

    async def ids_alone(session) -> None:
        await refresh_after_arrivals(session, [(1, "cfg", 1, 1)], [1, 2], events=True)

    with pytest.raises(TypeError, match="arrived must map ids to NewRun"):
        asyncio.run(in_own_transaction(db_url, ids_alone))


RUNS = "SELECT id, workload_revision_id, configuration_key, implementation_id, environment_id, protocol_id, " \
       "source_snapshot_id, content_sha256, superseded_at IS NOT NULL, superseded_by_id, figure FROM runs ORDER BY id"


async def _writes_with_unchanged(db_url: str, seed: int) -> None:
    """write_at_random, then two batches where stored runs come again unchanged between new ones (an
    unchanged row takes no run, but it did take an id from the sequence: the next runs' ids show it)."""
    from kernelindex.db.engine import in_own_transaction
    from kernelindex.ingest.records import RunRecord
    from kernelindex.ingest.writer import RunWriter

    await write_at_random(db_url, seed, defer_events=False)
    fresh = synthetic_records(6, start=900)
    for batch in (fresh[:3], [fresh[0], fresh[3], fresh[1], fresh[4], fresh[2], fresh[5]]):
        async def write(session, batch=batch):
            return await RunWriter(now=NOW).write(session, [RunRecord(r, "mixed", f"line {i + 1}") for i, r in enumerate(batch)])

        await in_own_transaction(db_url, write)


async def _plain_inserts(db_url: str, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """_writes_with_unchanged with the INSERT run before the refresh, as an import's writer does (not planned)."""
    from kernelindex.ingest import merge, writer

    async def unplanned(*args, **options):
        return await merge.merge_stage(*args, **{**options, "planned": False})

    monkeypatch.setattr(writer, "merge_stage", unplanned)
    try:
        await _writes_with_unchanged(db_url, seed)
    finally:
        monkeypatch.setattr(writer, "merge_stage", merge.merge_stage)


@pytest.mark.parametrize("seed", [5, 6])
def test_a_planned_insert_stores_what_the_plain_one_does(db_url, twin_db_url, seed, monkeypatch):
    """A write of its own (submitRuns, the fleet, seed) plans its INSERT (merge.PlannedInsert: which
    staged rows go in, with which ids) and runs it while the refresh judges the new runs. The same random
    writes (new, changed, unchanged and repeated keys, retractions, reviews, an outdated snapshot) store the
    same runs with the same ids, the same superseded links and the same records as with the INSERT run first."""
    from kernelindex.ingest import merge

    plans: list[int] = []
    real = merge.PlannedInsert.insert

    async def counted(self, session):
        plans.append(len(self.ids))
        await real(self, session)

    monkeypatch.setattr(merge.PlannedInsert, "insert", counted)
    asyncio.run(_writes_with_unchanged(db_url, seed))
    asyncio.run(_plain_inserts(twin_db_url, seed, monkeypatch))
    assert len(plans) == 12 and plans[-1] == 3, plans  # every write planned (the first database's); the last, 3 of 6 new

    async def runs(url: str) -> list[tuple]:
        conn = await asyncpg.connect(to_libpq_url(url))
        try:
            return [tuple(row) for row in await conn.fetch(RUNS)]
        finally:
            await conn.close()

    planned, plain = asyncio.run(runs(db_url)), asyncio.run(runs(twin_db_url))
    assert any(row[8] for row in planned) and any(row[9] for row in planned), "some run was superseded and linked"
    assert planned == plain
    assert asyncio.run(_tables(db_url)) == asyncio.run(_tables(twin_db_url))
