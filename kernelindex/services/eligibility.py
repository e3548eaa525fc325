"""The eligibility rule (kernelindex.rules.eligibility) in SQL, for the routes that must filter in
the database: runs(eligibleOnly: true), the exports' eligible_only, workloads measured on a GPU.

rules.eligibility.ineligibility_reason stays the definition; `eligible_run_clause` says the same
of a row of `runs`, condition for condition, and tests/api/test_eligibility_routes.py holds the two
equal on hostile fixtures (held, superseded, retracted, failed, off-canonical, older-revision runs
and runs of a retracted snapshot) and on the real KernelBench tree."""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, func, literal_column, or_, select
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import aliased
from sqlalchemy.sql.elements import ColumnElement

from kernelindex.db.models import Implementation, Protocol, Run, RunFlag, RunReview, SourceSnapshot, Workload, WorkloadRevision
from kernelindex.rules.plausibility import APPROVED, BELOW_FLOOR, STALE_FLOOR_VERSIONS


def live_passed_clauses() -> tuple[ColumnElement[bool], ...]:
    """Passed and live (neither retracted nor superseded): the rule's first three conditions.
    'passed' is written into the statement, not bound: a plan kept for a prepared statement uses a
    partial index (ix_runs_fastest, ix_runs_cohort_top) only if the statement's own text implies the
    index's predicate."""
    return (Run.status == literal_column("'passed'"), Run.superseded_at.is_(None), Run.retracted_at.is_(None))


# Each subquery correlates `runs` alone: a statement that joins implementations, workloads or their
# revisions itself (the exports do) must not have its rows taken for the subquery's own.


def current_canonical_clause() -> ColumnElement[bool]:
    """Of its workload's current revision, at that revision's canonical configuration."""
    return (
        select(WorkloadRevision.id)
        .join(Workload, Workload.current_revision_id == WorkloadRevision.id)
        .where(
            WorkloadRevision.id == Run.workload_revision_id,
            WorkloadRevision.canonical_configuration_key == Run.configuration_key,
        )
        .correlate(Run)
        .exists()
    )


def newest_snapshot_clause() -> ColumnElement[bool]:
    """Not of a whole snapshot of its source that a newer one replaced."""
    return (
        select(SourceSnapshot.id)
        .where(SourceSnapshot.id == Run.source_snapshot_id, SourceSnapshot.outdated.is_(False))
        .correlate(Run)
        .exists()
    )


def latency_clause() -> ColumnElement[bool]:
    """Its protocol's figures are latencies (memory and scores are kept apart from records)."""
    return (
        select(Protocol.id)
        .where(Protocol.id == Run.protocol_id, Protocol.metric == literal_column("'latency'"))
        .correlate(Run)
        .exists()
    )


def not_held_clause(run: Any = Run) -> ColumnElement[bool]:
    """True for a run not held for review: unflagged, or its deciding review approved it.

    plausibility.is_held_for_review in SQL, so an ordered LIMIT can skip held runs; the runs read are
    judged again in Python (with_holds), which stays the definition. The deciding review is the
    latest by time, reviews without one older than any with one, ties by id (latest_review, over
    reviews in id order as load_holds gives them). Only flags that still hold count
    (plausibility.flag_holds): none on a baseline implementation, no below_floor on a run whose
    correctness check passed, none raised by a version judged against an older floor. ``run``: the runs
    table or an alias of it (services.records' history statement reads it as ``r``)."""
    # Constants written into the text, as everywhere in these clauses (see live_passed_clauses).
    holds_floor = and_(
        run.correctness["passed"].is_distinct_from(literal_column("'true'::jsonb")),
        *(RunFlag.rule_version != literal_column(f"'{v}'") for v in sorted(STALE_FLOOR_VERSIONS)),
    )
    not_baseline = ~select(Implementation.id).where(
        Implementation.id == run.implementation_id, Implementation.role == literal_column("'baseline'")
    ).correlate(run).exists()
    flagged = and_(
        not_baseline,
        select(RunFlag.id).where(
            RunFlag.run_id == run.id, or_(RunFlag.code != literal_column(f"'{BELOW_FLOOR}'"), holds_floor)
        ).correlate(run).exists(),
    )
    decision = (
        select(RunReview.decision).where(RunReview.run_id == run.id)
        .order_by(RunReview.created_at.desc().nulls_last(), RunReview.id.desc())
        .limit(1)
        .correlate(run)
        .scalar_subquery()
    )
    return or_(~flagged, func.coalesce(decision == APPROVED, False))


def not_held_sql(alias: str) -> str:
    """not_held_clause as SQL text over the runs table read as ``alias``, its constants written in: for
    statements written as text (services.records' history statement), so the definition stays this one."""
    run = aliased(Run, name=alias)
    outer = f"SELECT {alias}.id \nFROM runs AS {alias} \nWHERE "
    sql = str(select(run.id).where(not_held_clause(run)).compile(dialect=postgresql.dialect(),
                                                                 compile_kwargs={"literal_binds": True}))
    if not sql.startswith(outer):  # SQLAlchemy changed how it writes a select: fail here, not in a statement
        raise RuntimeError(f"not_held_sql: unexpected compiled form {sql[:80]!r}")
    return sql[len(outer):]


def eligible_run_clause() -> ColumnElement[bool]:
    """rules.eligibility's rule for a row of `runs`: passed, live, of its workload's current revision
    at the canonical configuration, a latency, and not held for review. A run of a retracted snapshot
    is a retracted run (ingest.snapshots retracts each), so `live` covers it."""
    return and_(*live_passed_clauses(), newest_snapshot_clause(), current_canonical_clause(), latency_clause(), not_held_clause())
