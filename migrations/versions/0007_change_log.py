"""change log: what each data version changed (the workloads, the catalogue tables), written by triggers

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02

0004 moved `data_version` on every statement that touched a shown table, rows or not, and said
nothing about what changed, so the API's response cache dropped every entry on every write (a no-op
ingest included). From here on:

- a statement moves the version only when it changed a row: statement triggers with transition
  tables (one per INSERT, UPDATE and DELETE; PostgreSQL allows transition tables on single-event
  triggers only) look at the rows the statement touched; an UPDATE that leaves a row as it was
  (`SET x = x`, an ON CONFLICT … DO UPDATE to the same values) is no change. A TRUNCATE is "everything".
- the version still moves once per transaction, and the transaction's `change_log` row (version,
  workload_ids, catalogue_tables, everything) gathers what all of its statements changed: the
  workload ids carried by the rows (runs, cohort_bests, record_events, workload_revisions,
  suite_snapshot_members: `workload_id`; workloads: `id`; run_flags, run_reviews: through their run),
  or the name of a catalogue table (hardware, environments, implementations, protocols, sources,
  source_snapshots, suite_snapshots). A run-keyed row whose run cannot be found is "everything".
- the log is short: every 100th version deletes the rows older than the last CHANGE_LOG_KEEP
  versions. A reader whose last-known version is older than the log (or finds a version missing)
  treats everything as changed (kernelindex.web.response_cache).

For a later migration: an UPDATE's rows are compared whole (`n IS DISTINCT FROM o`), so every column
needs an equality operator (jsonb, not json); the functions pair rows on the primary key read here,
so a table whose primary key changes needs its log_change_update_<table>() made again; a new table
the API shows needs the four triggers (tests/db/test_data_version.py fails until it has them).

Set-based on purpose: ingest writes 100,000 runs in a few INSERT … SELECT statements, and a trigger
per row would cost as much again; these run once per statement over the transition tables.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None

# How many versions of the log are kept. At ten writing transactions a second that is a quarter of
# an hour; a server process that saw no request for longer drops its whole cache once, nothing worse.
CHANGE_LOG_KEEP = 10_000

# Tables whose rows carry the workload they belong to, and the column that names it.
WORKLOAD_TABLES = {
    "workloads": "id",
    "workload_revisions": "workload_id",
    "suite_snapshot_members": "workload_id",
    "runs": "workload_id",
    "record_events": "workload_id",
    "cohort_bests": "workload_id",
}
# Tables whose rows reach their workload through a run (run_id → runs.workload_id).
RUN_TABLES = ("run_flags", "run_reviews")
# Shared by every workload's page: a change here is a catalogue change.
CATALOGUE_TABLES = (
    "hardware", "environments", "implementations", "protocols", "sources", "source_snapshots", "suite_snapshots",
)
LOGGED_TABLES = (*WORKLOAD_TABLES, *RUN_TABLES, *CATALOGUE_TABLES)

# 0004's and 0005's triggers, put back by downgrade().
OLD_VERSIONED_TABLES = (
    "hardware", "environments", "workloads", "workload_revisions", "implementations", "protocols",
    "sources", "source_snapshots", "runs", "run_flags", "run_reviews", "record_events", "cohort_bests",
    "suite_snapshots", "suite_snapshot_members",
)

EVENTS = ("insert", "update", "delete")

LOG_DATA_CHANGE = f"""
CREATE FUNCTION log_data_change(p_workloads integer[], p_table text, p_everything boolean) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v bigint;
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
        -- No row: this transaction moved the version before the log existed (the upgrade itself);
        -- readers find that version missing from the log and drop everything, which is right.
    END IF;
