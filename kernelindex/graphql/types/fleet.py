"""The fleet's types: a job (what is measured, where, in which state, and the runs it produced) and a
submission (the module submitted, by digest)."""

from __future__ import annotations

from datetime import datetime
from typing import cast

import strawberry
from sqlalchemy import select
from strawberry.scalars import JSON

from kernelindex.db.models import Environment as EnvironmentRow
from kernelindex.db.models import FleetJob
from kernelindex.db.models import Hardware as HardwareRow
from kernelindex.db.models import Implementation as ImplementationRow
from kernelindex.db.models import Run as RunRow
from kernelindex.db.models import Submission as SubmissionRow
from kernelindex.graphql.context import Context
from kernelindex.graphql.enums import JobKind, JobState, SubmissionInputField, of_rules
from kernelindex.graphql.node import Node, to_global_id
from kernelindex.graphql.types.catalogue import Environment, Implementation
from kernelindex.graphql.types.run import Run
from kernelindex.graphql.types.workload import Workload
from kernelindex.services.facts import FactsBuilder, environment_facts, implementation_facts, run_rows_statement


@strawberry.type(description="A submitted implementation: the module as submitted, identified by the sha256 of its bytes.")
class Submission(Node):
    row: strawberry.Private[SubmissionRow]

    @strawberry.field(description="Opaque global ID.")
    def id(self) -> strawberry.ID:
        return to_global_id("Submission", self.row.id)

    @strawberry.field(description="Database id.")
    def database_id(self) -> int:
        return self.row.id

    @strawberry.field(description="sha256 of the submitted file's bytes.")
    def source_sha256(self) -> str:
        return self.row.source_sha256

    @strawberry.field(description="The file name it was submitted under.")
    def filename(self) -> str:
        return self.row.filename

    @strawberry.field(description="When it was first submitted.")
    def submitted_at(self) -> datetime:
        return self.row.created_at


@strawberry.type(description="A measurement the fleet was asked to make: a workload revision × an implementation × a kind of "
                 "hardware × a configuration, with its state and, once passed, the run it produced. Jobs are made by "
                 "submitImplementation, `kernelindex submit` and `kernelindex bench --enqueue`, and measured by "
                 "`kernelindex worker` processes on machines of that hardware.")
