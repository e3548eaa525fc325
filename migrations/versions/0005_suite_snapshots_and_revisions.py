"""suite snapshots: upstream history decides a workload's current revision (revisions-v1)

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01

A revision's identity is the sha256 of the upstream file's bytes. Which revision is current follows
from the snapshots a suite was read at (suite_snapshots, suite_snapshot_members) and their revision
dates, so the order of imports and seeds no longer matters (kernelindex.ingest.workloads).

- workloads: (suite, level, problem_number) is no longer unique: upstream replaces and renames
  problems under the same number, and a different problem is a different workload;
  in_latest_snapshot says whether the suite's latest complete snapshot still holds it.
- workload_revisions: source_size, and stand_in / stand_in_sha256 for the seed's own modules that
  stand in for an upstream file the seed names by digest.
- record_events: kind 'revision_changed' (no cohort: protocol and environment may be NULL).

Existing data: one snapshot per (suite, upstream revision) the revisions name, dated by the source
snapshot of the same revision where there is one, incomplete; current revisions are kept.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'suite_snapshots',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('suite', sa.Text(), nullable=False),
        sa.Column('upstream_revision', sa.Text(), nullable=False),
        sa.Column('revision_date', sa.Date(), nullable=True),
        sa.Column('complete', sa.Boolean(), server_default=sa.text('false'), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_suite_snapshots')),
        sa.UniqueConstraint('suite', 'upstream_revision', name=op.f('uq_suite_snapshots_suite_upstream_revision')),
    )
    op.create_table(
        'suite_snapshot_members',
        sa.Column('snapshot_id', sa.Integer(), nullable=False),
        sa.Column('workload_id', sa.Integer(), nullable=False),
        sa.Column('workload_revision_id', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['snapshot_id'], ['suite_snapshots.id'], name=op.f('fk_suite_snapshot_members_snapshot_id_suite_snapshots'), ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['workload_id'], ['workloads.id'], name=op.f('fk_suite_snapshot_members_workload_id_workloads'), ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['workload_revision_id'], ['workload_revisions.id'], name=op.f('fk_suite_snapshot_members_workload_revision_id_workload_revisions'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('snapshot_id', 'workload_id', name=op.f('pk_suite_snapshot_members')),
    )
    op.create_index('ix_suite_snapshot_members_workload', 'suite_snapshot_members', ['workload_id'])
    op.create_index('ix_suite_snapshot_members_revision', 'suite_snapshot_members', ['workload_revision_id'])

    op.drop_constraint(op.f('uq_workloads_suite_level_problem_number'), 'workloads', type_='unique')
    op.create_index('ix_workloads_suite_level_problem', 'workloads', ['suite', 'level', 'problem_number'])
    op.add_column('workloads', sa.Column('in_latest_snapshot', sa.Boolean(), nullable=True))

    op.add_column('workload_revisions', sa.Column('source_size', sa.Integer(), nullable=True))
    op.add_column('workload_revisions', sa.Column('stand_in', sa.Boolean(), server_default=sa.text('false'), nullable=False))
    op.add_column('workload_revisions', sa.Column('stand_in_sha256', sa.Text(), nullable=True))

    op.drop_constraint(op.f('ck_record_events_kind_known'), 'record_events', type_='check')
    op.create_check_constraint(
        op.f('ck_record_events_kind_known'), 'record_events', "kind IN ('new_record', 'restored', 'revision_changed')"
    )
    op.alter_column('record_events', 'protocol_id', existing_type=sa.Integer(), nullable=True)
    op.alter_column('record_events', 'environment_id', existing_type=sa.Integer(), nullable=True)
    op.create_check_constraint(
        op.f('ck_record_events_cohort_known'), 'record_events',
        "kind = 'revision_changed' OR (protocol_id IS NOT NULL AND environment_id IS NOT NULL)",
    )

    # The history already stored, as incomplete snapshots (no current revision changes).
    op.execute("""
        INSERT INTO suite_snapshots (suite, upstream_revision, revision_date, complete)
        SELECT w.suite, r.upstream_revision,
               (SELECT max(s.revision_date) FROM source_snapshots s WHERE s.revision <> ''
                   AND (s.revision LIKE r.upstream_revision || '%' OR r.upstream_revision LIKE s.revision || '%')),
               false
          FROM workload_revisions r JOIN workloads w ON w.id = r.workload_id
         WHERE r.upstream_revision IS NOT NULL AND r.upstream_revision <> ''
         GROUP BY w.suite, r.upstream_revision
    """)
    op.execute("""
        INSERT INTO suite_snapshot_members (snapshot_id, workload_id, workload_revision_id)
        SELECT DISTINCT ON (s.id, r.workload_id) s.id, r.workload_id, r.id
          FROM workload_revisions r JOIN workloads w ON w.id = r.workload_id
          JOIN suite_snapshots s ON s.suite = w.suite AND s.upstream_revision = r.upstream_revision
         ORDER BY s.id, r.workload_id, r.id DESC
    """)
    for table in ('suite_snapshots', 'suite_snapshot_members'):
        op.execute(
            f"CREATE TRIGGER bump_data_version AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION bump_data_version()"
        )


def downgrade() -> None:
    op.execute("DELETE FROM record_events WHERE kind = 'revision_changed'")
    op.drop_constraint(op.f('ck_record_events_cohort_known'), 'record_events', type_='check')
    op.alter_column('record_events', 'environment_id', existing_type=sa.Integer(), nullable=False)
    op.alter_column('record_events', 'protocol_id', existing_type=sa.Integer(), nullable=False)
    op.drop_constraint(op.f('ck_record_events_kind_known'), 'record_events', type_='check')
    op.create_check_constraint(op.f('ck_record_events_kind_known'), 'record_events', "kind IN ('new_record', 'restored')")
    op.drop_column('workload_revisions', 'stand_in_sha256')
    op.drop_column('workload_revisions', 'stand_in')
    op.drop_column('workload_revisions', 'source_size')
    op.drop_column('workloads', 'in_latest_snapshot')
    op.drop_index('ix_workloads_suite_level_problem', table_name='workloads')
    # Fails when two workloads now share a number: that history cannot be told in the old schema.
    op.create_unique_constraint(
        op.f('uq_workloads_suite_level_problem_number'), 'workloads', ['suite', 'level', 'problem_number']
    )
    op.drop_table('suite_snapshot_members')
    op.drop_table('suite_snapshots')
