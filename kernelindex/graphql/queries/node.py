"""Refetching any object by its global ID (Relay's Node)."""

from __future__ import annotations

import strawberry
from sqlalchemy import select

from kernelindex.db.models import Environment as EnvironmentRow
from kernelindex.db.models import Hardware as HardwareRow
from kernelindex.db.models import Implementation as ImplementationRow
from kernelindex.db.models import Run as RunRow
from kernelindex.fleet import jobs as fleet_jobs
from kernelindex.graphql.context import Context
from kernelindex.graphql.node import Node, from_global_id
from kernelindex.graphql.types.catalogue import Environment, Hardware, Implementation
from kernelindex.graphql.types.fleet import Job
from kernelindex.graphql.types.run import Run
from kernelindex.graphql.types.workload import Workload
from kernelindex.services.facts import FactsBuilder, environment_facts, implementation_facts, run_rows_statement


@strawberry.type
class NodeQueries:
    @strawberry.field(description="Any object by its global ID; null when it does not exist.")
    async def node(self, info: strawberry.Info[Context, None], id: strawberry.ID) -> Node | None:
        type_name, database_id = from_global_id(id)
        session = info.context.session
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
            info.context.loaders.reads.volatile = True  # a job moves while it is read: never cached
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
