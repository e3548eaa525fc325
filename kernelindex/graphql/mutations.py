"""Writes: submit run records, retract runs and snapshots. Each needs an API token with the right scope.

Resolvers never commit: the request middleware commits when the response starts with a status below
400. A GraphQL response with errors still has status 200, so the writes themselves run inside a
savepoint that is rolled back whenever the call does not succeed: a call lands whole or not at all.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, cast

import strawberry
from graphql import GraphQLError
from strawberry.scalars import JSON

from kernelindex.db.text import text_problem
from kernelindex.graphql.auth import token_with_scope
from kernelindex.graphql.context import Context
from kernelindex.graphql.enums import ReviewDecision, ReviewState, of_rules
from kernelindex.graphql.errors import UserInputError
from kernelindex.graphql.node import decimal_id, from_global_id, to_global_id
from kernelindex.ingest import snapshots
from kernelindex.ingest.pipeline import write_within
from kernelindex.ingest.records import RECORD_FORMAT, RunRecord, check_record
from kernelindex.services import judgements
from kernelindex.services.tokens import SCOPE_RUNS_RETRACT, SCOPE_RUNS_REVIEW, SCOPE_RUNS_WRITE

MAX_RECORDS_PER_CALL = 1000
MAX_REASON_LENGTH = 2000
MAX_PROBLEMS_REPORTED = 1000
_MAX_BIGINT = 2**63 - 1
_SUBMIT_SOURCE = "submitRuns"


class InvalidInputError(UserInputError):
    """Arguments the mutation cannot take (too many records, an empty reason, …)."""

    def __init__(self, message: str):
        GraphQLError.__init__(self, message, extensions={"code": "BAD_USER_INPUT"})


@strawberry.type(description="One thing wrong with one submitted record. Any problem means nothing was written.")
class RecordProblem:
    index: int = strawberry.field(description="Position of the record in `records`, from 0.")
    key: str | None = strawberry.field(
        description="The field at fault as a dotted path (e.g. 'statistics.mean'); null when the problem is the whole record."
    )
    reason: str = strawberry.field(description="What is wrong, in plain words.")


@strawberry.type(description="What submitRuns did: the counts and new run ids, or the problems that stopped it.")
class SubmitRunsResult:
    ok: bool = strawberry.field(
        description="True when every record was accepted and the runs are stored; false when there were problems and nothing was written."
    )
    inserted: int = strawberry.field(description="Runs stored as new (including those that supersede an older run).")
    unchanged: int = strawberry.field(description="Records already stored with the same content: nothing written for them.")
    superseded: int = strawberry.field(
        description="Older runs replaced by a submitted record with a changed figure for the same natural key."
    )
    run_ids: list[strawberry.ID] = strawberry.field(description="Global IDs of the runs inserted, in input order.")
    run_database_ids: list[int] = strawberry.field(description="Database ids of the runs inserted, in input order.")
    problems: list[RecordProblem] = strawberry.field(
        description="Everything wrong with the records (at most 1,000 listed); empty when ok."
    )
    warnings: list[str] = strawberry.field(
        description="Things worth knowing that did not stop the write, e.g. hardware added to the catalogue without datasheet figures."
    )


@strawberry.type(description="What retractRun did. A run that does not exist or was already retracted is reported here, not as an error.")
class RetractRunResult:
    ok: bool = strawberry.field(description="True when this call retracted the run.")
    run_id: strawberry.ID | None = strawberry.field(description="Global ID of the run; null when no run has the given ID.")
    already_retracted: bool = strawberry.field(
        description="True when the run had been retracted before this call; the earlier retraction stands."
    )
    retracted_at: datetime | None = strawberry.field(description="When the run was retracted (UTC); null when it is not.")
    reason: str | None = strawberry.field(description="The retraction reason on record.")
    error: str | None = strawberry.field(description="Why nothing changed; null when ok.")


def _run_database_id(raw: str) -> int | None:
    """The database id a run ID names: a global ID this API returned, or a plain database id."""
    raw = raw.strip()
    value = decimal_id(raw)
    if value is None:
        if len(raw) > 200:
            return None
        try:
            type_name, value = from_global_id(raw)
        except GraphQLError:
            return None
        if type_name != "Run":
            return None
    return value if 1 <= value <= _MAX_BIGINT else None


def _check_reason(reason: str) -> str:
    if not reason.strip():
        raise InvalidInputError("a retraction needs a reason: say why the run should not count")
    if len(reason) > MAX_REASON_LENGTH:
        raise InvalidInputError(
            f"the reason is {len(reason):,} characters; the most is {MAX_REASON_LENGTH:,}"
        )
    problem = text_problem(reason)
    if problem:
        raise InvalidInputError(f"the reason {problem}")
    return reason


def _short(raw: str) -> str:
    return repr(raw[:40] + ("…" if len(raw) > 40 else ""))


@strawberry.type(
    description="Writes. Each needs an API token with the right scope, sent as the header 'Authorization: Bearer ki_…' "
    "(create one with `kernelindex token create`)."
)
class Mutation:
    @strawberry.mutation(
        description=f"Submit run records in the ingest format (schemas/run-record.schema.json, '{RECORD_FORMAT}'); "
        "at most 1,000 per call, passed as a variable. Needs the runs:write scope. Every record is checked first: "
        "with any problem nothing is written and the result lists the problems. Otherwise the runs are stored "
        "(idempotent: an identical record is 'unchanged', a changed figure for the same natural key supersedes the old run)."
    )
    async def submit_runs(
        self,
        info: strawberry.Info[Context, None],
        records: Annotated[
            list[JSON],
            strawberry.argument(description="Run records, one JSON object each, in the format of schemas/run-record.schema.json."),
        ],
    ) -> SubmitRunsResult:
        ctx = info.context
        session = ctx.session
        await token_with_scope(ctx, SCOPE_RUNS_WRITE)
        if len(records) > MAX_RECORDS_PER_CALL:
            raise InvalidInputError(
                f"{len(records):,} records in one call; the most is {MAX_RECORDS_PER_CALL:,}: split them into several calls"
            )

        problems: list[RecordProblem] = []
        # The records of a request body known to hold only values PostgreSQL stores (RequestState.plain_values)
        # are not walked again for NaN, NUL, lone surrogates and integers past 64 bits: none can be there.
        plain = ctx.state.plain_values()
        for index, data in enumerate(records):
            # The one validator of run records, as `ingest runs` uses it: the same problems in the same words.
            found = check_record(data, values_checked=id(data) in plain)
            problems.extend(RecordProblem(index=index, key=key, reason=reason) for key, reason in found)
        if problems:
            return _refused(problems)

        # check_record passed every one: each is a JSON object.
        run_records = [RunRecord(cast(dict[str, Any], data), _SUBMIT_SOURCE, str(index)) for index, data in enumerate(records)]
        # The one ingest pipeline, strict, in the request's transaction: any record refused and nothing is written.
        written = await write_within(session, run_records, now=ctx.now)
        summary = written.summary
        if written.aborted is not None:
            return _refused(
                [RecordProblem(index=int(p.where), key=p.key, reason=p.reason) for p in summary.problems],
                warnings=summary.warnings,
            )
        ids = summary.inserted_run_ids
        return SubmitRunsResult(
            ok=True,
            inserted=summary.inserted,
            unchanged=summary.unchanged,
            superseded=summary.superseded,
            run_ids=[to_global_id("Run", i) for i in ids],
            run_database_ids=ids,
            problems=[],
            warnings=summary.warnings,
        )

    @strawberry.mutation(
        description="Retract a run: it stays stored, with the reason, but no longer counts toward records, rankings or "
        "headroom. Needs the runs:retract scope. A run that does not exist, or was already retracted, is reported in "
        "the result and nothing changes."
    )
    async def retract_run(
        self,
        info: strawberry.Info[Context, None],
        id: Annotated[strawberry.ID, strawberry.argument(description="The run's global ID (Run.id) or its database id.")],
        reason: Annotated[str, strawberry.argument(description="Why the run should not count; 1 to 2,000 characters.")],
    ) -> RetractRunResult:
        ctx = info.context
        await token_with_scope(ctx, SCOPE_RUNS_RETRACT)
        reason = _check_reason(reason)

        run_id = _run_database_id(id)
        if run_id is None:
            return _not_found(id)
        done = await judgements.retract_run(ctx.session, run_id, reason, ctx.now)
        if done is None:
            return _not_found(id)
        return RetractRunResult(
            ok=not done.already, run_id=to_global_id("Run", run_id), already_retracted=done.already,
            retracted_at=done.retracted_at, reason=done.reason,
            error=f"run {_short(id)} was already retracted at {done.retracted_at.isoformat()}; nothing changed"
            if done.already else None,
        )

    @strawberry.mutation(
        description="Retract a suite snapshot (an import under a wrong revision, say): it, its source snapshots and "
        "their runs stay stored and queryable but count for nothing; each workload touched gets a record event "
        "(kind SNAPSHOT_RETRACTED) with the reason, and its records are recomputed. Needs the runs:retract scope. "
        "A snapshot that does not exist is BAD_USER_INPUT naming the suite's snapshots."
    )
    async def retract_snapshot(
        self,
        info: strawberry.Info[Context, None],
        suite: Annotated[str, strawberry.argument(description="The suite, e.g. 'kernelbench'.")],
        revision: Annotated[str, strawberry.argument(description="The snapshot's revision; a git hash may be abbreviated (7+ digits).")],
        reason: Annotated[str, strawberry.argument(description="Why it should not count; 1 to 2,000 characters.")],
    ) -> RetractSnapshotResult:
        ctx = info.context
        await token_with_scope(ctx, SCOPE_RUNS_RETRACT)
        savepoint = await ctx.session.begin_nested()  # a refusal leaves nothing behind (see the module's docstring)
        try:
            done = await snapshots.retract_suite_snapshot(ctx.session, suite, revision, reason, now=ctx.now)
        except snapshots.SnapshotError as exc:
            await savepoint.rollback()
            raise InvalidInputError(str(exc)) from None
        except BaseException:
            await savepoint.rollback()
            raise
        await savepoint.commit()
        return RetractSnapshotResult(
            ok=not done.already_retracted, already_retracted=done.already_retracted, suite=done.suite,
            revision=done.revision, retracted_at=done.retracted_at, reason=done.reason,
            source_snapshots=done.source_snapshots, runs_retracted=done.runs_retracted,
            workloads_touched=done.workloads_touched,
        )


@strawberry.type(description="What retractSnapshot did.")
class RetractSnapshotResult:
    ok: bool = strawberry.field(description="True when this call retracted the snapshot.")
    already_retracted: bool = strawberry.field(description="True when it had been retracted before; the earlier retraction stands.")
    suite: str = strawberry.field(description="The suite, e.g. 'kernelbench'.")
    revision: str = strawberry.field(description="The snapshot's revision as stored (the full hash when known).")
    retracted_at: datetime = strawberry.field(description="When it was retracted (UTC).")
    reason: str = strawberry.field(description="The retraction reason on record.")
    source_snapshots: list[str] = strawberry.field(description="The source snapshots retracted with it, e.g. 'KernelBench abc1234'.")
    runs_retracted: int = strawberry.field(description="Runs this call retracted (kept, counting for nothing).")
    workloads_touched: int = strawberry.field(description="Workloads whose current revision and records were recomputed.")


@strawberry.type(description="What reviewRun did.")
class ReviewRunResult:
    ok: bool = strawberry.field(description="True when the review was stored.")
    review_status: str | None = strawberry.field(description="reviewState in words, e.g. 'approved after review'.")
    review_state: ReviewState | None = strawberry.field(description="Where the run stands after the review; null when nothing changed.")
    error: str | None = strawberry.field(description="Why nothing changed, when nothing did.")


@strawberry.type
class ReviewMutations:
    @strawberry.mutation(
        description="Review a run that plausibility flagged: APPROVED lets it count towards records again, "
        "REJECTED keeps it out. Reviews are kept; the latest decides. Needs the runs:review scope."
    )
    async def review_run(
        self,
        info: strawberry.Info[Context, None],
        id: Annotated[strawberry.ID, strawberry.argument(description="The run's global ID (Run.id) or its database id.")],
        decision: Annotated[ReviewDecision, strawberry.argument(description="Approve (it counts again) or reject (it stays out).")],
        note: Annotated[str | None, strawberry.argument(description="Why, in up to 2,000 characters.")] = None,
    ) -> ReviewRunResult:
        ctx = info.context
        token = await token_with_scope(ctx, SCOPE_RUNS_REVIEW)
        if note is not None:
            note = _check_reason(note)
        run_id = _run_database_id(id)
        refused = (judgements.NO_SUCH_RUN if run_id is None
                   else await judgements.review_run(ctx.session, run_id, str(decision.value), token.name, note, ctx.now))
        if refused == judgements.NO_SUCH_RUN:
            return ReviewRunResult(ok=False, review_status=None, review_state=None, error=f"no run with id {_short(id)}")
        if refused is not None:
            return ReviewRunResult(ok=False, review_status=None, review_state=None, error=refused)
        return ReviewRunResult(ok=True, review_status=f"{decision.value} after review", review_state=of_rules(ReviewState, decision.value),
                               error=None)


def _refused(problems: list[RecordProblem], warnings: list[str] | None = None) -> SubmitRunsResult:
    problems.sort(key=lambda p: p.index)
    return SubmitRunsResult(
        ok=False, inserted=0, unchanged=0, superseded=0, run_ids=[], run_database_ids=[],
        problems=problems[:MAX_PROBLEMS_REPORTED], warnings=warnings or [],
    )


def _not_found(raw: str) -> RetractRunResult:
    return RetractRunResult(
        ok=False, run_id=None, already_retracted=False, retracted_at=None, reason=None,
        error=f"no run with id {_short(raw)}: nothing retracted",
    )
