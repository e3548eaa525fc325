"""Run lists: filtered by workload, implementation, hardware, environment, evidence, licence,
staleness and observation date.

A page is chosen on `runs` alone (filters, order and limit, where the indexes are) and only its
runs are joined to the six tables their nodes show (pagination.narrow_keyset_page): a workload's
eligible runs fastest first read 17 index entries, not its 4,000 runs joined and then filtered."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry
from sqlalchemy import Double, Subquery, extract, func, literal_column, select

from kernelindex.db.models import Run as RunRow
from kernelindex.graphql.context import Context
from kernelindex.graphql.enums import Evidence, RunOrder, RunStatus
from kernelindex.graphql.errors import UserInputError
from kernelindex.graphql.inputs import check_datetime
from kernelindex.graphql.node import from_global_id
from kernelindex.graphql.pagination import Connection, narrow_keyset_page
from kernelindex.graphql.types.run import Run
from kernelindex.services.facts import FactsBuilder, run_rows_statement
from kernelindex.services.run_filters import FilterError, RunFilters

# A run without a mean sorts after every other. 'Infinity' is written into the statement, not bound:
# the index ix_runs_fastest (migration 0009) is on this very expression, and a plan PostgreSQL
# keeps for a prepared statement only matches an index expression that holds no parameter.
NO_MEAN_LAST = literal_column("'Infinity'::float8", Double)
ORDERS = {
    RunOrder.NEWEST: lambda: (-RunRow.id,),
    RunOrder.FASTEST: lambda: (func.coalesce(RunRow.mean_ms, NO_MEAN_LAST), RunRow.id),
    RunOrder.RECENTLY_OBSERVED: lambda: (-extract("epoch", RunRow.observed_at), -RunRow.id),
}
KEYS = {
    RunOrder.NEWEST: lambda r: (-r.id,),
    RunOrder.FASTEST: lambda r: (r.mean_ms if r.mean_ms is not None else float("inf"), r.id),
    RunOrder.RECENTLY_OBSERVED: lambda r: (-r.observed_at.timestamp(), -r.id),
}


@strawberry.type
class RunQueries:
    @strawberry.field(description="Runs, filtered and ordered. Superseded runs are left out unless asked for.")
    async def runs(
        self,
        info: strawberry.Info[Context, None],
        first: int = 20,
        after: str | None = None,
        workload: Annotated[str | None, strawberry.argument(description="Workload slug.")] = None,
        implementation: Annotated[str | None, strawberry.argument(description="Implementation slug.")] = None,
        hardware: Annotated[str | None, strawberry.argument(description="Hardware SKU or family, e.g. 'NVIDIA H100'.")] = None,
        environment: Annotated[strawberry.ID | None, strawberry.argument(description="Environment ID.")] = None,
        evidence: Annotated[Evidence | None, strawberry.argument(description="Reported or measured.")] = None,
        licence: Annotated[str | None, strawberry.argument(description="SPDX licence of the implementation.")] = None,
        status: Annotated[RunStatus | None, strawberry.argument(description="Passed or failed.")] = None,
        stale: Annotated[bool | None, strawberry.argument(description="Observed more than 180 days ago (true) or not (false).")] = None,
        observed_since: Annotated[datetime | None, strawberry.argument(description="Observed at or after this time.")] = None,
        eligible_only: Annotated[bool, strawberry.argument(description="Only runs that count towards records.")] = False,
        include_superseded: Annotated[bool, strawberry.argument(description="Also superseded runs (history).")] = False,
        order_by: Annotated[RunOrder, strawberry.argument(description="Sort order.")] = RunOrder.NEWEST,
    ) -> Connection[Run]:
        check_datetime("observedSince", observed_since)
        environment_id = None
        if environment is not None:
            type_name, environment_id = from_global_id(environment)
            if type_name != "Environment":
                raise UserInputError(f"environment expects an Environment ID, got a {type_name} ID")
        filters = RunFilters(
            workload=workload, implementation=implementation, hardware=hardware, environment_id=environment_id,
            evidence=evidence.value if evidence else None, licence=licence, status=status.value if status else None,
            stale=stale, observed_since=observed_since, eligible_only=eligible_only, include_superseded=include_superseded,
        )
        return await run_connection(info, filters, first=first, after=after, order_by=order_by)


async def run_connection(
    info: strawberry.Info[Context, None], filters: RunFilters, *, first: int, after: str | None, order_by: RunOrder
) -> Connection[Run]:
    """A page of the runs `filters` select, by keyset: `Query.runs` and `Workload.runs`. One statement
    (the page's ids cut on `runs` alone, then their rows joined), and `count(*)` only when the query
    selects `totalCount`."""
    try:
        conditions = filters.conditions(info.context.now)
    except FilterError as exc:
        raise UserInputError(str(exc)) from exc

    def rows_of(page: Subquery):
        return run_rows_statement().join(page, page.c.page_id == RunRow.id)

    builder = FactsBuilder()
    return await narrow_keyset_page(
        info.context.session,
        select(RunRow.id).where(*conditions),
        rows_of,
        id_column=RunRow.id,
        kind=f"run:{order_by.value}",
        order=ORDERS[order_by](),
        key_of=lambda row: KEYS[order_by](row[0]),
        make_node=lambda row: Run(facts=builder.run(*row)),
        first=first,
        after=after,
        max_page_size=info.context.settings.max_page_size,
    )
