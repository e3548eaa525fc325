"""Implementations, hardware, environments, the policy, and refetching any object by global ID."""

from __future__ import annotations

from typing import Annotated

import strawberry
from sqlalchemy import func, select

from kernelindex.db.models import Environment as EnvironmentRow
from kernelindex.db.models import Hardware as HardwareRow
from kernelindex.db.models import Implementation as ImplementationRow
from kernelindex.db.models import Run as RunRow
from kernelindex.graphql.node import Node, from_global_id
from kernelindex.graphql.pagination import Connection, keyset_page
from kernelindex.graphql.types.catalogue import Environment, Hardware, Implementation
from kernelindex.graphql.types.judgement import RunComparison
from kernelindex.graphql.types.page import Policy
from kernelindex.graphql.types.run import Run
from kernelindex.graphql.types.workload import Workload
from kernelindex.services.evidence import FactsBuilder, environment_facts, implementation_facts, run_rows_statement
from kernelindex.services.run_filters import hardware_matches


@strawberry.type
class CatalogueQueries:
    @strawberry.field(description="Implementations, by slug.")
    async def implementations(
        self,
        info: strawberry.Info,
        first: int = 20,
        after: str | None = None,
        licence: Annotated[str | None, strawberry.argument(description="SPDX licence identifier.")] = None,
    ) -> Connection[Implementation]:
        statement = select(ImplementationRow)
        if licence is not None:
            statement = statement.where(func.lower(ImplementationRow.licence) == licence.lower())
        return await keyset_page(
            info.context.session, statement, kind="implementation", order=(ImplementationRow.slug,),
            key_of=lambda row: (row[0].slug,), make_node=lambda row: Implementation(facts=implementation_facts(row[0])),
            first=first, after=after, max_page_size=info.context.settings.max_page_size, count_from=statement,
        )

    @strawberry.field(description="The hardware catalogue by family and SKU; filter by family or priority.")
    async def hardware(
        self,
        info: strawberry.Info,
        first: int = 20,
        after: str | None = None,
        family: Annotated[str | None, strawberry.argument(description="Family, e.g. 'NVIDIA H100'.")] = None,
        priority: Annotated[bool | None, strawberry.argument(description="Only priority hardware (true) or only the rest (false).")] = None,
    ) -> Connection[Hardware]:
        statement = select(HardwareRow)
        if family is not None:
            statement = statement.where(func.lower(HardwareRow.family) == family.lower())
        if priority is not None:
            statement = statement.where(HardwareRow.priority.is_(priority))
        builder = FactsBuilder()
        return await keyset_page(
            info.context.session, statement, kind="hardware", order=(HardwareRow.family, HardwareRow.sku),
            key_of=lambda row: (row[0].family, row[0].sku), make_node=lambda row: Hardware(facts=builder.hardware(row[0])),
            first=first, after=after, max_page_size=info.context.settings.max_page_size, count_from=statement,
        )

    @strawberry.field(description="Environments runs were measured in; filter by hardware SKU or family.")
    async def environments(
        self,
        info: strawberry.Info,
        first: int = 20,
        after: str | None = None,
        hardware: Annotated[str | None, strawberry.argument(description="Hardware SKU or family.")] = None,
    ) -> Connection[Environment]:
        statement = select(EnvironmentRow, HardwareRow).join(HardwareRow, HardwareRow.id == EnvironmentRow.hardware_id)
        if hardware is not None:
            statement = statement.where(hardware_matches(hardware))
        builder = FactsBuilder()
        return await keyset_page(
            info.context.session, statement, kind="environment", order=(EnvironmentRow.id,),
            key_of=lambda row: (row[0].id,),
            make_node=lambda row: Environment(facts=environment_facts(row[0], builder.hardware(row[1]))),
            first=first, after=after, max_page_size=info.context.settings.max_page_size, count_from=statement,
        )

    @strawberry.field(description="The written policy that decides records.")
    def policy(self) -> Policy:
        return Policy()

    @strawberry.field(description="Compare 2 to 8 runs field by field; a winner only when all are in one cohort.")
    async def compare_runs(self, info: strawberry.Info, ids: list[strawberry.ID]) -> RunComparison:
        from kernelindex.graphql.errors import UserInputError
        from kernelindex.rules.compare import MAX_RUNS, MIN_RUNS, compare_runs

        if not MIN_RUNS <= len(ids) <= MAX_RUNS:
            raise UserInputError(f"compareRuns takes {MIN_RUNS} to {MAX_RUNS} run IDs, got {len(ids)}")
        database_ids = []
        for global_id in ids:
            type_name, database_id = from_global_id(global_id)
            if type_name != "Run":
                raise UserInputError(f"compareRuns takes Run IDs; {global_id[:40]!r} is a {type_name} ID")
            database_ids.append(database_id)
        builder = FactsBuilder()
        rows = (await info.context.session.execute(run_rows_statement().where(RunRow.id.in_(database_ids)))).all()
        facts = {row[0].id: builder.run(*row) for row in rows}
        missing = [g for g, d in zip(ids, database_ids) if d not in facts]
        if missing:
            raise UserInputError(f"no run with ID {missing[0][:40]!r}")
        return RunComparison(result=compare_runs([facts[d] for d in database_ids]), runs_by_id=facts)

    @strawberry.field(description="Any object by its global ID; null when it does not exist.")
    async def node(self, info: strawberry.Info, id: strawberry.ID) -> Node | None:
        type_name, database_id = from_global_id(id)
        session = info.context.session
        if type_name == "Workload":
            row = await info.context.loaders.workload_by_id.load(database_id)
            return Workload(row=row) if row else None
        if type_name == "Run":
            row = (await session.execute(run_rows_statement().where(RunRow.id == database_id))).first()
            return Run(facts=FactsBuilder().run(*row)) if row else None
        if type_name == "Implementation":
            impl = await session.get(ImplementationRow, database_id)
            return Implementation(facts=implementation_facts(impl)) if impl else None
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
