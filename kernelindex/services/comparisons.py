"""A comparison's rows, decided: rank, tie groups, the baseline and the runs each row's trust level weighs.

The GraphQL resolver reads what these need (the cohort's top rows, the subjects' measurements) through
its loaders and maps the rows this module returns; it decides nothing itself (ranking-v1 orders, ties
groups, the trust context picks the runs a trust level sees)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kernelindex.rules import ranking, ties
from kernelindex.rules.facts import RunFacts
from kernelindex.rules.trust_context import comparison_context
from kernelindex.services.pages import CohortTop, Subject


@dataclass(frozen=True)
class ComparisonRowFacts:
    """One row as shown: its rank in the cohort and in its tie group, the cohort's baseline, whether it was
    measured at the configuration the comparison is of, and the runs its trust level weighs."""

    row: ranking.RankedRun
    tied: ties.TiedRow
    baseline: RunFacts | None
    exact: bool
    context_runs: list[RunFacts]


def shown_runs(top: CohortTop, first: int) -> list[RunFacts]:
    """The runs of the first `first` rows, in ranking order."""
    return [row.run for row in ranking.rank_cohort(top.rows)[:first]]


def subjects_of(runs: Sequence[RunFacts]) -> list[Subject]:
    """The trust-ladder subjects of these runs (revision, configuration, implementation, SKU), once each:
    whose measurements a row's trust level weighs when the comparison has none of its own."""
    return list(dict.fromkeys(
        (r.workload_revision_id, r.configuration_key, r.implementation.id, r.environment.hardware.id) for r in runs
    ))


def comparison_rows(top: CohortTop, first: int, measured: Sequence[RunFacts], configuration_key: str) -> list[ComparisonRowFacts]:
    """The first `first` rows of a cohort's comparison, fastest first. `measured`: the KernelIndex
    measurements the rows' trust levels weigh; `configuration_key`: the configuration the comparison is of
    (a row at another one is not exact)."""
    ranked = ranking.rank_cohort(top.rows)[:first]
    tied = {t.run.id: t for t in ties.tied_ranks(top.rows)}
    # The trust ladder sees the measurements and the cohort's runs; of the cohort, only the rows
    # themselves and each implementation's latest measurement can change a figure (CohortTop).
    context = comparison_context(measured, [*(row.run for row in ranked), *top.cross_checks])
    return [
        ComparisonRowFacts(row=row, tied=tied[row.run.id], baseline=top.baseline,
                           exact=row.run.configuration_key == configuration_key, context_runs=context)
        for row in ranked
    ]
