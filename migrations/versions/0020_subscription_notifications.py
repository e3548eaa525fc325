"""subscription notifications: a fleet job's state change and a workload's new record events, told by NOTIFY

Revision ID: 0020
Revises: 0016
Create Date: 2026-12-02

GraphQL subscriptions (kernelindex.web.subscriptions) follow a job's state and a workload's record
events as they happen, on whichever server process the client is connected to. The writes happen
anywhere: the fleet worker, the API's mutations, `kernelindex ingest`, `kernelindex jobs cancel`.
So the database tells, not each writer: triggers here pg_notify a channel when the rows change, and
each server process LISTENs on one connection of its own and wakes the subscriptions it holds.
NOTIFY is transactional: a notification is delivered when (and only if) its transaction commits, so
a subscriber re-reading the row sees what was committed.

- `kernelindex_jobs`: one notification per fleet_jobs row updated with another state, attempts, worker,
  reason, run, start or finish time (a heartbeat's `updated_at` alone tells nothing). Not for an insert:
  nobody follows a job before it exists (a subscription to an unknown id ends at once), and
  `bench --enqueue` inserts thousands.
  Payload: {"id": <job id>, "state": "<state>"}; the subscriber re-reads the job as `job(id:)` does.
- `kernelindex_record_events`: one notification per statement that inserted record events (a
  statement trigger over the transition table: a refresh that COPYs thousands of events sends one),
  payload {"workloads": [<workload ids>], "last": <highest event id>}. A payload is at most 8000 bytes:
  a statement touching more workloads than fit is sent in several notifications of at most 500 ids.
"""
from __future__ import annotations

from alembic import op

revision = '0020'
down_revision = '0016'
branch_labels = None
depends_on = None

# Workload ids per notification: 500 ids of up to 10 digits and commas stay far below NOTIFY's 8000 bytes.
IDS_PER_NOTIFICATION = 500

NOTIFY_JOB = """
CREATE FUNCTION notify_fleet_job() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.state IS NOT DISTINCT FROM OLD.state
       AND NEW.attempts IS NOT DISTINCT FROM OLD.attempts AND NEW.worker IS NOT DISTINCT FROM OLD.worker
       AND NEW.reason IS NOT DISTINCT FROM OLD.reason AND NEW.run_id IS NOT DISTINCT FROM OLD.run_id
       AND NEW.started_at IS NOT DISTINCT FROM OLD.started_at AND NEW.finished_at IS NOT DISTINCT FROM OLD.finished_at THEN
        RETURN NULL;  -- nothing a subscriber shows changed
    END IF;
    PERFORM pg_notify('kernelindex_jobs', json_build_object('id', NEW.id, 'state', NEW.state)::text);
    RETURN NULL;
END
$$
"""

NOTIFY_RECORD_EVENTS = f"""
CREATE FUNCTION notify_record_events() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    ids bigint[];
    last_id bigint;
    i integer := 1;
BEGIN
    SELECT array_agg(DISTINCT workload_id ORDER BY workload_id), max(id) INTO ids, last_id FROM new_events;
    IF ids IS NULL THEN
        RETURN NULL;  -- the statement inserted nothing
    END IF;
    WHILE i <= cardinality(ids) LOOP
        PERFORM pg_notify('kernelindex_record_events', json_build_object(
            'workloads', ids[i:i + {IDS_PER_NOTIFICATION - 1}], 'last', last_id)::text);
        i := i + {IDS_PER_NOTIFICATION};
    END LOOP;
    RETURN NULL;
END
$$
"""


def upgrade() -> None:
    op.execute(NOTIFY_JOB)
    op.execute("CREATE TRIGGER notify_fleet_job AFTER UPDATE ON fleet_jobs "
               "FOR EACH ROW EXECUTE FUNCTION notify_fleet_job()")
    op.execute(NOTIFY_RECORD_EVENTS)
    op.execute("CREATE TRIGGER notify_record_events AFTER INSERT ON record_events "
               "REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT EXECUTE FUNCTION notify_record_events()")


def downgrade() -> None:
    op.execute("DROP TRIGGER notify_record_events ON record_events")
    op.execute("DROP FUNCTION notify_record_events()")
    op.execute("DROP TRIGGER notify_fleet_job ON fleet_jobs")
    op.execute("DROP FUNCTION notify_fleet_job()")
