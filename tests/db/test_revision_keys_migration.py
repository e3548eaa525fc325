"""Migration 0023 (revision keys): runs, record_events and workload_sources check their revision and its workload with one
foreign key over both columns instead of one key each. A database migrated before keeps every row; a
row that names one workload and another workload's revision, allowed before, is refused; deleting a
workload still deletes its runs and events; the downgrade puts the two keys back."""

from __future__ import annotations

import asyncpg
import pytest
from alembic import command

from kernelindex.db.migrate import alembic_config, upgrade
from tests.db.sql import run_sql

TABLES = ("runs", "record_events", "workload_sources")
SINGLE = {
    table: {f"fk_{table}_workload_id_workloads", f"fk_{table}_workload_revision_id_workload_revisions"} for table in TABLES
}


def _workload_keys(db_url: str, table: str) -> set[str]:
    return {r[0] for r in run_sql(
        db_url, f"SELECT conname FROM pg_constraint WHERE conrelid = '{table}'::regclass AND contype = 'f' "
        "AND confrelid IN ('workloads'::regclass, 'workload_revisions'::regclass)",
    )}


def _rows(db_url: str, table: str) -> list:
    return run_sql(db_url, f"SELECT * FROM {table} ORDER BY 1, 2, 3")  # runs and events: by id


def _other_revision(db_url: str, run_id: int) -> int:
    """A revision of another workload than the run's."""
    [(revision,)] = run_sql(
        db_url, "SELECT min(wr.id) FROM workload_revisions wr JOIN runs r ON r.id = $1 WHERE wr.workload_id <> r.workload_id",
        run_id,
    )
    assert revision is not None
    return revision


def test_an_old_database_keeps_its_rows_and_gains_the_one_key(db_url):
    command.downgrade(alembic_config(db_url), "0022")
    for table in TABLES:
        assert _workload_keys(db_url, table) == SINGLE[table]
    before = {table: _rows(db_url, table) for table in TABLES}
    assert all(before.values())  # the seed's runs and record events
    [(run_id,)] = run_sql(db_url, "SELECT min(id) FROM runs")
    other = _other_revision(db_url, run_id)
    # Two keys of their own let a run name one workload and another's revision (put back at once).
    run_sql(db_url, "UPDATE runs SET workload_revision_id = $2 WHERE id = $1", run_id, other)
    [(kept,)] = run_sql(db_url, "SELECT workload_revision_id FROM runs WHERE id = $1", run_id)
    assert kept == other
    run_sql(db_url, "UPDATE runs SET workload_revision_id = $2 WHERE id = $1", run_id, before["runs"][0]["workload_revision_id"])

    upgrade(db_url)
    for table in TABLES:
        assert _workload_keys(db_url, table) == {f"fk_{table}_revision_of_workload"}
        assert _rows(db_url, table) == before[table]
    with pytest.raises(asyncpg.ForeignKeyViolationError):
        run_sql(db_url, "UPDATE runs SET workload_revision_id = $2 WHERE id = $1", run_id, other)
    with pytest.raises(asyncpg.ForeignKeyViolationError):
        run_sql(db_url, "UPDATE record_events SET workload_id = -1 WHERE id = (SELECT min(id) FROM record_events)")
    with pytest.raises(asyncpg.ForeignKeyViolationError):
        run_sql(db_url, "UPDATE workload_sources SET workload_id = -1")

    # Deleting a workload still deletes its runs, events and source rows (through its revisions).
    [(workload_id,)] = run_sql(db_url, "SELECT workload_id FROM runs WHERE id = $1", run_id)
    for table in TABLES:
        assert run_sql(db_url, f"SELECT 1 FROM {table} WHERE workload_id = $1", workload_id)
    run_sql(db_url, "DELETE FROM run_flags USING runs WHERE runs.id = run_flags.run_id AND runs.workload_id = $1", workload_id)
    run_sql(db_url, "UPDATE runs SET superseded_by_id = NULL WHERE workload_id = $1", workload_id)
    run_sql(db_url, "DELETE FROM workloads WHERE id = $1", workload_id)
    for table in TABLES:
        assert not run_sql(db_url, f"SELECT 1 FROM {table} WHERE workload_id = $1", workload_id)


def test_the_downgrade_puts_both_keys_back(db_url):
    command.downgrade(alembic_config(db_url), "0022")
    for table in TABLES:
        assert _workload_keys(db_url, table) == SINGLE[table]
        assert not run_sql(db_url, f"SELECT conname FROM pg_constraint WHERE conrelid = '{table}'::regclass "
                                   "AND contype = 'f' AND NOT convalidated")
    assert not run_sql(db_url, "SELECT 1 FROM pg_constraint WHERE conname = 'uq_workload_revisions_id_workload_id'")
    with pytest.raises(asyncpg.ForeignKeyViolationError):
        run_sql(db_url, "UPDATE runs SET workload_id = -1 WHERE id = (SELECT min(id) FROM runs)")
    upgrade(db_url)
    assert run_sql(db_url, "SELECT 1 FROM pg_constraint WHERE conname = 'uq_workload_revisions_id_workload_id'")


def _event_keys(db_url: str) -> set[str]:
    return {r[0] for r in run_sql(
        db_url, "SELECT conname FROM pg_constraint WHERE conrelid = 'record_events'::regclass AND contype = 'f' "
        "AND confrelid IN ('protocols'::regclass, 'environments'::regclass)",
    )}


def test_events_hold_their_protocol_and_environment_through_the_run_they_name(db_url):
    """record_events lose their keys to protocols and environments: each cohort's event names a run of
    its cohort (the check makes it so), whose keys hold both."""
    command.downgrade(alembic_config(db_url), "0022")
    assert _event_keys(db_url) == {"fk_record_events_protocol_id_protocols", "fk_record_events_environment_id_environments"}
    events = _rows(db_url, "record_events")
    upgrade(db_url)
    assert _event_keys(db_url) == set()
    assert _rows(db_url, "record_events") == events
    # A cohort's event that names no run is refused; one that names only the holder it lost is not.
    [(event_id, run_id)] = run_sql(db_url, "SELECT id, run_id FROM record_events WHERE run_id IS NOT NULL ORDER BY id LIMIT 1")
    with pytest.raises(asyncpg.CheckViolationError):
        run_sql(db_url, "UPDATE record_events SET run_id = NULL, previous_run_id = NULL WHERE id = $1", event_id)
    run_sql(db_url, "UPDATE record_events SET kind = 'restored', run_id = NULL, previous_run_id = $2 WHERE id = $1", event_id, run_id)
    # The environment it names cannot go: the run it names is there.
    [(environment_id,)] = run_sql(db_url, "SELECT environment_id FROM record_events WHERE id = $1", event_id)
    with pytest.raises(asyncpg.ForeignKeyViolationError):
        run_sql(db_url, "DELETE FROM environments WHERE id = $1", environment_id)
    command.downgrade(alembic_config(db_url), "0022")
    assert _event_keys(db_url) == {"fk_record_events_protocol_id_protocols", "fk_record_events_environment_id_environments"}
    assert not run_sql(db_url, "SELECT 1 FROM pg_constraint WHERE conname = 'ck_record_events_cohort_event_names_a_run'")
