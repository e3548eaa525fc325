"""Run lists: filtered by workload, implementation, hardware, environment, evidence, licence,
staleness and observation date.

A page is chosen on `runs` alone (filters, order and limit, where the indexes are) and only its
runs are joined to the six tables their nodes show (pagination.narrow_page_statement): a workload's
eligible runs fastest first read 17 index entries, not its 4,000 runs joined and then filtered."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache
from typing import Annotated

import strawberry
from sqlalchemy import Double, Select, extract, func, literal_column, select

from kernelindex.db.models import Run as RunRow
from kernelindex.graphql.context import Context
from kernelindex.graphql.enums import Evidence, RunOrder, RunStatus, value_of
from kernelindex.graphql.errors import UserInputError
from kernelindex.graphql.inputs import check_datetime
from kernelindex.graphql.node import from_global_id
from kernelindex.graphql.pagination import (
    AfterArg,
    BeforeArg,
    Connection,
    FirstArg,
    LastArg,
    Window,
    narrow_keyset_page,
    narrow_page_statement,
    page_window,
)
from kernelindex.graphql.types.run import Run
from kernelindex.services.facts import RUN_ID_COLUMN, FactsBuilder, run_columns_statement
from kernelindex.services.run_filters import FilterError, RunFilters, check_names

# A run without a mean sorts after every other. 'Infinity' is written into the statement, not bound:
# the index ix_runs_fastest (migration 0009) is on this very expression, and a plan PostgreSQL
# keeps for a prepared statement only matches an index expression that holds no parameter.
NO_MEAN_LAST = literal_column("'Infinity'::float8", Double)
ORDERS = {
    RunOrder.NEWEST: lambda: (-RunRow.id,),
    RunOrder.FASTEST: lambda: (func.coalesce(RunRow.figure, NO_MEAN_LAST), RunRow.id),
    RunOrder.RECENTLY_OBSERVED: lambda: (-extract("epoch", RunRow.observed_at), -RunRow.id),
}
KEYS = {
    RunOrder.NEWEST: lambda r: (-r.id,),
    RunOrder.FASTEST: lambda r: (r.figure if r.figure is not None else float("inf"), r.id),
    RunOrder.RECENTLY_OBSERVED: lambda r: (-r.observed_at.timestamp(), -r.id),
}


RUNS_DESCRIPTION = (
    "Runs, filtered and ordered. Superseded runs are left out unless asked for. A workload, implementation or "
    "hardware that matches nothing is an error (BAD_USER_INPUT) listing the close matches.\n\n"
    "For bulk pulls (every run of a workload, or all of them) use one request instead of pages: "
    "`GET /exports/runs.csv` streams the same runs as CSV, with the same filters as query parameters "
    "(`workload`, `implementation`, `hardware`, `evidence`, `licence`, `status`, `stale`, `observedSince`, "
    "`eligibleOnly`, `includeSuperseded`; enum values as here, `status=PASSED`, or in lower case). "
    "`names=graphql` names its columns by these fields' paths (`databaseId`, `meanMs`, `environment.hardware.sku`); "
    "the default names are the published ones (`run_id`, `mean_ms`). For example "
    "`/exports/runs.csv?workload=kernelbench-l3-p9-resnet18&status=PASSED&names=graphql`. "
    "`GET /exports/catalog.jsonl` is the same runs in the ingest format, for `kernelindex ingest runs`."
)


@strawberry.type
class RunQueries:
    @strawberry.field(description=RUNS_DESCRIPTION)
    async def runs(
        self,
        info: strawberry.Info[Context, None],
        first: FirstArg = None,
        after: AfterArg = None,
        last: LastArg = None,
        before: BeforeArg = None,
        workload: Annotated[str | None, strawberry.argument(description="Workload slug.")] = None,
        implementation: Annotated[str | None, strawberry.argument(description="Implementation slug.")] = None,
        hardware: Annotated[str | None, strawberry.argument(description="Hardware SKU, short name, family (every SKU of it) or driver product name, e.g. 'NVIDIA H100'.")] = None,
        level: Annotated[int | None, strawberry.argument(description="Level within the workload's suite, e.g. 3 (KernelBench levels 1–4).")] = None,
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
        filters, window = runs_arguments(
            info.context.settings.max_page_size, first=first, after=after, last=last, before=before, workload=workload,
            implementation=implementation, hardware=hardware, level=level, environment=environment, evidence=evidence,
            licence=licence, status=status, stale=stale, observed_since=observed_since, eligible_only=eligible_only,
            include_superseded=include_superseded)
        return await run_connection(info, filters, window=window, order_by=order_by)


def runs_arguments(
    max_page_size: int, *, first: int | None = None, after: str | None = None, last: int | None = None,
    before: str | None = None, workload: str | None = None, implementation: str | None = None,
    hardware: str | None = None, level: int | None = None, environment: str | None = None,
    evidence: Evidence | None = None, licence: str | None = None, status: RunStatus | None = None,
    stale: bool | None = None, observed_since: datetime | None = None, eligible_only: bool = False,
    include_superseded: bool = False, order_by: RunOrder = RunOrder.NEWEST,
) -> tuple[RunFilters, Window]:
    """`Query.runs`' arguments checked, as its filters and page (UserInputError where one cannot be
    used): the resolver's, and the runs page's writer's (kernelindex.graphql.runs_page). `order_by` is
    taken (and not checked) so that the resolver's keyword arguments can be passed as they are."""
    check_datetime("observedSince", observed_since)
    environment_id = None
    if environment is not None:
        type_name, environment_id = from_global_id(environment)
        if type_name != "Environment":
            raise UserInputError(f"environment expects an Environment ID, got a {type_name} ID")
    filters = RunFilters(
        workload=workload, implementation=implementation, hardware=hardware, level=level, environment_id=environment_id,
        evidence=value_of(evidence), licence=licence, status=value_of(status),
        stale=stale, observed_since=observed_since, eligible_only=eligible_only, include_superseded=include_superseded,
    )
    return filters, page_window(first, after, last, before, max_page_size)


