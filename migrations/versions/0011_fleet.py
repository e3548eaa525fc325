"""the fleet: submissions, fleet jobs, and procrastinate's queue schema

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01

Submitted kernels (`submissions`) and the measurements asked for (`fleet_jobs`, what users follow:
state, reason, worker, environment, runs) are ours. The queue that hands jobs to workers is
procrastinate's: its schema is applied here, from the pinned version (pyproject pins
procrastinate==3.10.0; a later version brings its own SQL migrations in
procrastinate/sql/migrations, which a later migration of ours applies). Its tables live beside ours
in the same database, so deferring a job and recording a submission are one transaction.

Neither these tables nor procrastinate's carry the change-log triggers of 0007: no cached response
reads them (the API answers `job`/`jobs` uncached, kernelindex.web.response_cache), and a worker
moving a job from queued to running must not evict any page. The runs a job produces go in through
the ingest writer, whose tables do move the version.

Existing data: nothing changes.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql
from sqlalchemy.util import await_

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None

PROCRASTINATE_VERSION = "3.10.0"


def _procrastinate_schema() -> str:
    from importlib import metadata

    from procrastinate.schema import SchemaManager

    installed = metadata.version("procrastinate")
    if installed != PROCRASTINATE_VERSION:
        raise RuntimeError(
            f"migration 0011 applies procrastinate {PROCRASTINATE_VERSION}'s schema, but {installed} is installed: "
            "install the version pyproject.toml pins"
        )
    return SchemaManager.get_schema()


def upgrade() -> None:
    op.create_table(
        'submissions',
        sa.Column('id', sa.BigInteger(), nullable=False),
        sa.Column('workload_id', sa.Integer(), nullable=False),
        sa.Column('workload_revision_id', sa.Integer(), nullable=False),
        sa.Column('implementation_id', sa.Integer(), nullable=False),
        sa.Column('source_sha256', sa.Text(), nullable=False),
        sa.Column('source_text', sa.Text(), nullable=False),
        sa.Column('filename', sa.Text(), nullable=False),
        sa.Column('submitted_by_token_id', sa.Integer(), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.ForeignKeyConstraint(['implementation_id'], ['implementations.id'], name=op.f('fk_submissions_implementation_id_implementations')),
        sa.ForeignKeyConstraint(['submitted_by_token_id'], ['api_tokens.id'], name=op.f('fk_submissions_submitted_by_token_id_api_tokens'), ondelete='SET NULL'),
        sa.ForeignKeyConstraint(['workload_id'], ['workloads.id'], name=op.f('fk_submissions_workload_id_workloads')),
        sa.ForeignKeyConstraint(['workload_revision_id'], ['workload_revisions.id'], name=op.f('fk_submissions_workload_revision_id_workload_revisions')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_submissions')),
        sa.UniqueConstraint('workload_revision_id', 'source_sha256', name=op.f('uq_submissions_workload_revision_id_source_sha256')),
    )
    op.create_index('ix_submissions_workload_id', 'submissions', ['workload_id'], unique=False)
    op.create_table(
        'fleet_jobs',
        sa.Column('id', sa.BigInteger(), nullable=False),
        sa.Column('dedupe_key', sa.Text(), nullable=False),
        sa.Column('kind', sa.Text(), nullable=False),
        sa.Column('state', sa.Text(), server_default=sa.text("'queued'"), nullable=False),
        sa.Column('workload_id', sa.Integer(), nullable=False),
        sa.Column('workload_revision_id', sa.Integer(), nullable=False),
        sa.Column('implementation_slug', sa.Text(), nullable=False),
        sa.Column('submission_id', sa.BigInteger(), nullable=True),
        sa.Column('hardware', sa.Text(), nullable=False),
        sa.Column('queue_name', sa.Text(), nullable=False),
        sa.Column('bindings', postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'::jsonb"), nullable=False),
        sa.Column('replica', sa.Integer(), server_default=sa.text('0'), nullable=False),
        sa.Column('machine_id', sa.Text(), nullable=True),
        sa.Column('queue_job_id', sa.BigInteger(), nullable=True),
        sa.Column('attempts', sa.Integer(), server_default=sa.text('0'), nullable=False),
        sa.Column('max_attempts', sa.Integer(), nullable=False),
        sa.Column('reason', sa.Text(), nullable=True),
        sa.Column('worker', sa.Text(), nullable=True),
        sa.Column('environment_id', sa.Integer(), nullable=True),
        sa.Column('run_id', sa.BigInteger(), nullable=True),
        sa.Column('baseline_run_id', sa.BigInteger(), nullable=True),
        sa.Column('requested_by_token_id', sa.Integer(), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.Column('started_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('updated_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.CheckConstraint("kind IN ('submission', 'sweep')", name=op.f('ck_fleet_jobs_kind_known')),
        sa.CheckConstraint("state IN ('queued', 'running', 'passed', 'failed', 'cancelled')", name=op.f('ck_fleet_jobs_state_known')),
        sa.CheckConstraint("(kind = 'submission') = (submission_id IS NOT NULL)", name=op.f('ck_fleet_jobs_submission_named')),
        sa.CheckConstraint('max_attempts >= 1', name=op.f('ck_fleet_jobs_attempts_positive')),
        sa.CheckConstraint('replica >= 0', name=op.f('ck_fleet_jobs_replica_known')),
        sa.ForeignKeyConstraint(['baseline_run_id'], ['runs.id'], name=op.f('fk_fleet_jobs_baseline_run_id_runs')),
        sa.ForeignKeyConstraint(['environment_id'], ['environments.id'], name=op.f('fk_fleet_jobs_environment_id_environments')),
        sa.ForeignKeyConstraint(['requested_by_token_id'], ['api_tokens.id'], name=op.f('fk_fleet_jobs_requested_by_token_id_api_tokens'), ondelete='SET NULL'),
        sa.ForeignKeyConstraint(['run_id'], ['runs.id'], name=op.f('fk_fleet_jobs_run_id_runs')),
        sa.ForeignKeyConstraint(['submission_id'], ['submissions.id'], name=op.f('fk_fleet_jobs_submission_id_submissions')),
        sa.ForeignKeyConstraint(['workload_id'], ['workloads.id'], name=op.f('fk_fleet_jobs_workload_id_workloads')),
        sa.ForeignKeyConstraint(['workload_revision_id'], ['workload_revisions.id'], name=op.f('fk_fleet_jobs_workload_revision_id_workload_revisions')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_fleet_jobs')),
        sa.UniqueConstraint('dedupe_key', name=op.f('uq_fleet_jobs_dedupe_key')),
    )
    op.create_index('ix_fleet_jobs_state_hardware', 'fleet_jobs', ['state', 'hardware'], unique=False)
    op.create_index('ix_fleet_jobs_workload_id', 'fleet_jobs', ['workload_id'], unique=False)
    op.create_index('ix_fleet_jobs_submission_id', 'fleet_jobs', ['submission_id'], unique=False)
    op.create_index('ix_fleet_jobs_subject', 'fleet_jobs', ['workload_revision_id', 'implementation_slug', 'hardware'], unique=False)
    # One script of many statements (functions with bodies), as procrastinate's own `schema --apply`
    # runs it: asyncpg takes that only through its simple-query path, so it goes to the driver
    # connection directly, inside this migration's transaction.
    driver = op.get_bind().connection.dbapi_connection.driver_connection
    await_(driver.execute(_procrastinate_schema()))


def downgrade() -> None:
    op.drop_table('fleet_jobs')
    op.drop_table('submissions')
    # procrastinate's objects, all named procrastinate_*: tables (their triggers go with them), then
    # its functions and types.
    op.execute("""
        DO $$
        DECLARE r record;
        BEGIN
            FOR r IN SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE 'procrastinate\\_%' LOOP
                EXECUTE format('DROP TABLE IF EXISTS %I CASCADE', r.tablename);
            END LOOP;
            FOR r IN SELECT p.oid::regprocedure AS f FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                      WHERE n.nspname = current_schema() AND p.proname LIKE 'procrastinate\\_%' LOOP
                EXECUTE format('DROP FUNCTION IF EXISTS %s CASCADE', r.f);
            END LOOP;
            FOR r IN SELECT t.typname FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
                      WHERE n.nspname = current_schema() AND t.typname LIKE 'procrastinate\\_%' AND t.typtype IN ('e', 'c') LOOP
                EXECUTE format('DROP TYPE IF EXISTS %I CASCADE', r.typname);
            END LOOP;
        END $$
    """)
