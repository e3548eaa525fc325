"""Scratch tables: the temporary tables a write stages rows in (a batch's runs, new dimension rows, the
cohorts a refresh recomputes), made once per connection and emptied before each use.

They are made `ON COMMIT DELETE ROWS` (SCRATCH, after the column list): PostgreSQL truncates them in
place when a transaction that touched temporary tables commits, which costs next to nothing, so every
transaction finds them empty. Within a transaction, a later use (the next batch of a --strict import,
the second refresh of one write) finds the rows of the one before, and `emptied` truncates those tables
only. A TRUNCATE of an empty table is not free: it gives the table, its TOAST table and each index new
files, about 1.5 ms a table on the 2-core machine the perf scripts run on, and a submitRuns call of
1,000 records from new machines emptied three that held nothing (ingest_stage, ingest_keys and
stage_environments: 9 ms of its statements).

A rolled-back savepoint leaves its rows invisible to everything after it, so a table it filled counts as
empty, and the commit clears it.
"""

from __future__ import annotations

SCRATCH = "ON COMMIT DELETE ROWS"


def emptied(*tables: str) -> str:
    """One statement that truncates those of these tables that hold rows this transaction can see."""
    checks = " ".join(f"IF EXISTS (SELECT FROM {table}) THEN TRUNCATE {table}; END IF;" for table in tables)
    return f"DO $$ BEGIN {checks} END $$"
