"""line_sha: the digest of the input line a run came from, so an unchanged re-ingest is a lookup

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01

`ingest runs` stores with each run the digest of its line's bytes (and of the version of the checks
that passed it: kernelindex.ingest.records.line_digest). A later ingest of the very same bytes that
resolve to the same workload revision finds that live run by digest and counts the line unchanged
without checking it again (kernelindex.ingest.writer.RunWriter.skip_known): the line passed these
very checks before, and its run is live.

Existing data: NULL (runs submitted through the API, or stored before this): their lines take the
full path, which compares content digests as before.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("line_sha", sa.LargeBinary(), nullable=True))
    op.create_index(
        "ix_runs_line_sha_live", "runs", ["line_sha"],
        postgresql_where=sa.text("superseded_at IS NULL AND line_sha IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_runs_line_sha_live", table_name="runs")
    op.drop_column("runs", "line_sha")
