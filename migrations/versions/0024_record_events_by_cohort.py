"""record_events gain ix_record_events_cohort: a cohort's latest event by one index probe

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-04

Every write that adds runs to a cohort reads the cohort's latest event (its standing holder:
kernelindex.services.records._latest_events, and the deferred history's _HISTORY). record_events
had no index on the cohort, so each read scanned the events: a write of 1,000 records for new
machines into perf.dataset's database of a million runs (`python -m perf.submit_runs --database-url
…`) spent 1.4 s in that one statement, more with every call as the events grew (each new cohort's
first run is an event). With the index each cohort is one probe, newest first.

(workload_revision_id, configuration_key, protocol_id, environment_id, id): the cohort, then the
event's id, so "ORDER BY id DESC LIMIT 1" reads one entry. Not partial: the reads exclude the
'revision_changed' kind, whose rows have no protocol or environment and so never match a cohort.
"""
from __future__ import annotations

from alembic import op

revision = '0024'
down_revision = '0023'
branch_labels = None
depends_on = None

COLUMNS = ["workload_revision_id", "configuration_key", "protocol_id", "environment_id", "id"]


def upgrade() -> None:
    op.create_index("ix_record_events_cohort", "record_events", COLUMNS, unique=False)


def downgrade() -> None:
    op.drop_index("ix_record_events_cohort", table_name="record_events")
