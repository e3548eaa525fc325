"""Refetching any object by its global ID (Relay's Node)."""

from __future__ import annotations

from typing import Annotated

import strawberry
from sqlalchemy import select

from kernelindex.db.models import Environment as EnvironmentRow
from kernelindex.db.models import Hardware as HardwareRow
from kernelindex.db.models import Implementation as ImplementationRow
from kernelindex.db.models import Protocol as ProtocolRow
from kernelindex.db.models import RecordEvent as RecordEventRow
from kernelindex.db.models import Run as RunRow
from kernelindex.db.models import Source as SourceRow
from kernelindex.db.models import SourceSnapshot
from kernelindex.db.models import Submission as SubmissionRow
from kernelindex.fleet import jobs as fleet_jobs
from kernelindex.graphql.context import Context
from kernelindex.graphql.node import WORKLOAD_RECORDS, Node, from_global_id, from_workload_records_id, global_id_type
from kernelindex.graphql.queries.records import WorkloadRecords
from kernelindex.graphql.types.catalogue import Environment, Hardware, Implementation, Protocol, Source
from kernelindex.graphql.types.fleet import Job, Submission
from kernelindex.graphql.types.history import record_events, record_events_statement
from kernelindex.graphql.types.revision import WorkloadRevision
from kernelindex.graphql.types.run import Run
from kernelindex.graphql.types.workload import Workload
from kernelindex.services.facts import (
    FactsBuilder,
    environment_facts,
    implementation_facts,
    protocol_facts,
    run_rows_statement,
)


@strawberry.type
class NodeQueries:
    @strawberry.field(description="Any object by its global ID; null when it does not exist.")
    async def node(
        self, info: strawberry.Info[Context, None],
        id: Annotated[strawberry.ID, strawberry.argument(description="A global ID this API returned (any type's `id`).")],
    ) -> Node | None:
        session = info.context.session
        if global_id_type(id) == WORKLOAD_RECORDS:
            workload_id, hardware_ids = from_workload_records_id(id)
            found = await info.context.loaders.workload_by_id.load(workload_id)
            return WorkloadRecords(workload_row=found, hardware_ids=hardware_ids) if found else None
        type_name, database_id = from_global_id(id)
        if type_name == "Protocol":
            protocol = await session.get(ProtocolRow, database_id)
            return Protocol(facts=protocol_facts(protocol)) if protocol else None
        if type_name == "Source":
            source = (await session.execute(
                select(SourceSnapshot, SourceRow).join(SourceRow, SourceRow.id == SourceSnapshot.source_id)
                .where(SourceSnapshot.id == database_id))).first()
            return Source(facts=FactsBuilder().source(source[0], source[1])) if source else None
        if type_name == "WorkloadRevision":
            revision = await info.context.loaders.revision_by_id.load(database_id)
            return WorkloadRevision(facts=revision) if revision else None
        if type_name == "RecordEvent":
            event = (await session.execute(record_events_statement().where(RecordEventRow.id == database_id))).first()
            return (await record_events(session, [event]))[0] if event else None
        if type_name == "Submission":
            submission = await session.get(SubmissionRow, database_id)
            return Submission(row=submission) if submission else None
        if type_name == "Workload":
            workload = await info.context.loaders.workload_by_id.load(database_id)
            return Workload(row=workload) if workload else None
        if type_name == "Run":
            run = (await session.execute(run_rows_statement().where(RunRow.id == database_id))).first()
            return Run(facts=FactsBuilder().run(*run)) if run else None
        if type_name == "Implementation":
            impl = await session.get(ImplementationRow, database_id)
            return Implementation(facts=implementation_facts(impl)) if impl else None
        if type_name == "Job":
            info.context.state.reads.volatile = True  # a job moves while it is read: never cached
            job = await fleet_jobs.get_job(session, database_id)
            return Job(row=job) if job else None
        if type_name == "Hardware":
            hw = next((h for h in await info.context.loaders.catalogue() if h.id == database_id), None)
            return Hardware(facts=FactsBuilder().hardware(hw)) if hw else None
        row = (
            await session.execute(
                select(EnvironmentRow, HardwareRow)
                .join(HardwareRow, HardwareRow.id == EnvironmentRow.hardware_id)
                .where(EnvironmentRow.id == database_id)
            )
        ).first()
        return Environment(facts=environment_facts(row[0], FactsBuilder().hardware(row[1]))) if row else None
