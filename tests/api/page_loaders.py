"""A page's latest measurements and its held runs, each read alone by its own statement: the independent
references the tests compare kernelindex.services.pages.load_page_runs with. Production reads both in
load_page_runs' one statement, so these loaders and their statements live with the tests, not in
kernelindex/. Also the sources part of pages._runs_and_sources_statement as a statement alone; the three
statements are among those tests/db/test_driver_rows.py runs by the driver."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any

from sqlalchemy import Select
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.driver import fetch_rows
from kernelindex.rules.facts import RunFacts
from kernelindex.services.facts import RUN_ID_COLUMN, FactsBuilder, run_columns_statement
from kernelindex.services.holds import HeldRun, flagged_runs, held_of, held_runs_of, hold_columns
from kernelindex.services.pages import _RUN_WIDTH, _first_sources, _latest_measured, _measured_of
from kernelindex.services.workload_page import WorkloadPage


@cache
def measured_runs_statement() -> Select:
    """load_measured_runs' statement, built once: the current revisions are its array parameter `revs`;
    each run with its hold_columns() (whether it is held: no statement of its own)."""
    latest = _latest_measured()
    return (run_columns_statement().add_columns(*hold_columns())
            .join(latest, latest.c.id == RUN_ID_COLUMN).order_by(RUN_ID_COLUMN))


@cache
def held_runs_statement() -> Select[Any]:
    """load_held_runs' statement, built once: the current revisions are its array parameter `revision_ids`."""
    flagged = flagged_runs()
    return run_columns_statement().add_columns(*hold_columns()[:3]).join(flagged, flagged.c.id == RUN_ID_COLUMN)


async def load_measured_runs(session: AsyncSession, pages: Iterable[WorkloadPage]) -> dict[int, list[RunFacts]]:
    """Eligible KernelIndex measurements of these workloads, for the trust ladder and cross-checks,
    by workload id: the latest few per implementation and SKU (what the ladder's rules look at: a
    passed measurement, two agreeing ones in different environments, the latest one to cross-check).
    load_page_runs' `measured`, by a statement of its own."""
    pages = list(pages)
    out: dict[int, list[RunFacts]] = {p.workload.id: [] for p in pages}
    revision_ids = [p.workload.current_revision_id for p in pages if p.workload.current_revision_id]
    if not revision_ids:
        return out
    builder = FactsBuilder()
    rows = await fetch_rows(session, measured_runs_statement(), {"revs": revision_ids})
    return _measured_of(pages, [held_of(builder.run_of_columns(row), row[_RUN_WIDTH:]) for row in rows])


async def load_held_runs(session: AsyncSession, pages: Sequence[WorkloadPage]) -> dict[int, list[HeldRun]]:
    """The held runs of each page's workload (current revision, canonical configuration, passed and
    live), by workload id, fastest first: load_page_runs' `held`, by a statement of its own. One
    statement whatever the pages and the data: the flagged runs with their flag codes and deciding
    review; holds.held_runs_of then decides."""
    revision_ids = [p.revision.id for p in pages if p.revision is not None]
    rows = await fetch_rows(session, held_runs_statement(), {"revision_ids": revision_ids})
    builder = FactsBuilder()
    return held_runs_of(pages, ((builder.run_of_columns(row), row[-3:]) for row in rows))


def first_sources_statement(canonical: bool) -> Select:
    """pages._first_sources' rows in their order: the sources part of pages._runs_and_sources_statement,
    which numbers them by that order instead of ordering them."""
    statement, order = _first_sources(canonical)
    return statement.order_by(*order)