async def run_connection(
    info: strawberry.Info[Context, None], filters: RunFilters, *, window: Window, order_by: RunOrder
) -> Connection[Run]:
    """A page of the runs `filters` select, by keyset: `Query.runs` and `Workload.runs`. One statement
    (the page's ids cut on `runs` alone, then their rows joined), and `count(*)` only when the query
    selects `totalCount`."""
    try:
        if filters.stale is None:  # the statements depend on the arguments alone
            narrow, statement = _kept_statements(filters, order_by, window)
        else:  # and on the clock
            narrow, statement = _statements(filters, info.context.now, order_by, window)
    except FilterError as exc:
        raise UserInputError(str(exc)) from exc
    builder = FactsBuilder()
    connection = await narrow_keyset_page(
        info.context.session, narrow, statement, kind=f"run:{order_by.value}", key_of=KEYS[order_by],
        make_node=lambda row: Run(facts=builder.run_of_columns(row)), window=window,
    )
    if not connection.edges:
        # Only an empty page can hide a name that matches nothing (a run on the page matched every
        # name asked for), so a page with runs costs no look-up.
        try:
            await check_names(info.context.session, workload=filters.workload,
                              implementation=filters.implementation, hardware=filters.hardware)
        except FilterError as exc:
            raise UserInputError(str(exc)) from exc
    return connection


def _statements(filters: RunFilters, now: datetime, order_by: RunOrder, window: Window) -> tuple[Select, Select]:
    """The list (to count) and the page's statement (pagination.narrow_page_statement)."""
    narrow = select(RunRow.id).where(*filters.conditions(now))
    statement = narrow_page_statement(
        narrow, lambda page: run_columns_statement().join(page, page.c.page_id == RUN_ID_COLUMN),
        id_column=RunRow.id, kind=f"run:{order_by.value}", order=ORDERS[order_by](), window=window,
    )
    return narrow, statement


# Building the statements costs about 0.4 ms, a tenth of a small page's request: the same arguments
# (a popular workload's first page) reuse them. A statement is immutable and holds only its
# arguments' values, so a kept one is the very statement they would build; a bad argument raises
# and keeps nothing. Without a `stale` filter the clock is not in them.
@lru_cache(maxsize=256)
def _kept_statements(filters: RunFilters, order_by: RunOrder, window: Window) -> tuple[Select, Select]:
    return _statements(filters, _NO_CLOCK, order_by, window)


_NO_CLOCK = datetime.min.replace(tzinfo=UTC)  # never read: RunFilters reads `now` only for `stale`
