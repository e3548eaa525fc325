"""Eligibility as SQL, for filters that must run in the database (workloads measured on a GPU,
run lists). It mirrors kernelindex.rules.ranking.ineligibility_reason, which stays the definition;
tests check that the two agree."""

from __future__ import annotations

from sqlalchemy import and_, select
from sqlalchemy.sql.elements import ColumnElement

from kernelindex.db.models import Run, Workload, WorkloadRevision


def eligible_run_clause() -> ColumnElement[bool]:
    """True for a passed, live run of its workload's current revision at the canonical configuration."""
    current = (
        select(WorkloadRevision.id)
        .join(Workload, Workload.current_revision_id == WorkloadRevision.id)
        .where(
            WorkloadRevision.id == Run.workload_revision_id,
            WorkloadRevision.canonical_configuration_key == Run.configuration_key,
        )
        .exists()
    )
    return and_(Run.status == "passed", Run.superseded_at.is_(None), Run.retracted_at.is_(None), current)
