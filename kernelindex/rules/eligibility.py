"""What "eligible" means: the one rule for which runs count towards records.

eligibility-v2 (ranking-v1 counts these runs and no others): a run is eligible when it
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

Every route that counts or lists eligible runs reads this rule: the records and their run counts
(kernelindex.services.records through ranking.eligible_runs), hence Workload.eligibleRunCount (the
sum of the records' run counts); runs(eligibleOnly: true) and the exports' eligible_only, through
kernelindex.services.eligibility.eligible_run_clause, this rule written in SQL. A test holds them
equal (tests/api/test_eligibility_routes.py)."""

from __future__ import annotations

from collections.abc import Iterable

from kernelindex.rules.facts import RunFacts, WorkloadFacts

ELIGIBILITY_VERSION = "eligibility-v2"

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


def ineligibility_reason(run: RunFacts, workload: WorkloadFacts) -> str | None:
    """Why a run does not count towards records, or None when it does. `workload` is the run's own
    workload; `run.held_for_review` must be the run's judged hold (kernelindex.services.holds)."""
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
    if run.configuration_key != workload.canonical_configuration_key:
        return NOT_CANONICAL
    if run.protocol.metric != "latency":
        return NOT_LATENCY
    if run.held_for_review:
        return HELD
    return None


def is_eligible(run: RunFacts, workload: WorkloadFacts) -> bool:
    return ineligibility_reason(run, workload) is None


def eligible_runs(runs: Iterable[RunFacts], workload: WorkloadFacts) -> list[RunFacts]:
    """The eligible ones of a workload's runs, in the order given."""
    return [r for r in runs if ineligibility_reason(r, workload) is None]
