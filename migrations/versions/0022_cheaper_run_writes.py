"""cheaper writes of runs and records: cohort_bests keeps one foreign key (its run), runs lose ix_runs_revision

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-03

Measured on a write of 1,000 new records (`python -m perf.submit_runs`, EXPLAIN ANALYZE of its
statements): PostgreSQL checks a foreign key row by row, and the upsert of the cohorts' bests spent
about two thirds of its time in its seven foreign keys' checks (7,000 look-ups for 1,000 bests).

cohort_bests is derived data (kernelindex.services.records writes every column of a best from its
run: the run's workload, revision, configuration, protocol, environment, implementation, and the
environment's hardware). Its foreign key to runs (ON DELETE CASCADE) stays, and with it every other
one holds already: the run's own foreign keys name the same rows, so none of them can be missing, and
what deleting them did is unchanged (deleting a workload or revision deletes its runs, which delete
their bests; an environment, protocol, implementation or hardware row with runs cannot be deleted).
The six others only repeated those look-ups.

ix_runs_revision (workload_revision_id) is the leading column of ix_runs_cohort (workload_revision_id,
configuration_key, protocol_id, environment_id), which serves every look-up by revision (and the
cascade from workload_revisions) as well; each new run paid for both.

Downgrade puts both back (the keys validated against the rows present).
"""
from __future__ import annotations

from alembic import op

revision = '0022'
down_revision = '0021'
branch_labels = None
depends_on = None

# (column, referenced table, ON DELETE) of the foreign keys of cohort_bests that its run's already hold.
REPEATED_KEYS = (
    ("workload_revision_id", "workload_revisions", "CASCADE"),
    ("protocol_id", "protocols", None),
    ("environment_id", "environments", None),
    ("implementation_id", "implementations", None),
    ("workload_id", "workloads", "CASCADE"),
    ("hardware_id", "hardware", None),
)


def upgrade() -> None:
    for column, table, _ in REPEATED_KEYS:
        op.drop_constraint(f"fk_cohort_bests_{column}_{table}", "cohort_bests", type_="foreignkey")
    op.drop_index("ix_runs_revision", table_name="runs")


def downgrade() -> None:
    op.create_index("ix_runs_revision", "runs", ["workload_revision_id"], unique=False)
    for column, table, ondelete in REPEATED_KEYS:
        op.create_foreign_key(
            f"fk_cohort_bests_{column}_{table}", "cohort_bests", table, [column], ["id"], ondelete=ondelete,
        )
