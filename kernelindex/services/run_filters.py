"""Run filters shared by the GraphQL run list and the exports, so both read the same rows.

Every condition is on `runs` alone (a dimension a filter names is looked up in a subquery), so a run
list can choose its page before it joins anything; with the dimensions joined they mean the same."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from kernelindex.db.models import Environment, Hardware, Implementation, Run, Workload, WorkloadRevision
from kernelindex.rules.trust_labels import STALE_AFTER_DAYS
from kernelindex.services.eligibility import (
    eligible_run_clause,
    latency_clause,
    live_passed_clauses,
    newest_snapshot_clause,
    not_held_clause,
)


class FilterError(ValueError):
    """A filter value that cannot be used; the message names it."""


def hardware_matches(name: str) -> ColumnElement[bool]:
    """A hardware row matching `name` as its SKU, short name, family (every SKU of it) or a product
    name its driver reports, case-insensitively: the names check_names accepts."""
    lowered = name.lower()
    products = func.unnest(Hardware.driver_product_names).table_valued("product_name").render_derived()
    return or_(
        func.lower(Hardware.sku) == lowered, func.lower(Hardware.short_name) == lowered,
        func.lower(Hardware.family) == lowered,
        select(products.c.product_name).where(func.lower(products.c.product_name) == lowered).exists(),
    )


# How many close matches an unknown name's error lists, and how close (difflib's ratio) they must be.
CLOSE_MATCHES = 5
CLOSE_CUTOFF = 0.6


async def check_names(session: AsyncSession, *, workload: str | None = None, implementation: str | None = None,
                      hardware: str | None = None) -> None:
    """Raise FilterError when a workload slug, implementation slug or hardware name names nothing in
    the catalogue: "no hardware 'H100x'; did you mean 'H100 SXM', 'NVIDIA H100'?". One statement
    when every name exists; the catalogue's names are read only to word an error."""
    wanted = [(kind, name) for kind, name in (("workload", workload), ("implementation", implementation),
                                              ("hardware", hardware)) if name is not None]
    if not wanted:
        return
    exists = {
        "workload": lambda n: select(Workload.id).where(Workload.slug == n).exists(),
        "implementation": lambda n: select(Implementation.id).where(Implementation.slug == n).exists(),
        "hardware": lambda n: select(Hardware.id).where(hardware_matches(n)).exists(),
    }
    found = (await session.execute(select(*(exists[kind](name) for kind, name in wanted)))).one()
    problems = [await _unknown(session, kind, name) for (kind, name), ok in zip(wanted, found, strict=True) if not ok]
    if problems:
        raise FilterError("; ".join(problems))


async def _unknown(session: AsyncSession, kind: str, name: str) -> str:
    if kind == "workload":
        names = list((await session.scalars(select(Workload.slug))).all())
    elif kind == "implementation":
        names = list((await session.scalars(select(Implementation.slug))).all())
    else:
        names = []
        for sku, short, family, products in await session.execute(
                select(Hardware.sku, Hardware.short_name, Hardware.family, Hardware.driver_product_names)):
            names.extend([sku, short, family, *(products or [])])
    return unknown_name_message(kind, name, names)


def unknown_name_message(kind: str, name: str, names: list[str]) -> str:
    """The words for a name that is not in `names`, with its close matches (compared case-insensitively,
    as hardware names match; each listed as the catalogue spells it)."""
    spelled: dict[str, str] = {}
    for n in sorted(names):
        spelled.setdefault(n.lower(), n)
    lowered = name.lower()
    # Names holding what was typed come first ("H100" → 'H100 SXM', 'NVIDIA H100'), shortest first;
    # then difflib's closest, which alone ranks 'H200' above 'NVIDIA H100' for "H100".
    holding = sorted((n for n in spelled if lowered in n), key=lambda n: (len(n), n))
    similar = difflib.get_close_matches(lowered, list(spelled), n=CLOSE_MATCHES, cutoff=CLOSE_CUTOFF)
    close = list(dict.fromkeys([*holding, *similar]))[:CLOSE_MATCHES]
    if not close:
        return f"no {kind} {name!r}; nothing in the catalogue is close"
    return f"no {kind} {name!r}; did you mean {', '.join(repr(spelled[c]) for c in close)}?"


