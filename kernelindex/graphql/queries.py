"""Root query fields, one class per area, merged into the schema's Query."""

from __future__ import annotations

from typing import Annotated

import strawberry
from sqlalchemy import and_, func, or_, select

from kernelindex.db.models import Environment as EnvironmentRow
from kernelindex.db.models import Hardware as HardwareRow
from kernelindex.db.models import Implementation as ImplementationRow
from kernelindex.db.models import Run as RunRow
from kernelindex.db.models import Workload as WorkloadRow
from kernelindex.graphql.pagination import Connection, Edge, PageInfo, check_first, decode_cursor, encode_cursor
from kernelindex.graphql.types.catalogue import Environment, Hardware, Implementation
from kernelindex.graphql.types.page import Policy
from kernelindex.graphql.types.run import Run
from kernelindex.graphql.types.workload import Workload
from kernelindex.services.evidence import FactsBuilder, environment_facts, implementation_facts, run_rows_statement


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


@strawberry.type
class WorkloadQueries:
    @strawberry.field(description="One workload by slug; null when there is none.")
    async def workload(self, info: strawberry.Info, slug: str) -> Workload | None:
        row = await info.context.loaders.workload_by_slug.load(slug)
        return Workload(row=row) if row else None

    @strawberry.field(description="Workloads ordered by suite, level and problem number; filter by suite, level, kind and name.")
    async def workloads(
        self,
        info: strawberry.Info,
        first: int = 20,
        after: str | None = None,
        suite: str | None = None,
        level: int | None = None,
        kind: str | None = None,
        name_contains: Annotated[str | None, strawberry.argument(description="Case-insensitive substring of the name or slug.")] = None,
        name_prefix: Annotated[str | None, strawberry.argument(description="Case-insensitive prefix of the name.")] = None,
    ) -> Connection[Workload]:
        check_first(first, info.context.settings.max_page_size)
        conditions = []
        if suite is not None:
            conditions.append(WorkloadRow.suite == suite)
        if level is not None:
            conditions.append(WorkloadRow.level == level)
        if kind is not None:
            conditions.append(WorkloadRow.kind == kind)
        if name_contains:
            pattern = f"%{_like_escape(name_contains.lower())}%"
            conditions.append(or_(func.lower(WorkloadRow.name).like(pattern), WorkloadRow.slug.like(pattern)))
        if name_prefix:
            conditions.append(func.lower(WorkloadRow.name).like(f"{_like_escape(name_prefix.lower())}%"))
        order = (WorkloadRow.suite, WorkloadRow.level, WorkloadRow.problem_number, WorkloadRow.id)
        page_conditions = list(conditions)
        if after:
            key = decode_cursor("workload", after)
            page_conditions.append(func.row(*order) > func.row(*key))
        session = info.context.session
        rows = (
            await session.scalars(select(WorkloadRow).where(*page_conditions).order_by(*order).limit(first + 1))
        ).all()
        total = (await session.execute(select(func.count()).select_from(WorkloadRow).where(*conditions))).scalar_one()
        for w in rows:
            info.context.loaders.workload_by_id.prime(w.id, w)
        page = rows[:first]
        edges = [
            Edge(node=Workload(row=w), cursor=encode_cursor("workload", [w.suite, w.level, w.problem_number, w.id]))
            for w in page
        ]
        return Connection(
            edges=edges,
            page_info=PageInfo(
                has_next_page=len(rows) > first,
                has_previous_page=after is not None,
                start_cursor=edges[0].cursor if edges else None,
                end_cursor=edges[-1].cursor if edges else None,
            ),
            total_count=total,
        )


@strawberry.type
class CatalogueQueries:
    @strawberry.field(description="Implementations, by slug.")
    async def implementations(self, info: strawberry.Info) -> list[Implementation]:
        rows = (await info.context.session.scalars(select(ImplementationRow).order_by(ImplementationRow.slug))).all()
        return [Implementation(facts=implementation_facts(r)) for r in rows]

    @strawberry.field(description="The hardware catalogue; priority hardware first.")
    async def hardware(self, info: strawberry.Info, sku: str | None = None) -> list[Hardware]:
        catalogue = await info.context.loaders.catalogue()
        builder = FactsBuilder()
        rows = [h for h in catalogue if sku is None or h.sku == sku]
        rows.sort(key=lambda h: (not h.priority, h.family, h.sku))
        return [Hardware(facts=builder.hardware(h)) for h in rows]

    @strawberry.field(description="Environments runs were measured in.")
    async def environments(self, info: strawberry.Info) -> list[Environment]:
        catalogue = {h.id: h for h in await info.context.loaders.catalogue()}
        builder = FactsBuilder()
        rows = (await info.context.session.scalars(select(EnvironmentRow).order_by(EnvironmentRow.id))).all()
        return [Environment(facts=environment_facts(e, builder.hardware(catalogue[e.hardware_id]))) for e in rows]

    @strawberry.field(description="The written policy that decides records.")
    def policy(self) -> Policy:
        return Policy()


@strawberry.type
class RunQueries:
    @strawberry.field(description="Live runs (not superseded), newest id first; filter by workload slug.")
    async def runs(
        self, info: strawberry.Info, first: int = 20, after: str | None = None, workload_slug: str | None = None
    ) -> Connection[Run]:
        check_first(first, info.context.settings.max_page_size)
        conditions = [RunRow.superseded_at.is_(None)]
        if workload_slug is not None:
            conditions.append(RunRow.workload_id.in_(select(WorkloadRow.id).where(WorkloadRow.slug == workload_slug)))
        page_conditions = list(conditions)
        if after:
            (last_id,) = decode_cursor("run", after)
            page_conditions.append(RunRow.id < int(last_id))
        session = info.context.session
        rows = (await session.execute(run_rows_statement().where(*page_conditions).order_by(RunRow.id.desc()).limit(first + 1))).all()
        total = (await session.execute(select(func.count()).select_from(RunRow).where(*conditions))).scalar_one()
        builder = FactsBuilder()
        edges = [Edge(node=Run(facts=builder.run(*row)), cursor=encode_cursor("run", [row[0].id])) for row in rows[:first]]
        return Connection(
            edges=edges,
            page_info=PageInfo(
                has_next_page=len(rows) > first,
                has_previous_page=after is not None,
                start_cursor=edges[0].cursor if edges else None,
                end_cursor=edges[-1].cursor if edges else None,
            ),
            total_count=total,
        )
