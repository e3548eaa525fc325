"""data version: one counter that every committed change to the index moves

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30

The API's response cache keys its entries on this number (kernelindex.web.response_cache). It is
moved by statement triggers, not by application code, so a write from any path (the ingest command,
a mutation, a migration, psql) invalidates the cache. The bump happens once per transaction: later
statements of the same transaction see their own transaction id and leave the row alone.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None

# Every table whose rows the API can show. api_tokens is left out on purpose: using a token
# touches last_used_at, which no read shows. tests/db/test_data_version.py checks that every other
# table carries the trigger, so a table added by a later migration cannot be missed.
VERSIONED_TABLES = (
    "hardware", "environments", "workloads", "workload_revisions", "implementations", "protocols",
    "sources", "source_snapshots", "runs", "run_flags", "run_reviews", "record_events", "cohort_bests",
)


def upgrade() -> None:
    op.create_table(
        'data_version',
        sa.Column('id', sa.SmallInteger(), nullable=False),
        sa.Column('version', sa.BigInteger(), nullable=False),
        sa.Column('changed_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.Column('changed_by_xact', sa.Text(), nullable=True),
        sa.CheckConstraint('id = 1', name=op.f('ck_data_version_single_row')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_data_version')),
    )
    op.execute("INSERT INTO data_version (id, version) VALUES (1, 1)")
    op.execute("""
        CREATE FUNCTION bump_data_version() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            UPDATE data_version
               SET version = version + 1, changed_at = clock_timestamp(),
                   changed_by_xact = pg_current_xact_id()::text
             WHERE id = 1 AND changed_by_xact IS DISTINCT FROM pg_current_xact_id()::text;
            RETURN NULL;
        END $$
    """)
    for table in VERSIONED_TABLES:
        op.execute(
            f"CREATE TRIGGER bump_data_version AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION bump_data_version()"
        )


def downgrade() -> None:
    for table in VERSIONED_TABLES:
        op.execute(f"DROP TRIGGER IF EXISTS bump_data_version ON {table}")
    op.execute("DROP FUNCTION IF EXISTS bump_data_version()")
    op.drop_table('data_version')
