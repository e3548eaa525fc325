"""problem_traces: the importer's trace of each problem file, kept apart from the index's revisions

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02

`ingest kernelbench` used to find a file's earlier trace on its workload revision (traced_with, 0006).
That missed three cases seen on the real KernelBench tree: a revision the seed stands in for (its
analysis is the seed's declaration, so the upstream file was traced again on every import), a problem
whose trace failed (traced again on every import, though nothing had changed), and an interrupted
import (its traces were written with the snapshot, at the end, so all of them were lost). This table
keeps each trace, or the problem's own error with the installed modules it happened under, by file
digest and tracer, written as each trace finishes (kernelindex.ingest.trace_cache).

No change-log triggers: no cached response reads it (it is the importer's, like procrastinate's tables).

Existing data: every revision's own trace (traced_with set, an analysis, no error, not a stand-in) is
copied in, so an existing database traces nothing again. Downgrade drops the table; the revisions keep
their traces.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None

TABLE = "problem_traces"

BACKFILL = """
INSERT INTO problem_traces (source_sha256, tracer, analysis)
SELECT DISTINCT ON (source_sha256, traced_with) source_sha256, traced_with, analysis
  FROM workload_revisions
 WHERE traced_with IS NOT NULL AND analysis IS NOT NULL AND semantics_error IS NULL AND NOT stand_in
 ORDER BY source_sha256, traced_with, id DESC
"""


def upgrade() -> None:
    op.create_table(
        TABLE,
        sa.Column('source_sha256', sa.Text(), nullable=False),
        sa.Column('tracer', sa.Text(), nullable=False),
        sa.Column('analysis', postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column('error_stage', sa.Text(), nullable=True),
        sa.Column('error_message', sa.Text(), nullable=True),
        sa.Column('modules_fingerprint', sa.Text(), nullable=True),
        sa.Column('traced_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.CheckConstraint('(analysis IS NULL) <> (error_stage IS NULL)', name=op.f('ck_problem_traces_trace_or_error')),
        sa.CheckConstraint('(error_stage IS NULL) = (error_message IS NULL)', name=op.f('ck_problem_traces_error_whole')),
        sa.CheckConstraint('(error_stage IS NULL) = (modules_fingerprint IS NULL)',
                           name=op.f('ck_problem_traces_failure_fingerprinted')),
        sa.PrimaryKeyConstraint('source_sha256', 'tracer', name=op.f('pk_problem_traces')),
    )
    op.execute(BACKFILL)


def downgrade() -> None:
    op.drop_table(TABLE)
