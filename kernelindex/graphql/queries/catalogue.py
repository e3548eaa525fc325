"""The catalogue: implementations, hardware and environments, each a paginated list."""

from __future__ import annotations

from typing import Annotated

import strawberry
from sqlalchemy import func, select

from kernelindex.db.models import Environment as EnvironmentRow
from kernelindex.db.models import Hardware as HardwareRow
from kernelindex.db.models import Implementation as ImplementationRow
from kernelindex.graphql.context import Context
from kernelindex.graphql.pagination import AfterArg, BeforeArg, Connection, FirstArg, LastArg, keyset_page
from kernelindex.graphql.types.catalogue import Environment, Hardware, Implementation
from kernelindex.graphql.types.suites import SourceSummary, Suite
from kernelindex.services.facts import FactsBuilder, environment_facts, implementation_facts
from kernelindex.services.run_filters import hardware_matches
from kernelindex.services.suites import source_overviews, suite_overviews


@strawberry.type
class CatalogueQueries:
    @strawberry.field(description="Every suite the index holds workloads of, with its counts and latest snapshot (a few: not paginated).")
    async def suites(self, info: strawberry.Info[Context, None]) -> list[Suite]:
        return [Suite.of(o) for o in await suite_overviews(info.context.session)]

    @strawberry.field(description="Every source of figures, with its licence, terms, attribution, run count and newest snapshot (a few: not paginated).")
    async def sources(self, info: strawberry.Info[Context, None]) -> list[SourceSummary]:
        return [SourceSummary.of(o) for o in await source_overviews(info.context.session)]

    @strawberry.field(description="Implementations, by slug.")
    async def implementations(
        self,
        info: strawberry.Info[Context, None],
        first: FirstArg = None,
        after: AfterArg = None,
        last: LastArg = None,
        before: BeforeArg = None,
        licence: Annotated[str | None, strawberry.argument(description="SPDX licence identifier.")] = None,
    ) -> Connection[Implementation]:
        statement = select(ImplementationRow)
        if licence is not None:
            statement = statement.where(func.lower(ImplementationRow.licence) == licence.lower())
        return await keyset_page(
            info.context.session, statement, kind="implementation", order=(ImplementationRow.slug,),
            key_of=lambda row: (row[0].slug,), make_node=lambda row: Implementation(facts=implementation_facts(row[0])),
            first=first, after=after, last=last, before=before, max_page_size=info.context.settings.max_page_size, count_from=statement,
        )

    @strawberry.field(description="The hardware catalogue by family and SKU; filter by family or priority.")
    async def hardware(
        self,
        info: strawberry.Info[Context, None],
        first: FirstArg = None,
        after: AfterArg = None,
        last: LastArg = None,
        before: BeforeArg = None,
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
            first=first, after=after, last=last, before=before, max_page_size=info.context.settings.max_page_size, count_from=statement,
        )

    @strawberry.field(description="Environments runs were measured in; filter by hardware SKU or family.")
    async def environments(
        self,
        info: strawberry.Info[Context, None],
        first: FirstArg = None,
        after: AfterArg = None,
        last: LastArg = None,
        before: BeforeArg = None,
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
            first=first, after=after, last=last, before=before, max_page_size=info.context.settings.max_page_size, count_from=statement,
        )
