"""Subscriptions: a fleet job's state as it changes, and a workload's record events as they are appended.

Served over the graphql-transport-ws websocket protocol on /graphql (kernelindex.web.subscriptions).
A database notification (kernelindex.db.notifications, migration 0020) only wakes a subscription: each
event is read again through the same services and types as the matching query (`job(id:)`,
`workload(slug:) { recordHistory }`), so it shows committed data, exactly as the query would, and
needs no more and no less authorisation than the query (both are public reads). Between events a
subscription holds no database connection (Context.end_reads).

`job(id:)`: the job as it is now, then the job each time its state (or attempts, worker, reason, run,
start or finish) changes, in order; the job as re-read, so a state that lasted less than one re-read
can be passed over, never shown out of order. It completes after the job's final state (PASSED,
FAILED, CANCELLED); null (then complete) when there is no such job.
`recordEvents(workload:)`: every record event appended to that workload after the subscription
started, oldest first, one message each. It reads the events after the last one it sent: every writer
of record events holds the index's write lock until it commits (kernelindex.db.locks), so event ids
commit in order and none can appear later below one already sent.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator
from typing import Annotated, Any

import strawberry
from graphql import ExecutionResult, GraphQLError
from strawberry.extensions import SchemaExtension
from strawberry.types.graphql import OperationType

from kernelindex.db.models import FleetJob
from kernelindex.db.models import RecordEvent as RecordEventRow
from kernelindex.db.notifications import JOBS_CHANNEL, RECORD_EVENTS_CHANNEL, Notifications, SubscriptionOverflow
from kernelindex.fleet import jobs as fleet_jobs
from kernelindex.graphql.context import Context
from kernelindex.graphql.errors import UserInputError
from kernelindex.graphql.node import database_id_of
from kernelindex.graphql.types.fleet import Job
from kernelindex.graphql.types.history import RecordEvent, record_events, record_events_statement

# Jobs in these states never change again: their subscription completes.
FINAL_STATES = frozenset({"passed", "failed", "cancelled"})
# Record events read per statement while catching up (a refresh can append thousands at once).
EVENTS_PER_READ = 200
# The code a client reads when its subscription fell too far behind (kernelindex.db.notifications).
SUBSCRIPTION_OVERFLOW = "SUBSCRIPTION_OVERFLOW"


OVER_WEBSOCKET_ONLY = ("Subscriptions are served over the websocket on /graphql (the graphql-transport-ws protocol); "
                       "over HTTP, send queries and mutations")


def _notifications(context: Context) -> Notifications:
    if context.notifications is None:
        raise GraphQLError(OVER_WEBSOCKET_ONLY, extensions={"code": "BAD_REQUEST"})
    return context.notifications


class SubscriptionsOverWebSocket(SchemaExtension):
    """A subscription that came another way (a POST or GET to /graphql, an MCP tool: their contexts have no
    notifications) is refused before it runs. Executed as a query, its generator would never start and
    the answer would be a silent null."""

    def on_execute(self) -> Iterator[None]:
        ctx = self.execution_context
        if (ctx.result is None and ctx.operation_type is OperationType.SUBSCRIPTION
                and getattr(ctx.context, "notifications", None) is None):
            ctx.result = ExecutionResult(data=None, errors=[GraphQLError(OVER_WEBSOCKET_ONLY,
                                                                         extensions={"code": "BAD_REQUEST"})])
        yield


def _shown(row: FleetJob) -> tuple[Any, ...]:
    """What of a job a new message is sent for (the fields migration 0020's trigger tells about)."""
    return (row.state, row.attempts, row.worker, row.reason, row.run_id, row.started_at, row.finished_at)


def _overflow(exc: SubscriptionOverflow) -> GraphQLError:
    return GraphQLError(str(exc), extensions={"code": SUBSCRIPTION_OVERFLOW, "queue": exc.size})


@strawberry.type(description="Live answers over the graphql-transport-ws websocket protocol on /graphql.")
class Subscription:
    @strawberry.subscription(description="A fleet job as it is now, then each time its state, attempts, worker, reason, run "
                             "or timings change, in order; the job as re-read then, so a state that lasted less than a "
                             "re-read may be passed over (never shown out of order). Completes after the job's final "
                             "state (PASSED, FAILED, CANCELLED); null, then complete, when there is no such job. "
                             "The same data as the query job(id:).")
    async def job(
        self, info: strawberry.Info[Context, None],
        id: Annotated[strawberry.ID, strawberry.argument(description="The job's global ID (Job.id) or its database id.")],
    ) -> AsyncGenerator[Job | None, None]:
        context = info.context
        job_id = database_id_of(str(id), "Job")
        shown: tuple[Any, ...] | None = None
        with _notifications(context).subscribe(JOBS_CHANNEL, lambda payload: payload.get("id") == job_id) as changes:
            try:
                while True:
                    row = await fleet_jobs.get_job(context.session, job_id)
                    if row is None:
                        yield None
                        return
                    if _shown(row) != shown:
                        shown = _shown(row)
                        yield Job(row=row)
                        if row.state in FINAL_STATES:
                            return
                    await context.end_reads()
                    await changes.next()
            except SubscriptionOverflow as exc:
                raise _overflow(exc) from None
            finally:
                await context.end_reads()

    @strawberry.subscription(description="Each record event appended to this workload after the subscription started "
                             "(new records, restorations, revision changes, retractions), oldest first, one message "
                             "each: the same events as Workload.recordHistory, as they are written.")
    async def record_events(
        self, info: strawberry.Info[Context, None],
        workload: Annotated[str, strawberry.argument(description="The workload's slug, e.g. 'kernelbench-l3-p9-resnet18'.")],
    ) -> AsyncGenerator[RecordEvent, None]:
        context = info.context
        notifications = _notifications(context)
        row = await context.loaders.workload_by_slug.load(workload)
        if row is None:
            raise UserInputError(f"no workload with slug {workload!r}")
        workload_id = row.id
        with notifications.subscribe(RECORD_EVENTS_CHANNEL, lambda payload: workload_id in payload.get("workloads", ())) as changes:
            try:
                # Where the subscription starts: after the newest event now (read after subscribing, so an
                # event committed in between is either counted here or notified).
                last = await context.session.scalar(
                    record_events_statement().with_only_columns(RecordEventRow.id)
                    .where(RecordEventRow.workload_id == workload_id).order_by(RecordEventRow.id.desc()).limit(1)) or 0
                while True:
                    await context.end_reads()
                    await changes.next()
                    while True:
                        rows = (await context.session.execute(
                            record_events_statement().where(RecordEventRow.workload_id == workload_id, RecordEventRow.id > last)
                            .order_by(RecordEventRow.id).limit(EVENTS_PER_READ))).all()
                        if not rows:
                            break
                        for event in await record_events(context.session, rows):
                            last = event.row.id
                            yield event
                        if len(rows) < EVENTS_PER_READ:
                            break
            except SubscriptionOverflow as exc:
                raise _overflow(exc) from None
            finally:
                await context.end_reads()
