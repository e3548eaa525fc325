"""workload_sources: each (workload revision, configuration)'s source snapshots, in the page's order

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02

A workload page shows its first 100 sources (by name, then revision, by code point) of the source
snapshots its cohort bests name. Until now the page unnested every cohort best's
`source_snapshot_ids` and sorted the distinct ids to keep 100: at 10,000 eligible runs in one cohort,
10,158 ids (1,252 distinct), about 4 ms, growing with the runs. This table holds each distinct
snapshot once per (workload revision, configuration key), with the source's name and the snapshot's
revision copied beside it (collation "C"), so ix_workload_sources_order makes the first 100 an index
range (kernelindex.services.pages._first_sources). Sources and snapshots are never renamed: name and
revision are their natural keys.

Derived, like cohort_bests: kernelindex.services.records rewrites the rows of every (revision,
configuration) whose cohort bests it refreshed, in the same transaction, touching only rows that
differ (a refresh that changes nothing moves no data version). Rebuildable from cohort_bests, and so
from runs, at any time (kernelindex.services.records.rebuild_workload_sources).

Change log (0007): rows carry `workload_id`, so the four statement triggers log the workload; the
functions are written out here (not imported from 0007) so this migration keeps meaning what it
meant when 0007's file changes.

Existing data: filled from the cohort bests there are, before the triggers exist (nothing shown
changes, so no data version moves).
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None

TABLE = "workload_sources"
PRIMARY_KEY = ("workload_revision_id", "configuration_key", "source_snapshot_id")

# Every distinct snapshot the cohort bests of a (revision, configuration) name, with its sort key:
# also what kernelindex.services.records.rebuild_workload_sources computes.
BACKFILL = f"""
INSERT INTO {TABLE} (workload_revision_id, configuration_key, source_snapshot_id, workload_id, source_name, snapshot_revision)
SELECT DISTINCT b.workload_revision_id, b.configuration_key, u.id, b.workload_id, s.name, ss.revision
  FROM cohort_bests b
 CROSS JOIN LATERAL unnest(b.source_snapshot_ids) AS u(id)
  JOIN source_snapshots ss ON ss.id = u.id
  JOIN sources s ON s.id = ss.source_id
"""


def _function(event: str) -> str:
    """0007's log_change_<event>_<table>() for a table whose rows carry workload_id."""
    if event == "insert":
        keys = "SELECT array_agg(DISTINCT n.workload_id) INTO keys FROM new_rows n;"
    elif event == "delete":
        keys = "SELECT array_agg(DISTINCT o.workload_id) INTO keys FROM old_rows o;"
    else:
        same = " AND ".join(f"o.{c} = n.{c}" for c in PRIMARY_KEY)
        keys = f"""SELECT count(*), array_agg(DISTINCT s.nk) FILTER (WHERE s.changed), array_agg(DISTINCT s.ok) FILTER (WHERE s.changed)
      INTO matched, keys, old_keys
      FROM (SELECT n.workload_id AS nk, o.workload_id AS ok, n IS DISTINCT FROM o AS changed
              FROM new_rows n JOIN old_rows o ON {same}) s;
    IF matched < (SELECT count(*) FROM new_rows) THEN
        SELECT array_agg(DISTINCT u.k) INTO keys
          FROM (SELECT n.workload_id AS k FROM new_rows n UNION ALL SELECT o.workload_id FROM old_rows o) u;
    ELSIF old_keys IS NOT NULL THEN
        keys := ARRAY(SELECT DISTINCT u FROM unnest(keys || old_keys) AS u);
    END IF;"""
    return f"""
CREATE FUNCTION log_change_{event}_{TABLE}() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    keys bigint[];
    old_keys bigint[];
    matched bigint;
BEGIN
    {keys}
    PERFORM log_data_change(keys::integer[], NULL, false);
    RETURN NULL;
END $$
"""


def upgrade() -> None:
    op.create_table(
        TABLE,
        sa.Column('workload_revision_id', sa.Integer(), nullable=False),
        sa.Column('configuration_key', sa.Text(), nullable=False),
        sa.Column('source_snapshot_id', sa.Integer(), nullable=False),
        sa.Column('workload_id', sa.Integer(), nullable=False),
        sa.Column('source_name', sa.Text(collation="C"), nullable=False),
        sa.Column('snapshot_revision', sa.Text(collation="C"), nullable=False),
        sa.ForeignKeyConstraint(['workload_revision_id'], ['workload_revisions.id'], ondelete='CASCADE',
                                name=op.f('fk_workload_sources_workload_revision_id_workload_revisions')),
        sa.ForeignKeyConstraint(['source_snapshot_id'], ['source_snapshots.id'],
                                name=op.f('fk_workload_sources_source_snapshot_id_source_snapshots')),
        sa.ForeignKeyConstraint(['workload_id'], ['workloads.id'], ondelete='CASCADE',
                                name=op.f('fk_workload_sources_workload_id_workloads')),
        sa.PrimaryKeyConstraint(*PRIMARY_KEY, name=op.f('pk_workload_sources')),
    )
    op.create_index('ix_workload_sources_order', TABLE,
                    ['workload_revision_id', 'configuration_key', 'source_name', 'snapshot_revision', 'source_snapshot_id'])
    op.create_index('ix_workload_sources_workload', TABLE, ['workload_id'])
    op.execute(BACKFILL)
    for event in ("insert", "update", "delete"):
        op.execute(_function(event))
        referencing = {"insert": "NEW TABLE AS new_rows", "update": "NEW TABLE AS new_rows OLD TABLE AS old_rows",
                       "delete": "OLD TABLE AS old_rows"}[event]
        op.execute(
            f"CREATE TRIGGER log_change_{event} AFTER {event.upper()} ON {TABLE} REFERENCING {referencing} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION log_change_{event}_{TABLE}()"
        )
    op.execute(f"CREATE TRIGGER log_change_truncate AFTER TRUNCATE ON {TABLE} FOR EACH STATEMENT EXECUTE FUNCTION log_change_truncate()")


def downgrade() -> None:
    op.drop_table(TABLE)  # its triggers go with it
    for event in ("insert", "update", "delete"):
        op.execute(f"DROP FUNCTION IF EXISTS log_change_{event}_{TABLE}()")
