"""Which runs count, how they are ordered, and which one holds the record.

ranking-v1, as the reference pages define it:
- eligible: kernelindex.rules.eligibility decides (a passed, live run of the workload's current
  revision at its canonical configuration, not held for review, for the headline records; at any
  configuration and for any metric, inside its own cohort, for the records of that scope);
  re-exported here;
- cohort: eligible runs with the same configuration, protocol and environment; only runs of one
  cohort are compared with each other;
- order inside a cohort: by the headline figure (the protocol's statistic of its metric), ties broken by the earlier
  observation, then by run id; ranks are 1, 2, 3…;
- record of a cohort: its first row; the overall record: the fastest cohort record;
- environments are labelled by hardware family, with "env N" when the family repeats, N in order
  of record latency.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

# The eligibility rule, re-exported under the names callers of ranking use.
from kernelindex.rules.eligibility import eligible_runs as eligible_runs
from kernelindex.rules.eligibility import ineligibility_reason as ineligibility_reason
from kernelindex.rules.facts import RunFacts

RANKING_VERSION = "ranking-v1"


CohortKey = tuple[int, str, int, int]  # RunFacts.cohort_key


def order_key(run: RunFacts) -> tuple[float | None, datetime, int]:
    """By the headline figure (lower is better for every metric: latency, memory, a score in seconds),
    only ever among runs of one cohort, so of one metric, statistic and unit."""
    return (run.figure, run.observed_at, run.id)


@dataclass(frozen=True)
class RankedRun:
    run: RunFacts
    rank: int
    vs_first: float  # this run's figure / the cohort leader's figure


def figure_of(run: RunFacts) -> float:
    """A ranked run's headline figure (every passed run has one: the runs table's passed_has_figure
    check). Ratios of figures are taken only inside one cohort or one record scope, so of one metric."""
    if run.figure is None:
        raise ValueError(f"run {run.id} has no figure")
    return run.figure


def rank_cohort(runs: Iterable[RunFacts]) -> list[RankedRun]:
    ordered = sorted(runs, key=order_key)
    if not ordered:
        return []
    first = figure_of(ordered[0])
    return [RankedRun(run=r, rank=i + 1, vs_first=figure_of(r) / first) for i, r in enumerate(ordered)]


def cohorts(eligible: Iterable[RunFacts]) -> dict[CohortKey, list[RunFacts]]:
    grouped: dict[CohortKey, list[RunFacts]] = defaultdict(list)
    for r in eligible:
        grouped[r.cohort_key].append(r)
    return dict(grouped)


@dataclass(frozen=True)
class CohortRecord:
    run: RunFacts
    run_count: int
    environment_label: str
    cohort: list[RankedRun]


def records_by_environment(eligible: Iterable[RunFacts]) -> list[CohortRecord]:
    """One record per cohort, fastest first, each labelled by its environment."""
    ranked = [rank_cohort(members) for members in cohorts(eligible).values()]
    ranked.sort(key=lambda rows: order_key(rows[0].run))
    labels = environment_labels([rows[0].run for rows in ranked])
    return [
        CohortRecord(run=rows[0].run, run_count=len(rows), environment_label=labels[rows[0].run.environment.id], cohort=rows)
        for rows in ranked
    ]


def environment_labels(records_in_order: list[RunFacts]) -> dict[int, str]:
    """'NVIDIA H100 · env 1' when the family repeats, plain family otherwise."""
    by_family: dict[str, list[int]] = defaultdict(list)
    for run in records_in_order:
        env_id = run.environment.id
        family = run.environment.hardware.family
        if env_id not in by_family[family]:
            by_family[family].append(env_id)
    labels: dict[int, str] = {}
    for family, env_ids in by_family.items():
        for n, env_id in enumerate(env_ids, start=1):
            labels[env_id] = f"{family} · env {n}" if len(env_ids) > 1 else family
    return labels


def baseline_of(rows: Iterable[RankedRun]) -> RankedRun | None:
    """The fastest run of the source's designated baseline in a cohort."""
    for row in rows:
        if row.run.implementation.is_baseline:
            return row
    return None


def speedup_vs_baseline(run: RunFacts, baseline: RunFacts) -> float:
    """>1 means faster (less memory, a better score) than the baseline."""
    return figure_of(baseline) / figure_of(run)


@dataclass(frozen=True)
class ImplementationBest:
    run: RunFacts
    vs_best: float


def implementation_bests(eligible: Iterable[RunFacts]) -> list[ImplementationBest]:
    """Each implementation's fastest eligible run over all environments (of one record scope, so of one
    metric), and its ratio to the best."""
    best: dict[int, RunFacts] = {}
    for r in eligible:
        current = best.get(r.implementation.id)
        if current is None or order_key(r) < order_key(current):
            best[r.implementation.id] = r
    if not best:
        return []
    fastest = min(figure_of(r) for r in best.values())
    rows = [ImplementationBest(run=r, vs_best=figure_of(r) / fastest) for r in best.values()]
    rows.sort(key=lambda b: (b.run.implementation.role != "baseline", b.run.implementation.title))
    return rows
