"""Migration 0022 (cheaper run writes): cohort_bests keeps its foreign key to its run and drops the six
its run's keys already hold; runs lose ix_runs_revision (ix_runs_cohort leads with its column). A
database migrated before keeps its bests and their cascades; the downgrade puts the keys and the
index back, validated against the rows present."""

from __future__ import annotations

import asyncpg
import pytest
from alembic import command

from kernelindex.db.migrate import alembic_config, upgrade
from tests.db.sql import run_sql


def _best_keys(db_url: str) -> set[str]:
    return {r[0] for r in run_sql(db_url, "SELECT conname FROM pg_constraint WHERE conrelid = 'cohort_bests'::regclass AND contype = 'f'")}


def _run_indexes(db_url: str) -> set[str]:
    return {r[0] for r in run_sql(db_url, "SELECT indexname FROM pg_indexes WHERE tablename = 'runs'")}


REPEATED = {
    "fk_cohort_bests_workload_revision_id_workload_revisions", "fk_cohort_bests_protocol_id_protocols",
    "fk_cohort_bests_environment_id_environments", "fk_cohort_bests_implementation_id_implementations",
    "fk_cohort_bests_workload_id_workloads", "fk_cohort_bests_hardware_id_hardware",
}
BESTS = "SELECT * FROM cohort_bests ORDER BY workload_revision_id, configuration_key, protocol_id, environment_id, implementation_id"


def test_an_old_database_keeps_its_bests_and_their_cascades(db_url):
    command.downgrade(alembic_config(db_url), "0021")
    assert _best_keys(db_url) == REPEATED | {"fk_cohort_bests_run_id_runs"}
    assert "ix_runs_revision" in _run_indexes(db_url)
    bests = run_sql(db_url, BESTS)
    assert bests  # the seed's records
    upgrade(db_url)
    assert _best_keys(db_url) == {"fk_cohort_bests_run_id_runs"}
    assert "ix_runs_revision" not in _run_indexes(db_url) and "ix_runs_cohort" in _run_indexes(db_url)
    assert run_sql(db_url, BESTS) == bests
    # A best goes with its run (the key kept), and so with its workload (whose runs go with it).
    [(run_id, workload_id)] = run_sql(db_url, "SELECT run_id, workload_id FROM cohort_bests ORDER BY run_id LIMIT 1")
    run_sql(db_url, "DELETE FROM record_events WHERE run_id = $1 OR previous_run_id = $1", run_id)
    run_sql(db_url, "DELETE FROM runs WHERE id = $1", run_id)
    assert not run_sql(db_url, "SELECT 1 FROM cohort_bests WHERE run_id = $1", run_id)
    run_sql(db_url, "DELETE FROM record_events WHERE workload_id = $1", workload_id)
    run_sql(db_url, "DELETE FROM run_flags USING runs WHERE runs.id = run_flags.run_id AND runs.workload_id = $1", workload_id)
    run_sql(db_url, "UPDATE runs SET superseded_by_id = NULL WHERE workload_id = $1", workload_id)
    run_sql(db_url, "DELETE FROM workloads WHERE id = $1", workload_id)
    assert not run_sql(db_url, "SELECT 1 FROM cohort_bests WHERE workload_id = $1", workload_id)
    # A run's environment still cannot go while the run (and so its best) is there.
    [(environment_id,)] = run_sql(db_url, "SELECT environment_id FROM cohort_bests ORDER BY run_id LIMIT 1")
    with pytest.raises(asyncpg.ForeignKeyViolationError):
        run_sql(db_url, "DELETE FROM environments WHERE id = $1", environment_id)


def test_the_downgrade_puts_the_keys_and_the_index_back(db_url):
    command.downgrade(alembic_config(db_url), "0021")
    assert _best_keys(db_url) == REPEATED | {"fk_cohort_bests_run_id_runs"}
    assert {r[0] for r in run_sql(db_url, "SELECT conname FROM pg_constraint WHERE conrelid = 'cohort_bests'::regclass "
                                        "AND contype = 'f' AND NOT convalidated")} == set()
    assert "ix_runs_revision" in _run_indexes(db_url)
    with pytest.raises(asyncpg.ForeignKeyViolationError):
        run_sql(db_url, "UPDATE cohort_bests SET hardware_id = -1 WHERE run_id = (SELECT min(run_id) FROM cohort_bests)")
    upgrade(db_url)
