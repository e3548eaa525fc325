"""initial schema

Revision ID: 0001
Revises: 
Create Date: 2026-11-29
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql
revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('hardware',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('sku', sa.Text(), nullable=False),
    sa.Column('short_name', sa.Text(), nullable=False),
    sa.Column('family', sa.Text(), nullable=False),
    sa.Column('vendor', sa.Text(), nullable=False),
    sa.Column('architecture', sa.Text(), nullable=True),
    sa.Column('driver_product_names', postgresql.ARRAY(sa.Text()), server_default=sa.text("'{}'"), nullable=False),
    sa.Column('priority', sa.Boolean(), server_default=sa.text('false'), nullable=False),
    sa.Column('reference_for_family', sa.Boolean(), server_default=sa.text('false'), nullable=False),
    sa.Column('has_datasheet', sa.Boolean(), server_default=sa.text('true'), nullable=False),
    sa.Column('memory_gb', sa.Double(), nullable=True),
    sa.Column('dram_bandwidth_gbps', sa.Double(), nullable=True),
    sa.Column('fp32_tflops', sa.Double(), nullable=True),
    sa.Column('tf32_tflops', sa.Double(), nullable=True),
    sa.Column('fp16_tflops', sa.Double(), nullable=True),
    sa.Column('bf16_tflops', sa.Double(), nullable=True),
    sa.Column('l2_mb', sa.Double(), nullable=True),
    sa.Column('sm_count', sa.Integer(), nullable=True),
    sa.Column('tdp_w', sa.Double(), nullable=True),
    sa.Column('datasheet_source', sa.Text(), nullable=True),
    sa.Column('datasheet_url', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.CheckConstraint("dram_bandwidth_gbps IS NULL OR (dram_bandwidth_gbps > 0 AND dram_bandwidth_gbps < 'Infinity'::float8)", name=op.f('ck_hardware_bandwidth_positive')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_hardware')),
    sa.UniqueConstraint('sku', name=op.f('uq_hardware_sku'))
    )
    op.create_table('implementations',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('slug', sa.Text(), nullable=False),
    sa.Column('title', sa.Text(), nullable=False),
    sa.Column('framework', sa.Text(), nullable=False),
    sa.Column('language', sa.Text(), nullable=False),
    sa.Column('runtime_id', sa.Text(), nullable=False),
    sa.Column('role', sa.Text(), nullable=False),
    sa.Column('compile_mode', sa.Text(), nullable=True),
    sa.Column('licence', sa.Text(), nullable=True),
    sa.Column('source_availability', sa.Text(), nullable=False),
    sa.Column('source_url', sa.Text(), nullable=True),
    sa.Column('install_recipe', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.CheckConstraint("role IN ('baseline', 'candidate')", name=op.f('ck_implementations_role_known')),
    sa.CheckConstraint("source_availability IN ('mirrored', 'upstream', 'none')", name=op.f('ck_implementations_availability_known')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_implementations')),
    sa.UniqueConstraint('slug', name=op.f('uq_implementations_slug'))
    )
    op.create_table('protocols',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('version', sa.Text(), nullable=False),
    sa.Column('timer', sa.Text(), nullable=True),
    sa.Column('warmup', sa.Integer(), nullable=True),
    sa.Column('trials', sa.Integer(), nullable=True),
    sa.Column('statistic', sa.Text(), server_default=sa.text("'mean'"), nullable=False),
    sa.Column('l2_flush', sa.Boolean(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.CheckConstraint("statistic IN ('mean', 'median', 'min')", name=op.f('ck_protocols_statistic_known')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_protocols')),
    sa.UniqueConstraint('name', 'version', name=op.f('uq_protocols_name_version'))
    )
    op.create_table('sources',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('url', sa.Text(), nullable=True),
    sa.Column('licence', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_sources')),
    sa.UniqueConstraint('name', name=op.f('uq_sources_name'))
    )
    op.create_table('workloads',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('slug', sa.Text(), nullable=False),
    sa.Column('suite', sa.Text(), nullable=False),
    sa.Column('level', sa.Integer(), nullable=False),
    sa.Column('problem_number', sa.Integer(), nullable=False),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('kind', sa.Text(), nullable=False),
    sa.Column('description', sa.Text(), nullable=True),
    sa.Column('current_revision_id', sa.Integer(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.CheckConstraint("kind IN ('model', 'operator', 'fusion')", name=op.f('ck_workloads_kind_known')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_workloads')),
    sa.UniqueConstraint('slug', name=op.f('uq_workloads_slug')),
    sa.UniqueConstraint('suite', 'level', 'problem_number', name=op.f('uq_workloads_suite_level_problem_number'))
    )
    op.create_index('ix_workloads_name_lower', 'workloads', [sa.literal_column('lower(name)')], unique=False)
    op.create_table('environments',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('hardware_id', sa.Integer(), nullable=False),
    sa.Column('provider', sa.Text(), nullable=True),
    sa.Column('label', sa.Text(), nullable=True),
    sa.Column('torch_version', sa.Text(), nullable=True),
    sa.Column('cuda_version', sa.Text(), nullable=True),
    sa.Column('driver_version', sa.Text(), nullable=True),
    sa.Column('python_version', sa.Text(), nullable=True),
    sa.Column('triton_version', sa.Text(), nullable=True),
    sa.Column('details', postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'::jsonb"), nullable=False),
    sa.Column('fingerprint', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.ForeignKeyConstraint(['hardware_id'], ['hardware.id'], name=op.f('fk_environments_hardware_id_hardware')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_environments')),
    sa.UniqueConstraint('fingerprint', name=op.f('uq_environments_fingerprint'))
    )
    op.create_index(op.f('ix_environments_hardware_id'), 'environments', ['hardware_id'], unique=False)
    op.create_table('source_snapshots',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('source_id', sa.Integer(), nullable=False),
    sa.Column('revision', sa.Text(), server_default=sa.text("''"), nullable=False),
    sa.Column('revision_date', sa.Date(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.ForeignKeyConstraint(['source_id'], ['sources.id'], name=op.f('fk_source_snapshots_source_id_sources')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_source_snapshots')),
    sa.UniqueConstraint('source_id', 'revision', name=op.f('uq_source_snapshots_source_id_revision'))
    )
    op.create_index(op.f('ix_source_snapshots_source_id'), 'source_snapshots', ['source_id'], unique=False)
    op.create_table('workload_revisions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('workload_id', sa.Integer(), nullable=False),
    sa.Column('source_sha256', sa.Text(), nullable=False),
    sa.Column('reference_source', sa.Text(), nullable=False),
    sa.Column('source_filename', sa.Text(), nullable=True),
    sa.Column('upstream_revision', sa.Text(), nullable=True),
    sa.Column('canonical_bindings', postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'::jsonb"), nullable=False),
    sa.Column('canonical_dtype', sa.Text(), server_default=sa.text("'fp32'"), nullable=False),
    sa.Column('semantics', postgresql.JSONB(astext_type=sa.Text()), nullable=True),
    sa.Column('semantics_error', sa.Text(), nullable=True),
    sa.Column('identity_sha256', sa.Text(), nullable=False),
    sa.Column('analysis', postgresql.JSONB(astext_type=sa.Text()), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.ForeignKeyConstraint(['workload_id'], ['workloads.id'], name=op.f('fk_workload_revisions_workload_id_workloads'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_workload_revisions')),
    sa.UniqueConstraint('workload_id', 'source_sha256', name=op.f('uq_workload_revisions_workload_id_source_sha256'))
    )
    op.create_index(op.f('ix_workload_revisions_workload_id'), 'workload_revisions', ['workload_id'], unique=False)
    # workloads.current_revision_id and workload_revisions.workload_id point at each other.
    op.create_foreign_key('fk_workloads_current_revision_id_workload_revisions', 'workloads', 'workload_revisions', ['current_revision_id'], ['id'])
    op.create_table('runs',
    sa.Column('id', sa.BigInteger(), nullable=False),
    sa.Column('workload_id', sa.Integer(), nullable=False),
    sa.Column('workload_revision_id', sa.Integer(), nullable=False),
    sa.Column('bindings', postgresql.JSONB(astext_type=sa.Text()), nullable=False),
    sa.Column('dtype', sa.Text(), nullable=False),
    sa.Column('configuration_key', sa.Text(), nullable=False),
    sa.Column('implementation_id', sa.Integer(), nullable=False),
    sa.Column('environment_id', sa.Integer(), nullable=False),
    sa.Column('protocol_id', sa.Integer(), nullable=False),
    sa.Column('source_snapshot_id', sa.Integer(), nullable=False),
    sa.Column('status', sa.Text(), nullable=False),
    sa.Column('failure_reason', sa.Text(), nullable=True),
    sa.Column('mean_ms', sa.Double(), nullable=True),
    sa.Column('std_ms', sa.Double(), nullable=True),
    sa.Column('min_ms', sa.Double(), nullable=True),
    sa.Column('max_ms', sa.Double(), nullable=True),
    sa.Column('median_ms', sa.Double(), nullable=True),
    sa.Column('p5_ms', sa.Double(), nullable=True),
    sa.Column('p95_ms', sa.Double(), nullable=True),
    sa.Column('num_trials', sa.Integer(), nullable=True),
    sa.Column('samples_ms', postgresql.ARRAY(sa.Double()), nullable=True),
    sa.Column('compile_time_ms', sa.Double(), nullable=True),
    sa.Column('correctness', postgresql.JSONB(astext_type=sa.Text()), nullable=True),
    sa.Column('observed_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('evidence', sa.Text(), nullable=False),
    sa.Column('content_sha256', sa.Text(), nullable=False),
    sa.Column('superseded_by_id', sa.BigInteger(), nullable=True),
    sa.Column('superseded_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('retracted_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('retraction_reason', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.CheckConstraint("compile_time_ms IS NULL OR (compile_time_ms >= 0 AND compile_time_ms < 'Infinity'::float8)", name=op.f('ck_runs_compile_time_finite')),
    sa.CheckConstraint("evidence IN ('reported', 'measured')", name=op.f('ck_runs_evidence_known')),
    sa.CheckConstraint("max_ms IS NULL OR (max_ms > 0 AND max_ms < 'Infinity'::float8)", name=op.f('ck_runs_max_finite_positive')),
    sa.CheckConstraint("mean_ms IS NULL OR (mean_ms > 0 AND mean_ms < 'Infinity'::float8)", name=op.f('ck_runs_mean_finite_positive')),
    sa.CheckConstraint("median_ms IS NULL OR (median_ms > 0 AND median_ms < 'Infinity'::float8)", name=op.f('ck_runs_median_finite_positive')),
    sa.CheckConstraint("min_ms IS NULL OR (min_ms > 0 AND min_ms < 'Infinity'::float8)", name=op.f('ck_runs_min_finite_positive')),
    sa.CheckConstraint("p5_ms IS NULL OR (p5_ms > 0 AND p5_ms < 'Infinity'::float8)", name=op.f('ck_runs_p5_finite_positive')),
    sa.CheckConstraint("p95_ms IS NULL OR (p95_ms > 0 AND p95_ms < 'Infinity'::float8)", name=op.f('ck_runs_p95_finite_positive')),
    sa.CheckConstraint("status = 'failed' OR (mean_ms IS NOT NULL AND num_trials IS NOT NULL)", name=op.f('ck_runs_passed_has_stats')),
    sa.CheckConstraint("status = 'passed' OR failure_reason IS NOT NULL", name=op.f('ck_runs_failed_has_reason')),
    sa.CheckConstraint("status IN ('passed', 'failed')", name=op.f('ck_runs_status_known')),
    sa.CheckConstraint("std_ms IS NULL OR (std_ms >= 0 AND std_ms < 'Infinity'::float8)", name=op.f('ck_runs_std_finite')),
    sa.CheckConstraint('max_ms IS NULL OR mean_ms IS NULL OR max_ms >= mean_ms', name=op.f('ck_runs_max_not_below_mean')),
    sa.CheckConstraint('min_ms IS NULL OR mean_ms IS NULL OR min_ms <= mean_ms', name=op.f('ck_runs_min_not_above_mean')),
    sa.CheckConstraint('num_trials IS NULL OR num_trials >= 1', name=op.f('ck_runs_trials_at_least_one')),
    sa.ForeignKeyConstraint(['environment_id'], ['environments.id'], name=op.f('fk_runs_environment_id_environments')),
    sa.ForeignKeyConstraint(['implementation_id'], ['implementations.id'], name=op.f('fk_runs_implementation_id_implementations')),
    sa.ForeignKeyConstraint(['protocol_id'], ['protocols.id'], name=op.f('fk_runs_protocol_id_protocols')),
    sa.ForeignKeyConstraint(['source_snapshot_id'], ['source_snapshots.id'], name=op.f('fk_runs_source_snapshot_id_source_snapshots')),
    sa.ForeignKeyConstraint(['superseded_by_id'], ['runs.id'], name=op.f('fk_runs_superseded_by_id_runs')),
    sa.ForeignKeyConstraint(['workload_id'], ['workloads.id'], name=op.f('fk_runs_workload_id_workloads'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['workload_revision_id'], ['workload_revisions.id'], name=op.f('fk_runs_workload_revision_id_workload_revisions'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_runs'))
    )
    op.create_index('ix_runs_environment', 'runs', ['environment_id'], unique=False)
    op.create_index('ix_runs_implementation', 'runs', ['implementation_id'], unique=False)
    op.create_index('ix_runs_observed_at', 'runs', ['observed_at'], unique=False)
    op.create_index('ix_runs_revision', 'runs', ['workload_revision_id'], unique=False)
    op.create_index('ix_runs_workload_live', 'runs', ['workload_id'], unique=False, postgresql_where=sa.text('superseded_at IS NULL'))
    op.create_index('uq_runs_natural_key_live', 'runs', ['workload_revision_id', 'configuration_key', 'implementation_id', 'environment_id', 'protocol_id', 'source_snapshot_id'], unique=True, postgresql_where=sa.text('superseded_at IS NULL'))


def downgrade() -> None:
    op.drop_constraint('fk_workloads_current_revision_id_workload_revisions', 'workloads', type_='foreignkey')
    op.drop_index('uq_runs_natural_key_live', table_name='runs', postgresql_where=sa.text('superseded_at IS NULL'))
    op.drop_index('ix_runs_workload_live', table_name='runs', postgresql_where=sa.text('superseded_at IS NULL'))
    op.drop_index('ix_runs_revision', table_name='runs')
    op.drop_index('ix_runs_observed_at', table_name='runs')
    op.drop_index('ix_runs_implementation', table_name='runs')
    op.drop_index('ix_runs_environment', table_name='runs')
    op.drop_table('runs')
    op.drop_index(op.f('ix_workload_revisions_workload_id'), table_name='workload_revisions')
    op.drop_table('workload_revisions')
    op.drop_index(op.f('ix_source_snapshots_source_id'), table_name='source_snapshots')
    op.drop_table('source_snapshots')
    op.drop_index(op.f('ix_environments_hardware_id'), table_name='environments')
    op.drop_table('environments')
    op.drop_index('ix_workloads_name_lower', table_name='workloads')
    op.drop_table('workloads')
    op.drop_table('sources')
    op.drop_table('protocols')
    op.drop_table('implementations')
    op.drop_table('hardware')
