"""Run filters shared by the GraphQL run list and the exports, so both read the same rows."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, or_, select
from sqlalchemy.sql.elements import ColumnElement

from kernelindex.db.models import Hardware, Implementation, Run, Workload
from kernelindex.rules.trust_labels import STALE_AFTER_DAYS
from kernelindex.services.eligibility import eligible_run_clause


class FilterError(ValueError):
    """A filter value that cannot be used; the message names it."""


def hardware_matches(name: str) -> ColumnElement[bool]:
    """A hardware row matching a SKU or a family, case-insensitively."""
    lowered = name.lower()
    return or_(func.lower(Hardware.sku) == lowered, func.lower(Hardware.family) == lowered)


@dataclass
class RunFilters:
    workload: str | None = None
    implementation: str | None = None
    hardware: str | None = None
    environment_id: int | None = None
    evidence: str | None = None
    licence: str | None = None
    status: str | None = None
    stale: bool | None = None
    observed_since: datetime | None = None
    eligible_only: bool = False
    include_superseded: bool = False

    def conditions(self, now: datetime) -> list[ColumnElement[bool]]:
        """Conditions over Run joined with Implementation, Environment and Hardware."""
        out: list[ColumnElement[bool]] = []
        if not self.include_superseded:
            out.append(Run.superseded_at.is_(None))
        if self.workload is not None:
            out.append(Run.workload_id.in_(select(Workload.id).where(Workload.slug == self.workload)))
        if self.implementation is not None:
            out.append(Implementation.slug == self.implementation)
        if self.hardware is not None:
            out.append(hardware_matches(self.hardware))
        if self.environment_id is not None:
            out.append(Run.environment_id == self.environment_id)
        if self.evidence is not None:
            if self.evidence not in ("reported", "measured"):
                raise FilterError(f"evidence must be 'reported' or 'measured', got {self.evidence!r}")
            out.append(Run.evidence == self.evidence)
        if self.licence is not None:
            out.append(func.lower(Implementation.licence) == self.licence.lower())
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
            out.append(eligible_run_clause())
        return out