@dataclass(frozen=True)  # hashable: queries.runs keeps statements by their filters
class RunFilters:
    workload: str | None = None
    implementation: str | None = None
    hardware: str | None = None
    level: int | None = None  # the suite's level (KernelBench 1–4): a researcher groups by it
    environment_id: int | None = None
    evidence: str | None = None
    licence: str | None = None
    status: str | None = None
    stale: bool | None = None
    observed_since: datetime | None = None
    eligible_only: bool = False
    include_superseded: bool = False

    def conditions(self, now: datetime) -> list[ColumnElement[bool]]:
        """Conditions over Run alone; the same with Implementation, Environment and Hardware joined
        (each run has exactly one of each), as the exports read them. `now` is read for `stale`
        alone: queries.runs keeps the statements of filters without it, whatever the time."""
        out: list[ColumnElement[bool]] = []
        if not self.include_superseded:
            out.append(Run.superseded_at.is_(None))
        if self.workload is not None:
            out.append(Run.workload_id.in_(select(Workload.id).where(Workload.slug == self.workload).correlate(None)))
        if self.level is not None:
            out.append(Run.workload_id.in_(select(Workload.id).where(Workload.level == self.level).correlate(None)))
        if self.implementation is not None:
            out.append(Run.implementation_id.in_(
                select(Implementation.id).where(Implementation.slug == self.implementation).correlate(None)))
        if self.hardware is not None:
            out.append(Run.environment_id.in_(
                select(Environment.id).join(Hardware, Environment.hardware_id == Hardware.id)
                .where(hardware_matches(self.hardware)).correlate(None)))
        if self.environment_id is not None:
            out.append(Run.environment_id == self.environment_id)
        if self.evidence is not None:
            if self.evidence not in ("reported", "measured"):
                raise FilterError(f"evidence must be 'reported' or 'measured', got {self.evidence!r}")
            out.append(Run.evidence == self.evidence)
        if self.licence is not None:
            out.append(Run.implementation_id.in_(
                select(Implementation.id).where(func.lower(Implementation.licence) == self.licence.lower()).correlate(None)))
        if self.status is not None:
            if self.status not in ("passed", "failed"):
                raise FilterError(f"status must be 'passed' or 'failed', got {self.status!r}")
            out.append(Run.status == self.status)
        if self.stale is not None:
            cutoff = now - timedelta(days=STALE_AFTER_DAYS)
            out.append(Run.observed_at < cutoff if self.stale else Run.observed_at >= cutoff)
        if self.observed_since is not None:
            if self.observed_since.tzinfo is None:
                raise FilterError("observed_since needs a time zone, e.g. 2026-03-05T00:00:00Z")
            out.append(Run.observed_at >= self.observed_since)
        if self.eligible_only:
            # For one workload, eligible_of_workload implies eligible_run_clause (its run is on a
            # revision that is a workload's current one, at that revision's canonical key), so it
            # stands alone: the same runs without the correlated EXISTS per index entry.
            out.extend(eligible_of_workload(self.workload) if self.workload is not None else [eligible_run_clause()])
        return out


def eligible_of_workload(slug: str) -> list[ColumnElement[bool]]:
    """Where the eligible runs of one workload are: on its current revision, at that revision's
    canonical configuration, passed, live, of its source's newest snapshot, a latency, and not held for review (rules.eligibility). It takes the place of eligible_run_clause() for a
    workload's runs: every run it keeps that clause keeps (the run's revision is a workload's current
    one and its key that revision's canonical key), and it leaves out no run that clause keeps whose
    revision is its own workload's (ingest never stores another; rules.ranking.ineligibility_reason
    judges a run against its own workload). And it is what the index can use: the correlated EXISTS
    of eligible_run_clause() is a filter over
    every run of the workload, these are two values looked up once (InitPlans) and an index range
    of ix_runs_fastest (migration 0009) read in fastest order (the hold is judged per run read).
    'passed' is written into the statement (live_passed_clauses says why)."""
    current = select(Workload.current_revision_id).where(Workload.slug == slug).correlate(None).scalar_subquery()
    canonical = (
        select(WorkloadRevision.canonical_configuration_key)
        .join(Workload, Workload.current_revision_id == WorkloadRevision.id)
        .where(Workload.slug == slug)
        .correlate(None)
        .scalar_subquery()
    )
    return [
        Run.workload_revision_id == current,
        Run.configuration_key == canonical,
        *live_passed_clauses(),
        newest_snapshot_clause(),
        latency_clause(),
        not_held_clause(),
    ]
