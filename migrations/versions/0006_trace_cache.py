"""traced_with: which tracer produced a revision's stored analysis, so a re-import can reuse it

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01

A revision is the digest of its upstream file, and the trace of a file depends only on its bytes, the
tracer's revision and torch: `ingest kernelbench` reuses the stored analysis of a revision whose
traced_with equals what it would trace with now, and traces only the others (kernelindex.ingest.kernelbench).

Existing data: NULL (unknown tracer): traced again on the next import, which then records it.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("workload_revisions", sa.Column("traced_with", sa.Text(), nullable=True))
    # The importer looks traces up by digest.
    op.create_index("ix_workload_revisions_source_sha256", "workload_revisions", ["source_sha256"])


def downgrade() -> None:
    op.drop_index("ix_workload_revisions_source_sha256", table_name="workload_revisions")
    op.drop_column("workload_revisions", "traced_with")
