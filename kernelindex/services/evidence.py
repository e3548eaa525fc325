"""A workload's full evidence: every live run, and the page computed from all of them.

Two statements for any number of workloads (current revisions, then live runs with their
dimensions) and one for the runs' holds. The page and list queries read the cheaper cohort-best
path (kernelindex.services.pages); the fields that need every run (a workload's run list, every
environment's comparison) read this one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.models import Hardware, Run, Workload, WorkloadRevision
from kernelindex.rules import ranking, trust_ladder
from kernelindex.rules.facts import RunFacts
from kernelindex.services.facts import FactsBuilder, run_rows_statement, workload_facts
from kernelindex.services.holds import with_holds
from kernelindex.services.workload_page import WorkloadPage, page_from_eligible


@dataclass(frozen=True)
class WorkloadEvidence:
    """Every live run of a workload (any revision, configuration or status) and its page computed
    from them, each record with its whole ranked cohort."""

    page: WorkloadPage
    runs: Sequence[RunFacts]
    measured_runs: Sequence[RunFacts]  # the eligible runs the fleet measured (rungs come from it alone), for the trust ladder


async def load_evidence(
    session: AsyncSession, workloads: Sequence[Workload], catalogue: Iterable[Hardware]
) -> dict[int, WorkloadEvidence]:
    """The evidence of each workload, by workload id."""
    ids = [w.id for w in workloads]
    revision_ids = [w.current_revision_id for w in workloads if w.current_revision_id]
    revisions = (
        {r.id: r for r in (await session.scalars(select(WorkloadRevision).where(WorkloadRevision.id.in_(revision_ids)))).all()}
        if revision_ids
        else {}
    )
    builder = FactsBuilder()
    catalogue_facts = [builder.hardware(h) for h in catalogue]
    by_workload: dict[int, list[RunFacts]] = {i: [] for i in ids}
    if ids:
        rows = await session.execute(
            run_rows_statement().where(Run.workload_id.in_(ids), Run.superseded_at.is_(None))
        )
        for run in await with_holds(session, [builder.run(*row) for row in rows]):
            by_workload[run.workload_id].append(run)
    out: dict[int, WorkloadEvidence] = {}
    for w in workloads:
        revision = revisions.get(w.current_revision_id) if w.current_revision_id else None
        facts = workload_facts(w, revision)
        eligible = ranking.eligible_runs(by_workload[w.id], facts)
        out[w.id] = WorkloadEvidence(
            page=page_from_eligible(w, revision, facts, catalogue_facts, eligible), runs=by_workload[w.id],
            measured_runs=[r for r in eligible if trust_ladder.is_fleet_measurement(r)],
        )
    return out
