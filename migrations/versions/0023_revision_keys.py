"""runs, record_events and workload_sources check their workload and revision with one foreign key, not two

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-04

A run (and a record event, and a page's source row) names its workload revision and that
revision's workload. Each had a foreign key of its own, so every new row paid two look-ups
(PostgreSQL checks a foreign key row by row): EXPLAIN ANALYZE of a write of 1,000 new records
(`python -m perf.submit_runs`) showed about 3 ms of the runs' INSERT and 3 ms of the events' COPY
in the workload key alone, beside the revision key's own 3 ms each; a batch whose runs each name their own source revision adds as many
rows to workload_sources, with the same two keys.

One key over both columns, (workload_revision_id, workload_id) → workload_revisions (id,
workload_id), does the revision key's look-up and says more: the workload a row names is its
revision's (two keys of their own let a row name one workload and another's revision). Deleting a
workload still deletes its rows (ON DELETE CASCADE: the workload deletes its revisions, each
revision its rows). workload_revisions gets the unique constraint the key refers to.

record_events also lose their keys to protocols and environments, as cohort_bests lost theirs in
0022: an event of a cohort names a run of that cohort, its new holder (run_id) or the holder it lost
(previous_run_id; a "restored" event of a cohort left empty has only that), and that run's own keys
name the same protocol and environment, which cannot be deleted while the run is there (runs are
not deleted but with their workload, whose events go with them). A check constraint,
cohort_event_names_a_run, makes "names a run" hold for every row. 1,000 new records' events: two
of their six look-ups a row (EXPLAIN ANALYZE: about 3 ms each).

Downgrade puts the keys back (validated against the rows present) and drops the check.
"""
from __future__ import annotations

from alembic import op

revision = '0023'
down_revision = '0022'
branch_labels = None
depends_on = None

TABLES = ("runs", "record_events", "workload_sources")
# (column, referenced table) of record_events' keys that the run an event names holds already.
EVENT_KEYS_HELD_BY_THE_RUN = (("protocol_id", "protocols"), ("environment_id", "environments"))
COHORT_EVENT_NAMES_A_RUN = (
    "kind IN ('revision_changed', 'snapshot_retracted') OR run_id IS NOT NULL OR previous_run_id IS NOT NULL"
)


def upgrade() -> None:
    op.create_unique_constraint("uq_workload_revisions_id_workload_id", "workload_revisions", ["id", "workload_id"])
    op.create_check_constraint(op.f("ck_record_events_cohort_event_names_a_run"), "record_events", COHORT_EVENT_NAMES_A_RUN)
    for column, table in EVENT_KEYS_HELD_BY_THE_RUN:
        op.drop_constraint(f"fk_record_events_{column}_{table}", "record_events", type_="foreignkey")
    for table in TABLES:
        op.create_foreign_key(
            f"fk_{table}_revision_of_workload", table, "workload_revisions",
            ["workload_revision_id", "workload_id"], ["id", "workload_id"], ondelete="CASCADE",
        )
        op.drop_constraint(f"fk_{table}_workload_id_workloads", table, type_="foreignkey")
        op.drop_constraint(f"fk_{table}_workload_revision_id_workload_revisions", table, type_="foreignkey")


def downgrade() -> None:
    for column, table in EVENT_KEYS_HELD_BY_THE_RUN:
        op.create_foreign_key(f"fk_record_events_{column}_{table}", "record_events", table, [column], ["id"])
    op.drop_constraint(op.f("ck_record_events_cohort_event_names_a_run"), "record_events", type_="check")
    for table in TABLES:
        op.create_foreign_key(
            f"fk_{table}_workload_revision_id_workload_revisions", table, "workload_revisions",
            ["workload_revision_id"], ["id"], ondelete="CASCADE",
        )
        op.create_foreign_key(f"fk_{table}_workload_id_workloads", table, "workloads", ["workload_id"], ["id"], ondelete="CASCADE")
        op.drop_constraint(f"fk_{table}_revision_of_workload", table, type_="foreignkey")
    op.drop_constraint("uq_workload_revisions_id_workload_id", "workload_revisions", type_="unique")
