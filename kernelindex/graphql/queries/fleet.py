"""The fleet: follow jobs (`job`, `jobs`), submit an implementation to be measured
(`submitImplementation`) and cancel a job (`cancelJob`). Answers about jobs are never cached: a job moves while it is read
(kernelindex.web.response_cache leaves these root fields out)."""

from __future__ import annotations

from typing import Annotated

import strawberry
from sqlalchemy import select
from strawberry.scalars import JSON

from kernelindex.db.models import FleetJob
from kernelindex.fleet import jobs as fleet_jobs
from kernelindex.fleet.jobs import FleetInputError
from kernelindex.graphql.auth import forbidden, token_with_scope
from kernelindex.graphql.context import Context
from kernelindex.graphql.enums import JobState, SubmissionInputField, of_rules
from kernelindex.graphql.errors import UserInputError
from kernelindex.graphql.node import database_id_of
from kernelindex.graphql.pagination import AfterArg, BeforeArg, Connection, LastArg, keyset_page
from kernelindex.graphql.types.fleet import CancelJobResult, Job, SubmissionProblem, SubmitImplementationResult
from kernelindex.services.tokens import SCOPE_IMPLEMENTATIONS_SUBMIT, SCOPE_JOBS_CANCEL, has_scope

MAX_JOBS_PER_PAGE = 200




@strawberry.input(description="Which jobs: every filter given must hold.")
class JobFilter:
    states: list[JobState] | None = strawberry.field(default=None, description="Only jobs in these states.")
    hardware: str | None = strawberry.field(default=None, description="Only jobs for this hardware ('cpu' or a catalogue name).")
    workload: str | None = strawberry.field(default=None, description="Only jobs of this workload (slug).")
    submission: int | None = strawberry.field(default=None, description="Only the jobs of this submission (database id).")


@strawberry.type
class FleetQueries:
    @strawberry.field(description="A fleet job by its ID (or database id); null when there is none. Never cached.")
    async def job(
        self, info: strawberry.Info[Context, None],
        id: Annotated[strawberry.ID, strawberry.argument(description="The job's global ID (Job.id) or its database id.")],
    ) -> Job | None:
        info.context.state.reads.volatile = True
        job_id = database_id_of(str(id), "Job")
        row = await fleet_jobs.get_job(info.context.session, job_id)
        return Job(row=row) if row else None

    @strawberry.field(description="Fleet jobs, newest first, as a connection (first/after forward, last/before backward). "
                      "Never cached.")
    async def jobs(
        self,
        info: strawberry.Info[Context, None],
        filter: Annotated[JobFilter | None, strawberry.argument(description="Which jobs; every job when omitted.")] = None,
        first: Annotated[int | None, strawberry.argument(
            description=f"Page forward: this many jobs from the newest, or after `after` (1 to {MAX_JOBS_PER_PAGE}; "
            "20 when neither first nor last is given). Not with `last`.")] = None,
        after: AfterArg = None,
        last: LastArg = None,
        before: BeforeArg = None,
    ) -> Connection[Job]:
        info.context.state.reads.volatile = True
        wanted = filter or JobFilter()
        session = info.context.session
        statement = select(FleetJob)
        try:
            # The filter `kernelindex jobs` lists and counts by (a hardware name resolved to its SKU, a workload).
            statement = await fleet_jobs.jobs_of_hardware_and_workload(session, statement, wanted.hardware, wanted.workload)
        except FleetInputError as exc:
            raise UserInputError(str(exc)) from exc
        if wanted.states:
            statement = statement.where(FleetJob.state.in_([s.value for s in wanted.states]))
        if wanted.submission is not None:
            statement = statement.where(FleetJob.submission_id == wanted.submission)
        return await keyset_page(
            session, statement, kind="job", order=(-FleetJob.id,), key_of=lambda row: (-row[0].id,),
            make_node=lambda row: Job(row=row[0]), first=first, after=after, last=last, before=before,
            max_page_size=MAX_JOBS_PER_PAGE, count_from=statement,
        )


@strawberry.input(description="An implementation to measure: a KernelBench candidate module (a ModelNew class taking the "
                  "reference Model's constructor arguments; plain PyTorch, Triton, or torch.utils.cpp_extension.load_inline).")
class SubmitImplementationInput:
    workload: str = strawberry.field(description="Slug of the workload it implements (its current revision is measured).")
    source: str = strawberry.field(description="The module's Python source: at most 512 KiB, parsed (never run) "
                                   "within bounds of time, nesting and size.")
    title: str = strawberry.field(description="What it is, in a few words (at most 200 characters of visible text; "
                                  "control, escape and bidi characters are refused).")
    hardware: str = strawberry.field(description="Where to measure: 'cpu' or a GPU of the catalogue (SKU, short name or product name).")
    filename: str = strawberry.field(default="model_new.py", description="File name, for tracebacks and the record: a "
                                     "path's last part is kept (at most 255 characters, one line of visible text).")
    licence: str | None = strawberry.field(default=None, description="SPDX licence expression, e.g. 'MIT' or "
                                           "'Apache-2.0 OR MIT' (at most 200 characters); omitted when none is stated.")
    source_url: str | None = strawberry.field(default=None, description="Where its source lives (http or https).")
    bindings: JSON | None = strawberry.field(default=None, description="Configuration overrides of the workload's "
                                             "variable axes, e.g. {\"batch_size\": 8}: each an axis of the workload, "
                                             "each value a positive integer below 2**31.")
    replicas: int = strawberry.field(default=1, description="Measurements on distinct machines of that hardware (1 to 4); "
                                     "two that agree make the run Replicated.")