END $$
"""


def _keys(event: str, column: str, pk: list[str]) -> str:
    """PL/pgSQL that sets `keys` to the distinct values of `column` (a workload or run id) in the rows
    the statement changed, from its transition tables (new_rows, old_rows). For an UPDATE: the rows
    whose new image differs from the old one of the same primary key, both images' values; if a
    primary key itself changed (rows that find no partner), every row of the statement counts."""
    if event == "insert":
        return f"SELECT array_agg(DISTINCT n.{column}) INTO keys FROM new_rows n;"
    if event == "delete":
        return f"SELECT array_agg(DISTINCT o.{column}) INTO keys FROM old_rows o;"
    same = " AND ".join(f"o.{c} = n.{c}" for c in pk)
    # One join on the key, the row comparison once per pair: half the time of two anti-joins
    # (100,000 runs updated: ~0.4 s of a ~5 s statement on a shared 2-core machine).
    return f"""SELECT count(*), array_agg(DISTINCT s.nk) FILTER (WHERE s.changed), array_agg(DISTINCT s.ok) FILTER (WHERE s.changed)
      INTO matched, keys, old_keys
      FROM (SELECT n.{column} AS nk, o.{column} AS ok, n IS DISTINCT FROM o AS changed
              FROM new_rows n JOIN old_rows o ON {same}) s;
    IF matched < (SELECT count(*) FROM new_rows) THEN
        SELECT array_agg(DISTINCT u.k) INTO keys
          FROM (SELECT n.{column} AS k FROM new_rows n UNION ALL SELECT o.{column} FROM old_rows o) u;
    ELSIF old_keys IS NOT NULL THEN
        keys := ARRAY(SELECT DISTINCT u FROM unnest(keys || old_keys) AS u);
    END IF;"""


def _catalogue_changed(event: str, pk: list[str]) -> str:
    """A condition: the statement changed a row. For an UPDATE, a new image with no identical old image
    of the same primary key (the images pair off one to one, so none such means nothing changed)."""
    if event == "insert":
        return "EXISTS (SELECT 1 FROM new_rows)"
    if event == "delete":
        return "EXISTS (SELECT 1 FROM old_rows)"
    same = " AND ".join(f"o.{c} = n.{c}" for c in pk)
    return f"EXISTS (SELECT 1 FROM new_rows n WHERE NOT EXISTS (SELECT 1 FROM old_rows o WHERE {same} AND o IS NOT DISTINCT FROM n))"


def _function(table: str, event: str, pk: list[str]) -> str:
    if table in WORKLOAD_TABLES:
        body = f"""
    {_keys(event, WORKLOAD_TABLES[table], pk)}
    PERFORM log_data_change(keys::integer[], NULL, false);"""
    elif table in RUN_TABLES:
        body = f"""
    {_keys(event, "run_id", pk)}
    SELECT array_agg(DISTINCT r.workload_id) FILTER (WHERE r.id IS NOT NULL), coalesce(bool_or(r.id IS NULL), false)
      INTO ids, unknown
      FROM unnest(keys) AS k(run_id) LEFT JOIN runs r ON r.id = k.run_id;
    PERFORM log_data_change(ids, NULL, unknown);"""
    else:
        body = f"""
    IF {_catalogue_changed(event, pk)} THEN
        PERFORM log_data_change(NULL, TG_TABLE_NAME::text, false);
    END IF;"""
    return f"""
CREATE FUNCTION log_change_{event}_{table}() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    keys bigint[];
    old_keys bigint[];
    matched bigint;
    ids integer[];
    unknown boolean := false;
BEGIN{body}
    RETURN NULL;
END $$
"""


def _primary_key(table: str) -> list[str]:
    rows = op.get_bind().execute(sa.text(
        "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey) "
        "WHERE i.indrelid = CAST(:t AS regclass) AND i.indisprimary ORDER BY a.attnum"
    ), {"t": table}).all()
    if not rows:
        raise RuntimeError(f"{table} has no primary key: the change log cannot tell an UPDATE's changed rows")
    return [r[0] for r in rows]


def upgrade() -> None:
    op.create_table(
        'change_log',
        sa.Column('version', sa.BigInteger(), nullable=False),
        sa.Column('workload_ids', sa.ARRAY(sa.Integer()), server_default=sa.text("'{}'"), nullable=False),
        sa.Column('catalogue_tables', sa.ARRAY(sa.Text()), server_default=sa.text("'{}'"), nullable=False),
        sa.Column('everything', sa.Boolean(), server_default=sa.text('false'), nullable=False),
        sa.Column('changed_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.PrimaryKeyConstraint('version', name=op.f('pk_change_log')),
    )
    for table in OLD_VERSIONED_TABLES:
        op.execute(f"DROP TRIGGER IF EXISTS bump_data_version ON {table}")
    op.execute("DROP FUNCTION IF EXISTS bump_data_version()")
    op.execute(LOG_DATA_CHANGE)
    for table in LOGGED_TABLES:
        pk = _primary_key(table)
        for event in EVENTS:
            op.execute(_function(table, event, pk))
            referencing = {"insert": "NEW TABLE AS new_rows", "update": "NEW TABLE AS new_rows OLD TABLE AS old_rows",
                           "delete": "OLD TABLE AS old_rows"}[event]
            op.execute(
                f"CREATE TRIGGER log_change_{event} AFTER {event.upper()} ON {table} REFERENCING {referencing} "
                f"FOR EACH STATEMENT EXECUTE FUNCTION log_change_{event}_{table}()"
            )
    op.execute("""
        CREATE FUNCTION log_change_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM log_data_change(NULL, TG_TABLE_NAME::text, true);
            RETURN NULL;
        END $$
    """)
    for table in LOGGED_TABLES:
        op.execute(
            f"CREATE TRIGGER log_change_truncate AFTER TRUNCATE ON {table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION log_change_truncate()"
        )


def downgrade() -> None:
    for table in LOGGED_TABLES:
        op.execute(f"DROP TRIGGER IF EXISTS log_change_truncate ON {table}")
        for event in EVENTS:
            op.execute(f"DROP TRIGGER IF EXISTS log_change_{event} ON {table}")
            op.execute(f"DROP FUNCTION IF EXISTS log_change_{event}_{table}()")
    op.execute("DROP FUNCTION IF EXISTS log_change_truncate()")
    op.execute("DROP FUNCTION IF EXISTS log_data_change(integer[], text, boolean)")
    op.drop_table('change_log')
    # 0004's trigger, as it was.
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
    for table in OLD_VERSIONED_TABLES:
        op.execute(
            f"CREATE TRIGGER bump_data_version AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION bump_data_version()"
        )
