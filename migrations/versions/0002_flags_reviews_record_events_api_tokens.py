"""flags reviews record events api tokens

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql
revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "workload_revisions",
        sa.Column("canonical_configuration_key", sa.Text(), server_default=sa.text("''"), nullable=False),
    )
    # The same text kernelindex.rules.identity.configuration_key writes: sorted keys, no spaces.
    op.execute(
        """
        UPDATE workload_revisions SET canonical_configuration_key =
          '{"bindings":' || COALESCE((
              SELECT '{' || string_agg(to_json(key)::text || ':' || value::text, ',' ORDER BY key) || '}'
              FROM jsonb_each(canonical_bindings)), '{}')
          || ',"dtype":' || to_json(canonical_dtype)::text || '}'
        """
    )
    op.create_index("ix_runs_eligible_lookup", "runs", ["workload_revision_id", "configuration_key", "status"],
                    postgresql_where=sa.text("superseded_at IS NULL AND retracted_at IS NULL"))
    op.create_table('api_tokens',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('token_sha256', sa.Text(), nullable=False),
    sa.Column('display_prefix', sa.Text(), nullable=False),
    sa.Column('scopes', postgresql.ARRAY(sa.Text()), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_used_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_api_tokens')),
    sa.UniqueConstraint('token_sha256', name=op.f('uq_api_tokens_token_sha256'))
    )
    op.create_table('record_events',
    sa.Column('id', sa.BigInteger(), nullable=False),
    sa.Column('workload_id', sa.Integer(), nullable=False),
    sa.Column('workload_revision_id', sa.Integer(), nullable=False),
    sa.Column('configuration_key', sa.Text(), nullable=False),
    sa.Column('protocol_id', sa.Integer(), nullable=False),
    sa.Column('environment_id', sa.Integer(), nullable=False),
    sa.Column('kind', sa.Text(), nullable=False),
    sa.Column('run_id', sa.BigInteger(), nullable=True),
    sa.Column('previous_run_id', sa.BigInteger(), nullable=True),
    sa.Column('improvement_percent', sa.Double(), nullable=True),
    sa.Column('rule_version', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.CheckConstraint("kind IN ('new_record', 'restored')", name=op.f('ck_record_events_kind_known')),
    sa.ForeignKeyConstraint(['environment_id'], ['environments.id'], name=op.f('fk_record_events_environment_id_environments')),
    sa.ForeignKeyConstraint(['previous_run_id'], ['runs.id'], name=op.f('fk_record_events_previous_run_id_runs')),
    sa.ForeignKeyConstraint(['protocol_id'], ['protocols.id'], name=op.f('fk_record_events_protocol_id_protocols')),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], name=op.f('fk_record_events_run_id_runs')),
    sa.ForeignKeyConstraint(['workload_id'], ['workloads.id'], name=op.f('fk_record_events_workload_id_workloads'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['workload_revision_id'], ['workload_revisions.id'], name=op.f('fk_record_events_workload_revision_id_workload_revisions'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_record_events'))
    )
    op.create_index('ix_record_events_created', 'record_events', ['created_at'], unique=False)
    op.create_index('ix_record_events_workload_created', 'record_events', ['workload_id', 'created_at'], unique=False)
    op.create_table('run_flags',
    sa.Column('id', sa.BigInteger(), nullable=False),
    sa.Column('run_id', sa.BigInteger(), nullable=False),
    sa.Column('code', sa.Text(), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('rule_version', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], name=op.f('fk_run_flags_run_id_runs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_run_flags')),
    sa.UniqueConstraint('run_id', 'code', name=op.f('uq_run_flags_run_id_code'))
    )
    op.create_index(op.f('ix_run_flags_run_id'), 'run_flags', ['run_id'], unique=False)
    op.create_table('run_reviews',
    sa.Column('id', sa.BigInteger(), nullable=False),
    sa.Column('run_id', sa.BigInteger(), nullable=False),
    sa.Column('decision', sa.Text(), nullable=False),
    sa.Column('reviewer', sa.Text(), nullable=False),
    sa.Column('note', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.CheckConstraint("decision IN ('approved', 'rejected')", name=op.f('ck_run_reviews_decision_known')),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], name=op.f('fk_run_reviews_run_id_runs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_run_reviews'))
    )
    op.create_index(op.f('ix_run_reviews_run_id'), 'run_reviews', ['run_id'], unique=False)


def downgrade() -> None:
    op.drop_index("ix_runs_eligible_lookup", table_name="runs")
    op.drop_column("workload_revisions", "canonical_configuration_key")
    op.drop_index(op.f('ix_run_reviews_run_id'), table_name='run_reviews')
    op.drop_table('run_reviews')
    op.drop_index(op.f('ix_run_flags_run_id'), table_name='run_flags')
    op.drop_table('run_flags')
    op.drop_index('ix_record_events_workload_created', table_name='record_events')
    op.drop_index('ix_record_events_created', table_name='record_events')
    op.drop_table('record_events')
    op.drop_table('api_tokens')
