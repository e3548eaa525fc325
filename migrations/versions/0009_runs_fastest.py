"""ix_runs_fastest: a workload's eligible runs, fastest first, read from an index

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01

`runs(workload:, orderBy: FASTEST, eligibleOnly: true)` (and every page after it) wants the live,
passed, unretracted runs of one revision at one configuration, in the order
(coalesce(mean_ms, 'Infinity'), id). This partial index holds exactly those runs in exactly that
order, so a page is an index range of first + 1 entries (kernelindex.services.run_filters
.eligible_of_workload, kernelindex.graphql.queries.runs.ORDERS): no sort, however many runs the
workload has. The expression must stay the one the query writes, literal 'Infinity' included.

Existing data: the index is built from the rows there are; nothing else changes.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_runs_fastest", "runs",
        ["workload_revision_id", "configuration_key", sa.text("coalesce(mean_ms, 'Infinity'::float8)"), "id"],
        postgresql_where=sa.text("superseded_at IS NULL AND retracted_at IS NULL AND status = 'passed'"),
    )


def downgrade() -> None:
    op.drop_index("ix_runs_fastest", table_name="runs")
