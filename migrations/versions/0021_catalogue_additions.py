"""change log: a new catalogue row is told apart from a changed one (`change_log.catalogue_edited`)

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-02

Until now every change to a catalogue table (0007: hardware, environments, implementations,
protocols, sources, source_snapshots, suite_snapshots) was logged the same way, and the API's caches
dropped every workload page for it: one new run for VGG19 that named a source revision of its own
turned ResNet18's cached page into a miss, and reads of other workloads fell to a tenth under one such
write a second. A new row is read only by what reads its table whole (the lists of that table, and
the hardware catalogue every page holds) and by the pages of the workloads whose runs name it, and
those runs are written to their own workloads' rows, which the log names already. A change to an
existing row (UPDATE, DELETE, TRUNCATE) is read by every page that shows it.

So the log row of a version gains `catalogue_edited`: the catalogue tables an existing row of which
changed. `catalogue_tables` keeps meaning what it meant (every catalogue table with any change, new
rows included), so a reader that does not know the new column still evicts as much as before.
log_data_change() takes a fourth argument, p_added (default false: every caller but the catalogue
tables' INSERT functions, rewritten here, means a change to existing rows).

Existing log rows: their catalogue tables count as edited (what they meant when written).
The functions are written out here (not imported from 0007) so this migration keeps meaning what it
meant when 0007's file changes.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0021'
down_revision = '0020'
branch_labels = None
depends_on = None

CHANGE_LOG_KEEP = 10_000  # 0007's
CATALOGUE_TABLES = (
    "hardware", "environments", "implementations", "protocols", "sources", "source_snapshots", "suite_snapshots",
)

LOG_DATA_CHANGE = f"""
CREATE FUNCTION log_data_change(p_workloads integer[], p_table text, p_everything boolean, p_added boolean DEFAULT false)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v bigint;
    edited text := CASE WHEN p_added THEN NULL ELSE p_table END;
BEGIN
    IF p_workloads IS NULL AND p_table IS NULL AND NOT p_everything THEN
        RETURN;  -- the statement changed nothing
    END IF;
    -- Once per transaction: later statements see their own transaction id and leave the row alone,
    -- so a concurrent writer waits on this row and takes the next number when this one commits.
    UPDATE data_version
       SET version = version + 1, changed_at = clock_timestamp(), changed_by_xact = pg_current_xact_id()::text
     WHERE id = 1 AND changed_by_xact IS DISTINCT FROM pg_current_xact_id()::text
    RETURNING version INTO v;
    IF FOUND THEN
        INSERT INTO change_log (version, workload_ids, catalogue_tables, catalogue_edited, everything, changed_at)
        VALUES (v, coalesce(p_workloads, '{{}}'), CASE WHEN p_table IS NULL THEN '{{}}' ELSE ARRAY[p_table] END,
                CASE WHEN edited IS NULL THEN '{{}}' ELSE ARRAY[edited] END, p_everything, clock_timestamp());
        IF v % 100 = 0 THEN
            DELETE FROM change_log WHERE version <= v - {CHANGE_LOG_KEEP};
        END IF;
    ELSE
        UPDATE change_log l
           SET workload_ids = CASE WHEN p_workloads IS NULL THEN l.workload_ids
                                   ELSE ARRAY(SELECT DISTINCT u FROM unnest(l.workload_ids || p_workloads) AS u ORDER BY u) END,
               catalogue_tables = CASE WHEN p_table IS NULL OR p_table = ANY (l.catalogue_tables) THEN l.catalogue_tables
                                       ELSE l.catalogue_tables || p_table END,
               catalogue_edited = CASE WHEN edited IS NULL OR edited = ANY (l.catalogue_edited) THEN l.catalogue_edited
                                       ELSE l.catalogue_edited || edited END,
               everything = l.everything OR p_everything
         WHERE l.version = (SELECT d.version FROM data_version d WHERE d.id = 1);
        -- No row: this transaction moved the version before the log existed (an upgrade);
        -- readers find that version missing from the log and drop everything, which is right.
    END IF;
END $$
"""

# 0007's, as it was (for downgrade()).
OLD_LOG_DATA_CHANGE = f"""
CREATE FUNCTION log_data_change(p_workloads integer[], p_table text, p_everything boolean) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v bigint;
BEGIN
    IF p_workloads IS NULL AND p_table IS NULL AND NOT p_everything THEN
        RETURN;  -- the statement changed nothing
    END IF;
    UPDATE data_version
       SET version = version + 1, changed_at = clock_timestamp(), changed_by_xact = pg_current_xact_id()::text
     WHERE id = 1 AND changed_by_xact IS DISTINCT FROM pg_current_xact_id()::text
    RETURNING version INTO v;
    IF FOUND THEN
        INSERT INTO change_log (version, workload_ids, catalogue_tables, everything, changed_at)
        VALUES (v, coalesce(p_workloads, '{{}}'), CASE WHEN p_table IS NULL THEN '{{}}' ELSE ARRAY[p_table] END,
                p_everything, clock_timestamp());
        IF v % 100 = 0 THEN
            DELETE FROM change_log WHERE version <= v - {CHANGE_LOG_KEEP};
        END IF;
    ELSE
        UPDATE change_log l
           SET workload_ids = CASE WHEN p_workloads IS NULL THEN l.workload_ids
                                   ELSE ARRAY(SELECT DISTINCT u FROM unnest(l.workload_ids || p_workloads) AS u ORDER BY u) END,
               catalogue_tables = CASE WHEN p_table IS NULL OR p_table = ANY (l.catalogue_tables) THEN l.catalogue_tables
                                       ELSE l.catalogue_tables || p_table END,
               everything = l.everything OR p_everything
         WHERE l.version = (SELECT d.version FROM data_version d WHERE d.id = 1);
    END IF;
END $$
"""


def _insert_function(table: str, added: bool) -> str:
    """0007's log_change_insert_<table>() of a catalogue table; `added`: logged as new rows."""
    call = f"log_data_change(NULL, TG_TABLE_NAME::text, false{', true' if added else ''})"
    return f"""
CREATE OR REPLACE FUNCTION log_change_insert_{table}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM new_rows) THEN
        PERFORM {call};
    END IF;
    RETURN NULL;
END $$
"""


def upgrade() -> None:
    op.add_column('change_log', sa.Column('catalogue_edited', sa.ARRAY(sa.Text()), server_default=sa.text("'{}'"),
                                          nullable=False))
    op.execute("UPDATE change_log SET catalogue_edited = catalogue_tables WHERE catalogue_tables <> '{}'")
    # Dropped, not replaced: CREATE OR REPLACE cannot add an argument, and beside a four-argument
    # function with a default a three-argument one would make every three-argument call ambiguous.
    # The trigger functions name it in PL/pgSQL, resolved when they run.
    op.execute("DROP FUNCTION log_data_change(integer[], text, boolean)")
    op.execute(LOG_DATA_CHANGE)
    for table in CATALOGUE_TABLES:
        op.execute(_insert_function(table, added=True))


def downgrade() -> None:
    op.execute("DROP FUNCTION log_data_change(integer[], text, boolean, boolean)")
    op.execute(OLD_LOG_DATA_CHANGE)
    for table in CATALOGUE_TABLES:
        op.execute(_insert_function(table, added=False))
    op.drop_column('change_log', 'catalogue_edited')