class Job(Node):
    row: strawberry.Private[FleetJob]

    @strawberry.field(description="Opaque global ID.")
    def id(self) -> strawberry.ID:
        return to_global_id("Job", self.row.id)

    @strawberry.field(description="Database id (what `kernelindex jobs` prints).")
    def database_id(self) -> int:
        return self.row.id

    @strawberry.field(description="Where the job is.")
    def state(self) -> JobState:
        return of_rules(JobState, self.row.state)

    @strawberry.field(description="Why it exists.")
    def kind(self) -> JobKind:
        return of_rules(JobKind, self.row.kind)

    @strawberry.field(description="Why it failed, why it was queued again, or who cancelled it and why; null otherwise.")
    def reason(self) -> str | None:
        return self.row.reason

    @strawberry.field(description="The hardware it is measured on: a catalogue SKU, or 'cpu'.")
    def hardware(self) -> str:
        return self.row.hardware

    @strawberry.field(description="Configuration overrides asked for (e.g. batch_size); empty for the workload's own.")
    def bindings(self) -> JSON:
        return cast(JSON, self.row.bindings)

    @strawberry.field(description="Which measurement of the same subject this is (0, 1, …): replicas run on distinct machines.")
    def replica(self) -> int:
        return self.row.replica

    @strawberry.field(description="Times a worker started it.")
    def attempts(self) -> int:
        return self.row.attempts

    @strawberry.field(description="Times a worker may start it before it is failed.")
    def max_attempts(self) -> int:
        return self.row.max_attempts

    @strawberry.field(description="The worker that took it last (host:pid or its --name).")
    def worker(self) -> str | None:
        return self.row.worker

    @strawberry.field(description="When it was asked for.")
    def created_at(self) -> datetime:
        return self.row.created_at

    @strawberry.field(description="When a worker last started it.")
    def started_at(self) -> datetime | None:
        return self.row.started_at

    @strawberry.field(description="When it ended (passed, failed or cancelled).")
    def finished_at(self) -> datetime | None:
        return self.row.finished_at

    @strawberry.field(description="Seconds from the last start to the end; null until it ends.")
    def duration_s(self) -> float | None:
        if self.row.started_at is None or self.row.finished_at is None:
            return None
        return (self.row.finished_at - self.row.started_at).total_seconds()

    @strawberry.field(description="The environment the worker measured in (its SKU, software and machine); null until it ran.")
    async def environment(self, info: strawberry.Info[Context, None]) -> Environment | None:
        if self.row.environment_id is None:
            return None
        found = (
            await info.context.session.execute(
                select(EnvironmentRow, HardwareRow).join(HardwareRow, HardwareRow.id == EnvironmentRow.hardware_id)
                .where(EnvironmentRow.id == self.row.environment_id)
            )
        ).first()
        return Environment(facts=environment_facts(found[0], FactsBuilder().hardware(found[1]))) if found else None

    @strawberry.field(description="The workload measured.")
    async def workload(self, info: strawberry.Info[Context, None]) -> Workload | None:
        row = await info.context.loaders.workload_by_id.load(self.row.workload_id)
        return Workload(row=row) if row else None

    @strawberry.field(description="Slug of the implementation measured.")
    def implementation_slug(self) -> str:
        return self.row.implementation_slug

    @strawberry.field(description="The implementation measured (null for a builtin runner no run has named yet).")
    async def implementation(self, info: strawberry.Info[Context, None]) -> Implementation | None:
        row = (
            await info.context.session.execute(select(ImplementationRow).where(ImplementationRow.slug == self.row.implementation_slug))
        ).scalar_one_or_none()
        return Implementation(facts=implementation_facts(row)) if row else None

    @strawberry.field(description="The submission measured, for a submission's job.")
    async def submission(self, info: strawberry.Info[Context, None]) -> Submission | None:
        if self.row.submission_id is None:
            return None
        row = await info.context.session.get(SubmissionRow, self.row.submission_id)
        return Submission(row=row) if row else None

    async def _run(self, info: strawberry.Info[Context, None], run_id: int | None) -> Run | None:
        if run_id is None:
            return None
        found = (await info.context.session.execute(run_rows_statement().where(RunRow.id == run_id))).first()
        return Run(facts=FactsBuilder().run(*found)) if found else None

    @strawberry.field(description="The run the job produced (the implementation's; a failed candidate's run says why).")
    async def run(self, info: strawberry.Info[Context, None]) -> Run | None:
        return await self._run(info, self.row.run_id)

    @strawberry.field(description="The PyTorch eager run measured in the same job and environment, for the speedup.")
    async def baseline_run(self, info: strawberry.Info[Context, None]) -> Run | None:
        return await self._run(info, self.row.baseline_run_id)


@strawberry.type(description="A problem with a submission: the input field and why.")
class SubmissionProblem:
    key: SubmissionInputField = strawberry.field(description="The input field at fault.")
    reason: str = strawberry.field(description="Why, and what to do.")


@strawberry.type(description="What cancelJob did. A job already cancelled, or already finished, is reported here, not as an error.")
class CancelJobResult:
    ok: bool = strawberry.field(description="True when this call cancelled the job.")
    already_cancelled: bool = strawberry.field(description="True when it had been cancelled before; the earlier cancellation stands.")
    was_running: bool = strawberry.field(description="True when this call cancelled a running job: its worker stops its "
                                         "sandbox at once and stores no run.")
    job: Job | None = strawberry.field(description="The job as it is after the call; null when no job has the given ID.")
    error: str | None = strawberry.field(description="Why nothing changed; null when ok.")


@strawberry.type(description="The outcome of submitImplementation.")
class SubmitImplementationResult:
    ok: bool = strawberry.field(description="True when the job exists (new or asked for before); false with problems.")
    created: bool = strawberry.field(description="False when the same file was already submitted for this workload "
                                     "revision, hardware and configuration: job is that job.")
    job: Job | None = strawberry.field(description="The job measuring it (the first replica's); null when refused.")
    jobs: list[Job] = strawberry.field(description="Every replica's job, replica 0 first; empty when refused.")
    problems: list[SubmissionProblem] = strawberry.field(description="Why it was refused; empty when ok.")
