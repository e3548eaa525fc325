"""precomputed cohort bests

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql
revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('cohort_bests',
    sa.Column('workload_revision_id', sa.Integer(), nullable=False),
    sa.Column('configuration_key', sa.Text(), nullable=False),
    sa.Column('protocol_id', sa.Integer(), nullable=False),
    sa.Column('environment_id', sa.Integer(), nullable=False),
    sa.Column('implementation_id', sa.Integer(), nullable=False),
    sa.Column('workload_id', sa.Integer(), nullable=False),
    sa.Column('hardware_id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.BigInteger(), nullable=False),
    sa.Column('mean_ms', sa.Double(), nullable=False),
    sa.Column('observed_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('run_count', sa.Integer(), nullable=False),
    sa.Column('last_observed_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('evidence_kinds', postgresql.ARRAY(sa.Text()), nullable=False),
    sa.Column('source_snapshot_ids', postgresql.ARRAY(sa.BigInteger()), nullable=False),
    sa.ForeignKeyConstraint(['environment_id'], ['environments.id'], name=op.f('fk_cohort_bests_environment_id_environments')),
    sa.ForeignKeyConstraint(['hardware_id'], ['hardware.id'], name=op.f('fk_cohort_bests_hardware_id_hardware')),
    sa.ForeignKeyConstraint(['implementation_id'], ['implementations.id'], name=op.f('fk_cohort_bests_implementation_id_implementations')),
    sa.ForeignKeyConstraint(['protocol_id'], ['protocols.id'], name=op.f('fk_cohort_bests_protocol_id_protocols')),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], name=op.f('fk_cohort_bests_run_id_runs'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['workload_id'], ['workloads.id'], name=op.f('fk_cohort_bests_workload_id_workloads'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['workload_revision_id'], ['workload_revisions.id'], name=op.f('fk_cohort_bests_workload_revision_id_workload_revisions'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('workload_revision_id', 'configuration_key', 'protocol_id', 'environment_id', 'implementation_id', name=op.f('pk_cohort_bests'))
    )
    op.create_index('ix_cohort_bests_hardware', 'cohort_bests', ['hardware_id'], unique=False)
    op.create_index('ix_cohort_bests_run', 'cohort_bests', ['run_id'], unique=False)
    op.create_index('ix_cohort_bests_workload', 'cohort_bests', ['workload_id'], unique=False)
    op.create_index('ix_runs_cohort', 'runs', ['workload_revision_id', 'configuration_key', 'protocol_id', 'environment_id'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_runs_cohort', table_name='runs')
    op.drop_index('ix_cohort_bests_workload', table_name='cohort_bests')
    op.drop_index('ix_cohort_bests_run', table_name='cohort_bests')
    op.drop_index('ix_cohort_bests_hardware', table_name='cohort_bests')
    op.drop_table('cohort_bests')
