"""Workload look-ups: one by slug, and a filtered, paginated list."""

from __future__ import annotations

import contextlib
from typing import Annotated, Any

import strawberry
from sqlalchemy import and_, func, literal, or_, select
from strawberry.types.nodes import SelectedField

from kernelindex.db.models import Environment as EnvironmentRow
from kernelindex.db.models import Hardware as HardwareRow
from kernelindex.db.models import Run as RunRow
from kernelindex.db.models import Workload as WorkloadRow
from kernelindex.graphql.context import Context
from kernelindex.graphql.enums import WorkloadKind, WorkloadOrder
from kernelindex.graphql.errors import UserInputError
from kernelindex.graphql.pagination import AfterArg, BeforeArg, Connection, FirstArg, LastArg, keyset_page
from kernelindex.graphql.types.workload import Workload
from kernelindex.services.eligibility import eligible_run_clause
from kernelindex.services.run_filters import FilterError, check_names, hardware_matches


def like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def measured_on_clause(name: str):
    """Workloads with at least one eligible run on hardware matching `name` (run_filters.hardware_matches)."""
    return (
        select(RunRow.id)
        .join(EnvironmentRow, EnvironmentRow.id == RunRow.environment_id)
        .join(HardwareRow, HardwareRow.id == EnvironmentRow.hardware_id)
        .where(RunRow.workload_id == WorkloadRow.id, eligible_run_clause(), hardware_matches(name))
        .exists()
    )


ORDERS = {
    # A suite without levels (level and number null) sorts by id within its suite: keyset comparisons
    # need values, never NULL.
    WorkloadOrder.SUITE_LEVEL_PROBLEM: lambda: (WorkloadRow.suite, func.coalesce(WorkloadRow.level, 0),
                                                func.coalesce(WorkloadRow.problem_number, 0), WorkloadRow.id),
    WorkloadOrder.NAME: lambda: (func.lower(WorkloadRow.name), WorkloadRow.id),
    WorkloadOrder.SLUG: lambda: (WorkloadRow.slug, WorkloadRow.id),
}
KEYS = {
    WorkloadOrder.SUITE_LEVEL_PROBLEM: lambda w: (w.suite, w.level or 0, w.problem_number or 0, w.id),
    WorkloadOrder.NAME: lambda w: (w.name.lower(), w.id),
    WorkloadOrder.SLUG: lambda w: (w.slug, w.id),
}


@strawberry.type
class WorkloadQueries:
    @strawberry.field(description="One workload by slug; null when there is none.")
    async def workload(
        self, info: strawberry.Info[Context, None],
        slug: Annotated[str, strawberry.argument(description="The workload's slug, e.g. 'kernelbench-l3-p9-resnet18'.")],
    ) -> Workload | None:
        row = await info.context.loaders.workload_by_slug.load(slug)
        return Workload(row=row) if row else None

    @strawberry.field(description="Workloads, filtered and ordered; `first` at most the server's page size (100).")
    async def workloads(
        self,
        info: strawberry.Info[Context, None],
        first: FirstArg = None,
        after: AfterArg = None,
        last: LastArg = None,
        before: BeforeArg = None,
        suite: Annotated[str | None, strawberry.argument(description="Suite, e.g. 'kernelbench'.")] = None,
        level: Annotated[int | None, strawberry.argument(description="Level within the suite.")] = None,
        family: Annotated[str | None, strawberry.argument(description="Operation family the suite states, e.g. 'gqa-paged-attention' (case-insensitive).")] = None,
        kind: Annotated[WorkloadKind | None, strawberry.argument(description="Model, operator or fusion.")] = None,
        name_contains: Annotated[str | None, strawberry.argument(description="Case-insensitive substring of the name, the slug, the suite's own name or one of its aliases.")] = None,
        name_prefix: Annotated[str | None, strawberry.argument(description="Case-insensitive prefix of the name.")] = None,
        measured_on: Annotated[str | None, strawberry.argument(description="Only workloads with an eligible run on this hardware SKU, short name, family or driver product name (one that matches nothing is an error).")] = None,
        not_measured_on: Annotated[str | None, strawberry.argument(description="Only workloads with no eligible run on this hardware SKU, short name, family or driver product name (one that matches nothing is an error).")] = None,
        order_by: Annotated[WorkloadOrder, strawberry.argument(description="Sort order.")] = WorkloadOrder.SUITE_LEVEL_PROBLEM,
    ) -> Connection[Workload]:
        conditions = []
        if suite is not None:
            conditions.append(WorkloadRow.suite == suite)
        if level is not None:
            conditions.append(WorkloadRow.level == level)
        if family is not None:
            conditions.append(func.lower(WorkloadRow.family) == family.lower())
        if kind is not None:
            conditions.append(WorkloadRow.kind == kind.value)
        if name_contains:
            pattern = f"%{like_escape(name_contains.lower())}%"
            # The suite's own name and its aliases too (a FlashInfer-Bench definition by its upstream name).
            conditions.append(or_(func.lower(WorkloadRow.name).like(pattern), WorkloadRow.slug.like(pattern),
                                  func.lower(func.coalesce(WorkloadRow.suite_key, "")).like(pattern),
                                  func.lower(func.array_to_string(WorkloadRow.aliases, " ")).like(pattern)))
        if name_prefix:
            conditions.append(func.lower(WorkloadRow.name).like(f"{like_escape(name_prefix.lower())}%"))
        try:  # a hardware name that matches nothing would give every workload, or none, silently
            await check_names(info.context.session, hardware=measured_on or None)
            await check_names(info.context.session, hardware=not_measured_on or None)
        except FilterError as exc:
            raise UserInputError(str(exc)) from exc
        if measured_on:
            conditions.append(measured_on_clause(measured_on))
        if not_measured_on:
            conditions.append(~measured_on_clause(not_measured_on))
        statement = select(WorkloadRow).where(and_(literal(True), *conditions))
        loaders = info.context.loaders

        def make_node(row):
            loaders.workload_by_id.prime(row[0].id, row[0])
            return Workload(row=row[0])

        connection = await keyset_page(
            info.context.session,
            statement,
            kind=f"workload:{order_by.value}",
            order=ORDERS[order_by](),
            key_of=lambda row: KEYS[order_by](row[0]),
            make_node=make_node,
            first=first,
            after=after,
            last=last,
            before=before,
            max_page_size=info.context.settings.max_page_size,
            count_from=statement,
            # Workloads are a few hundred rows: counting them with the page costs less than a statement.
            total_with_page=_selects(info.selected_fields[0].selections, TOTAL_FIELDS),
        )
        if connection.edges and _selects(info.selected_fields, PAGE_LIST_FIELDS):
            # The page's workloads' pages, loaded here in the one batch their fields would make: the fields
            # a list shows then answer at once (Workload._page_loaded), without a coroutine and a task each.
            # Should that batch fail, each field asks again and reports the error where it is shown.
            with contextlib.suppress(Exception):
                await loaders.page_by_workload_id.load_many([edge.node.row.id for edge in connection.edges])
        return connection


TOTAL_FIELDS = frozenset({"totalCount"})
# The Workload fields that answer from a page already loaded (Workload._page_loaded).
PAGE_LIST_FIELDS = frozenset({"eligibleRunCount", "headline", "records"})


def _selects(selections: list[Any], names: frozenset[str]) -> bool:
    """Whether a field of one of `names` is selected anywhere under `selections` (fragments included)."""
    for selection in selections:
        if isinstance(selection, SelectedField) and selection.name in names:
            return True
        if _selects(selection.selections, names):
            return True
    return False
