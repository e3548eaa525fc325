"""Migration 0016 (any suite): existing runs get their headline figure from their mean without moving
the data version; workloads are identified by level and number or by their suite's own name; the
downgrade refuses while a workload of another suite is stored, and works otherwise."""

from __future__ import annotations

import asyncpg
import pytest
from alembic import command

from kernelindex.db.migrate import alembic_config, upgrade
from tests.db.sql import run_sql


def test_existing_runs_get_their_mean_as_figure_and_nothing_shown_moves(db_url):
    command.downgrade(alembic_config(db_url), "0015")
    version = run_sql(db_url, "SELECT version FROM data_version WHERE id = 1")[0][0]
    passed = run_sql(db_url, "SELECT count(*) FROM runs WHERE status = 'passed'")[0][0]
    assert passed > 0  # the seed's runs
    upgrade(db_url)
    rows = run_sql(db_url, "SELECT count(*) FILTER (WHERE figure = mean_ms), count(*) FILTER (WHERE figure IS NULL AND status = 'passed') FROM runs")
    assert (rows[0][0], rows[0][1]) == (passed, 0)
    assert run_sql(db_url, "SELECT version FROM data_version WHERE id = 1")[0][0] == version
    # the protocols the seed holds are latency protocols in ms
    assert {tuple(r) for r in run_sql(db_url, "SELECT DISTINCT metric, unit FROM protocols")} == {("latency", "ms")}


def test_a_workload_is_identified_by_level_and_number_or_by_its_suites_own_name(db_url):
    insert = ("INSERT INTO workloads (slug, suite, level, problem_number, suite_key, name, kind) "
              "VALUES ($1, $2, $3, $4, $5, 'x', 'operator')")
    run_sql(db_url, insert, "liger-kernel-rms-norm-forward", "liger-kernel", None, None, "rms_norm-forward")
    with pytest.raises(asyncpg.CheckViolationError, match="identified_in_suite"):
        run_sql(db_url, insert, "nameless", "liger-kernel", None, None, None)
    with pytest.raises(asyncpg.UniqueViolationError, match="ux_workloads_suite_key"):
        run_sql(db_url, insert, "liger-kernel-rms-norm-forward-2", "liger-kernel", None, None, "rms_norm-forward")
    # the same own name in another suite is another workload
    run_sql(db_url, insert, "other-rms-norm-forward", "other-suite", None, None, "rms_norm-forward")


def test_a_protocols_unit_follows_its_metric(db_url):
    insert = "INSERT INTO protocols (name, version, statistic, metric, unit) VALUES ($1, '1', $2, $3, $4)"
    run_sql(db_url, insert, "liger-memory", "median", "memory", "MB")
    run_sql(db_url, insert, "gpumode-score", "geomean", "score", "s")
    with pytest.raises(asyncpg.CheckViolationError, match="unit_of_metric"):
        run_sql(db_url, insert, "memory-in-ms", "median", "memory", "ms")
    with pytest.raises(asyncpg.CheckViolationError, match="statistic_known"):
        run_sql(db_url, insert, "p99", "p99", "latency", "ms")


def test_the_downgrade_refuses_while_another_suites_workload_is_stored_and_works_otherwise(db_url):
    run_sql(db_url, "INSERT INTO workloads (slug, suite, suite_key, name, kind) VALUES ('w', 'liger-kernel', 'k', 'k', 'operator')")
    with pytest.raises(Exception, match="workloads of suites other than KernelBench"):
        command.downgrade(alembic_config(db_url), "0015")
    run_sql(db_url, "DELETE FROM workloads WHERE suite = 'liger-kernel'")
    command.downgrade(alembic_config(db_url), "0015")
    columns = {r[0] for r in run_sql(db_url, "SELECT column_name FROM information_schema.columns WHERE table_name = 'runs'")}
    assert "figure" not in columns and "mean_ms" in columns
    upgrade(db_url)