@strawberry.type
class FleetMutations:
    @strawberry.mutation(
        description="Submit an implementation to be measured by KernelIndex's workers on the hardware named. Needs the "
        "implementations:submit scope. The source is checked (it parses, it defines ModelNew) but never run here; a "
        "worker of that hardware runs it in its sandbox, checks it against the reference and times it. The same file "
        "for the same workload revision, hardware and configuration is the same job (created: false). The runs it "
        "produces are Verified (measured by KernelIndex) at most: a submitter sets neither the figures nor the rung."
    )
    async def submit_implementation(
        self, info: strawberry.Info[Context, None],
        input: Annotated[SubmitImplementationInput, strawberry.argument(description="What to measure, and where.")],
    ) -> SubmitImplementationResult:
        ctx = info.context
        token = await token_with_scope(ctx, SCOPE_IMPLEMENTATIONS_SUBMIT)
        bindings: object = input.bindings if input.bindings is not None else {}
        if not isinstance(bindings, dict):
            return SubmitImplementationResult(ok=False, created=False, job=None, jobs=[], problems=[
                SubmissionProblem(key=SubmissionInputField.BINDINGS, reason="bindings must be an object of NAME: positive integer")])
        savepoint = await ctx.session.begin_nested()
        try:
            result = await fleet_jobs.submit_implementation(
                ctx.session, workload_slug=input.workload, source=input.source, filename=input.filename, title=input.title,
                licence=input.licence, source_url=input.source_url, hardware=input.hardware, bindings=bindings,
                token_id=token.id, replicas=input.replicas,
            )
        except FleetInputError as exc:
            await savepoint.rollback()
            return SubmitImplementationResult(ok=False, created=False, job=None, jobs=[],
                                              problems=[SubmissionProblem(key=of_rules(SubmissionInputField, exc.key), reason=str(exc))])
        except BaseException:
            await savepoint.rollback()
            raise
        await savepoint.commit()
        return SubmitImplementationResult(ok=True, created=any(r.created for r in result), job=Job(row=result[0].job),
                                          jobs=[Job(row=r.job) for r in result], problems=[])

    @strawberry.mutation(
        description="Cancel a queued or running fleet job: a queued one never runs; a running one's worker stops its "
        "sandbox at once and stores no run. Who cancelled (the token) and why go into the job's reason. Needs the "
        "jobs:cancel scope (any job), or implementations:submit for a job that token submitted. A job already "
        "cancelled, or already finished (passed, failed: it stays as it finished), is reported in the result and "
        "nothing changes."
    )
    async def cancel_job(
        self, info: strawberry.Info[Context, None],
        id: Annotated[strawberry.ID, strawberry.argument(description="The job's global ID (Job.id) or its database id.")],
        reason: Annotated[str | None, strawberry.argument(
            description="Why, in a few words (at most 500 characters of visible text).")] = None,
    ) -> CancelJobResult:
        ctx = info.context
        token = await token_with_scope(ctx, SCOPE_JOBS_CANCEL, SCOPE_IMPLEMENTATIONS_SUBMIT)
        job_id = database_id_of(str(id), "Job")
        savepoint = await ctx.session.begin_nested()
        try:
            done = await fleet_jobs.cancel(
                ctx.session, job_id, now=ctx.now, by=f"token {token.id}" + (f" ({token.name})" if token.name else ""),
                reason=reason, only_requested_by=None if has_scope(token, SCOPE_JOBS_CANCEL) else token.id,
            )
        except fleet_jobs.JobNotFoundError as exc:
            await savepoint.rollback()
            return CancelJobResult(ok=False, already_cancelled=False, was_running=False, job=None, error=str(exc))
        except fleet_jobs.NotYourJobError as exc:
            await savepoint.rollback()
            raise forbidden(str(exc)) from None
        except FleetInputError as exc:
            await savepoint.rollback()
            raise UserInputError(str(exc)) from None
        except BaseException:
            await savepoint.rollback()
            raise
        await savepoint.commit()
        return CancelJobResult(
            ok=done.outcome == "cancelled", already_cancelled=done.outcome == "already cancelled",
            was_running=done.outcome == "cancelled" and done.was == "running", job=Job(row=done.job),
            error=None if done.outcome == "cancelled" else done.message(),
        )
