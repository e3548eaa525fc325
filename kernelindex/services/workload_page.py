"""The read model of a workload page: what the page shows, as one immutable value.

Two paths build it: kernelindex.services.pages from the precomputed cohort bests (the page and list
queries), and `page_from_eligible` here from every eligible run (the definition, kept for checks).
`tests/api/test_page_paths.py` and `tests/api/test_page_scaling.py` check that the two agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date

from kernelindex.db.changes import Dependencies
from kernelindex.db.models import Workload, WorkloadRevision
from kernelindex.rules import ranking
from kernelindex.rules.facts import HardwareFacts, RunFacts, SourceFacts, WorkloadFacts
from kernelindex.services.facts import CohortKey

# The catalogue tables a page reads every row of, new ones included: its `catalogue` (every hardware
# row: notMeasured, floors, headroom and configurations show hardware no run of the workload names).
# Every other catalogue row a page shows is one its runs name (kernelindex.db.changes: a new row in
# one of these evicts every page, a new row elsewhere only the pages of the workloads whose runs name it).
CATALOGUE_READ_WHOLE = frozenset({"hardware"})


def page_dependencies(workloads: Iterable[int]) -> Dependencies:
    """What something computed from these workloads' pages read: their rows, the catalogue rows
    their runs name, and the tables a page reads whole."""
    return Dependencies(workloads=frozenset(workloads), catalogue=True, catalogue_lists=CATALOGUE_READ_WHOLE)


# How many sources the cohort-best path keeps, by name and revision: the most the page's `sources`
# list shows (its `first` is at most the server's page size, 100 by default).
SOURCES_SHOWN = 100


@dataclass(frozen=True)
class CohortSummary:
    """What a cohort's comparison states about all its rows, whatever it shows of them: the latest
    observation among them, and whether every row comes from one source (the comparison's title)."""

    last_observed: date | None
    single_source: bool


@dataclass(frozen=True)
class WorkloadPage:
    """A workload, its current revision and the figures its page shows.

    Each record carries its cohort's ranked rows where the path that built the page has them: every
    eligible run on the full path; on the cohort-best path only the record cohort's, one row per
    implementation (enough for the headline's baseline; a comparison loads the rows it shows).

    `sources` are the first SOURCES_SHOWN by name and revision on the cohort-best path (every one on
    the full path): what the page's capped `sources` list can show."""

    workload: Workload
    revision: WorkloadRevision | None
    facts: WorkloadFacts
    catalogue: Sequence[HardwareFacts]
    records: Sequence[ranking.CohortRecord]
    implementation_bests: Sequence[ranking.ImplementationBest]
    eligible_count: int
    last_observed: date | None
    sources: Sequence[SourceFacts]
    measured_hardware_ids: frozenset[int]
    evidence_kinds_by_implementation: Mapping[int, frozenset[str]] = field(default_factory=dict)
    record_cohort: CohortKey | None = None
    cohort_summaries: Mapping[CohortKey, CohortSummary] = field(default_factory=dict)

    @property
    def overall_record(self) -> ranking.CohortRecord | None:
        return self.records[0] if self.records else None

    def evidence_kinds(self, implementation_id: int) -> frozenset[str]:
        return self.evidence_kinds_by_implementation.get(implementation_id, frozenset())


def sorted_sources(sources: Iterable[SourceFacts]) -> list[SourceFacts]:
    """Each source once, by name and revision."""
    unique = {s.id: s for s in sources}
    return sorted(unique.values(), key=lambda s: (s.name, s.revision or ""))


def page_from_eligible(
    workload: Workload, revision: WorkloadRevision | None, facts: WorkloadFacts,
    catalogue: Sequence[HardwareFacts], eligible: Sequence[RunFacts],
) -> WorkloadPage:
    """The page computed from every eligible run of a workload (ranking.eligible_runs decides which)."""
    records = ranking.records_by_environment(eligible)
    kinds: dict[int, set[str]] = {}
    for run in eligible:
        kinds.setdefault(run.implementation.id, set()).add(run.evidence)
    return WorkloadPage(
        workload=workload, revision=revision, facts=facts, catalogue=catalogue, records=records,
        implementation_bests=ranking.implementation_bests(eligible), eligible_count=len(eligible),
        last_observed=max((r.observed_at.date() for r in eligible), default=None),
        sources=sorted_sources(r.source for r in eligible),
        measured_hardware_ids=frozenset(r.environment.hardware.id for r in eligible),
        evidence_kinds_by_implementation={i: frozenset(k) for i, k in kinds.items()},
        record_cohort=records[0].run.cohort_key if records else None,
        cohort_summaries={
            r.run.cohort_key: CohortSummary(
                last_observed=max(row.run.observed_at.date() for row in r.cohort),
                single_source=len({row.run.source.id for row in r.cohort}) == 1,
            )
            for r in records
        },
    )
