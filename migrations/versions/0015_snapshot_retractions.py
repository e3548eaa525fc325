"""snapshot retractions: a suite or source snapshot can be retracted, and the record history says why

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02

An import under a wrong revision (issue 26: the enclosing repository's commit taken for KernelBench's)
left duplicate runs that nothing could undo short of wiping the database. `kernelindex snapshot
retract` (kernelindex.services.snapshots) now marks the suite snapshot and its source snapshots
retracted, with when and why; their runs stay stored, each retracted with the snapshot's reason.
A retracted suite snapshot no longer decides current revisions or the latest complete snapshot.

record_events gains `reason` and the kind 'snapshot_retracted' (a workload-level event, like
'revision_changed': no protocol, environment or run), appended to each workload the retraction
touched, so its history says why its records moved.

No data changes: nothing is retracted yet. Downgrade deletes the 'snapshot_retracted' events and drops
the columns; runs retracted with a snapshot stay retracted (their reason says so).
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None

_KINDS = "'new_record', 'restored', 'revision_changed'"


def upgrade() -> None:
    for table in ('suite_snapshots', 'source_snapshots'):
        op.add_column(table, sa.Column('retracted_at', sa.DateTime(timezone=True), nullable=True))
        op.add_column(table, sa.Column('retraction_reason', sa.Text(), nullable=True))
    op.add_column('record_events', sa.Column('reason', sa.Text(), nullable=True))
    op.drop_constraint(op.f('ck_record_events_kind_known'), 'record_events', type_='check')
    op.create_check_constraint(op.f('ck_record_events_kind_known'), 'record_events', f"kind IN ({_KINDS}, 'snapshot_retracted')")
    op.drop_constraint(op.f('ck_record_events_cohort_known'), 'record_events', type_='check')
    op.create_check_constraint(
        op.f('ck_record_events_cohort_known'), 'record_events',
        "kind IN ('revision_changed', 'snapshot_retracted') OR (protocol_id IS NOT NULL AND environment_id IS NOT NULL)",
    )


def downgrade() -> None:
    op.execute("DELETE FROM record_events WHERE kind = 'snapshot_retracted'")
    op.drop_constraint(op.f('ck_record_events_cohort_known'), 'record_events', type_='check')
    op.create_check_constraint(
        op.f('ck_record_events_cohort_known'), 'record_events',
        "kind = 'revision_changed' OR (protocol_id IS NOT NULL AND environment_id IS NOT NULL)",
    )
    op.drop_constraint(op.f('ck_record_events_kind_known'), 'record_events', type_='check')
    op.create_check_constraint(op.f('ck_record_events_kind_known'), 'record_events', f"kind IN ({_KINDS})")
    op.drop_column('record_events', 'reason')
    for table in ('suite_snapshots', 'source_snapshots'):
        op.drop_column(table, 'retraction_reason')
        op.drop_column(table, 'retracted_at')
