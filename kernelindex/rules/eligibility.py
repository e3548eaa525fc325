"""What "eligible" means: the one rule for which runs count towards records.

eligibility-v3 (ranking-v1 counts these runs and no others): a run is eligible when it
- passed its correctness check (status 'passed');
- is live: not retracted (by itself, or with the snapshot it came in: `kernelindex snapshot retract`
  retracts every run of the snapshot) and not superseded by a newer figure;
- came in the newest snapshot of its source, where a snapshot is the source's whole catalogue (v2: a
  kernelindex.com export, a Liger-Kernel results file; a run the newest no longer holds stays stored);
- is of its workload's current revision (revisions-v1);
- was measured at that revision's canonical configuration;
- is a latency figure (v2: peak memory and a source's own score are kept apart from records; they are
  stored, listed and compared only with their like);
- is not held for review (plausibility-v2: a flag that still holds, with no approving review).

Those are the workload's headline records (its page, eligibleRunCount, records(hardware:), the
exports' eligible_only). v3 adds records at every other configuration and for every metric: a run
counts *in its cohort* (one configuration, protocol and so metric, environment) on the same terms
but for the configuration and metric conditions, so a FlashInfer-Bench case or a Liger-Kernel x value that is not the
canonical one, or a peak-memory or score cohort, has records of its own, compared only with its
like (Workload.recordsAt, Workload.configurations). The headline rule is the cohort rule at the
canonical configuration and the latency metric: `ineligibility_reason` is `cohort_ineligibility_reason`
plus those two conditions.

Every route that counts or lists eligible runs reads this rule: the records and their run counts
(kernelindex.services.records through ranking.eligible_runs), hence Workload.eligibleRunCount (the
sum of the records' run counts); runs(eligibleOnly: true) and the exports' eligible_only, through
kernelindex.services.eligibility.eligible_run_clause, this rule written in SQL. A test holds them
equal (tests/api/test_eligibility_routes.py)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kernelindex.rules.facts import RunFacts, WorkloadFacts

ELIGIBILITY_VERSION = "eligibility-v3"

# The reasons, in the order they are checked (the first that applies is the one given).
FAILED = "failed"
RETRACTED = "retracted"
SUPERSEDED = "superseded"
OUTDATED_SNAPSHOT = "not in its source's newest snapshot"
OLDER_REVISION = "older workload revision"
NOT_CANONICAL = "not the canonical configuration"
NOT_LATENCY = "not a latency figure"
HELD = "held for review"
REASONS = (FAILED, RETRACTED, SUPERSEDED, OUTDATED_SNAPSHOT, OLDER_REVISION, NOT_CANONICAL, NOT_LATENCY, HELD)


# A protocol's metric (the protocols table's metric_known check); the headline records are latencies.
METRICS = ("latency", "memory", "score")
HEADLINE_METRIC = "latency"


@dataclass(frozen=True)
class RecordScope:
    """Which cohorts' records a view shows: those at one configuration (None: the current revision's
    canonical one) for one metric. HEADLINE is the workload's own records."""

    configuration_key: str | None = None
    metric: str = HEADLINE_METRIC


HEADLINE = RecordScope()


def ineligibility_reason(run: RunFacts, workload: WorkloadFacts) -> str | None:
    """Why a run does not count towards the workload's headline records, or None when it does.
    `workload` is the run's own workload; `run.held_for_review` must be the run's judged hold
    (kernelindex.services.holds)."""
    return _reason(run, workload, headline=True)


def cohort_ineligibility_reason(run: RunFacts, workload: WorkloadFacts) -> str | None:
    """Why a run does not count towards the records of its own cohort (at its configuration, for its
    metric), or None when it does: the headline rule without NOT_CANONICAL and NOT_LATENCY."""
    return _reason(run, workload, headline=False)


def is_headline_cohort(configuration_key: str, metric: str, workload: WorkloadFacts) -> bool:
    """A cohort whose records are the workload's headline ones: at the canonical configuration, of latencies."""
    return configuration_key == workload.canonical_configuration_key and metric == HEADLINE_METRIC


def _reason(run: RunFacts, workload: WorkloadFacts, *, headline: bool) -> str | None:
    if run.status != "passed":
        return FAILED
    if run.retracted:
        return RETRACTED
    if run.superseded:
        return SUPERSEDED
    if run.source.outdated:
        return OUTDATED_SNAPSHOT
    if run.workload_revision_id != workload.current_revision_id:
        return OLDER_REVISION
    if headline and run.configuration_key != workload.canonical_configuration_key:
        return NOT_CANONICAL
    if headline and run.protocol.metric != HEADLINE_METRIC:
        return NOT_LATENCY
    if run.held_for_review:
        return HELD
    return None


def is_eligible(run: RunFacts, workload: WorkloadFacts) -> bool:
    return ineligibility_reason(run, workload) is None


def eligible_runs(runs: Iterable[RunFacts], workload: WorkloadFacts) -> list[RunFacts]:
    """The eligible ones of a workload's runs (for its headline records), in the order given."""
    return [r for r in runs if ineligibility_reason(r, workload) is None]


def eligible_in_cohort(runs: Iterable[RunFacts], workload: WorkloadFacts) -> list[RunFacts]:
    """The runs that count in their own cohort, in the order given."""
    return [r for r in runs if cohort_ineligibility_reason(r, workload) is None]
