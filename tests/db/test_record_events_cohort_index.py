"""A cohort's latest event (services.records._latest_events, the standing holder every write that adds
runs reads) is one probe of ix_record_events_cohort (migration 0024) a cohort, whatever the statistics
say: with 20,000 events written since the last ANALYZE (as a write of 1,000 new machines' runs adds a
thousand a call), the plan never scans the events, and the holders it finds are what a walk over every
event finds (newest event of the cohort that is not a revision's)."""

from __future__ import annotations

from sqlalchemy import text

from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.services.facts import cohort_columns
from kernelindex.services.records import _LATEST_EVENTS, _latest_events
from tests.db.sql import fetch

EVENTS = 20_000


async def _grow_events(db_url: str) -> list[tuple[int, str, int, int]]:
    """EVENTS new events over EVENTS // 10 new cohorts (configurations of the seed's first cohort event),
    ten a cohort, each naming one of the seed's runs; no ANALYZE after."""
    [seed] = await fetch(db_url, "SELECT * FROM record_events WHERE protocol_id IS NOT NULL ORDER BY id LIMIT 1")
    await fetch(
        db_url,
        "INSERT INTO record_events (workload_id, workload_revision_id, configuration_key, protocol_id, environment_id, kind, "
        "run_id, previous_run_id, improvement_percent, rule_version) SELECT $1, $2, 'grown-' || (g % $6), $3, $4, 'new_record', "
        "(SELECT id FROM runs ORDER BY id OFFSET (g % 7) LIMIT 1), NULL, NULL, 'history-v1' FROM generate_series(1, $5) g",
        seed["workload_id"], seed["workload_revision_id"], seed["protocol_id"], seed["environment_id"], EVENTS, EVENTS // 10,
    )
    cohorts = await fetch(db_url, "SELECT DISTINCT workload_revision_id, configuration_key, protocol_id, environment_id "
                                  "FROM record_events WHERE protocol_id IS NOT NULL")
    return sorted((r[0], r[1], r[2], r[3]) for r in cohorts)


async def test_the_latest_event_of_each_cohort_is_an_index_probe_and_the_newest(db_url):
    cohorts = await _grow_events(db_url)
    assert len(cohorts) > EVENTS // 10
    # Independent: every event, the newest of each cohort that is not a revision's.
    newest: dict[tuple, tuple[int, int | None]] = {}
    for row in await fetch(db_url, "SELECT e.id, e.workload_revision_id, e.configuration_key, e.protocol_id, e.environment_id, "
                                   "e.run_id, e.kind FROM record_events e"):
        key = (row[1], row[2], row[3], row[4])
        if row[6] != "revision_changed" and (key not in newest or row[0] > newest[key][0]):
            newest[key] = (row[0], row[5])
    figures = {r[0]: r[1] for r in await fetch(db_url, "SELECT id, figure FROM runs")}
    asked = cohorts + [(cohorts[0][0], "no such configuration", cohorts[0][2], cohorts[0][3])]

    engine = make_engine(db_url, pool_size=1, max_overflow=0)
    try:
        async with make_sessionmaker(engine)() as session:
            found = await _latest_events(session, asked)
            plan = "\n".join(r[0] for r in (await session.execute(
                text(f"EXPLAIN {_LATEST_EVENTS.text}"), cohort_columns(asked))).all())
    finally:
        await engine.dispose()
    assert found == {key: (run_id, figures.get(run_id)) for key, (_, run_id) in newest.items()}
    assert "ix_record_events_cohort" in plan, plan
    assert "Seq Scan on record_events" not in plan, plan
