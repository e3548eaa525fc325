"""Which runs the trust ladder (kernelindex.rules.trust_ladder) weighs for a figure on a page.

A comparison row is judged against the workload's latest KernelIndex measurements and the rows of
its own cohort; an implementation's summary against its measurements and its best run.
"""

from __future__ import annotations

from collections.abc import Iterable

from kernelindex.rules.facts import RunFacts


def comparison_context(measured: Iterable[RunFacts], cohort: Iterable[RunFacts]) -> list[RunFacts]:
    """The runs a comparison row's trust level and cross-check see: the measurements, then the
    cohort's rows, each run once."""
    runs: dict[int, RunFacts] = {}
    for run in (*measured, *cohort):
        runs.setdefault(run.id, run)
    return list(runs.values())


def implementation_context(measured: Iterable[RunFacts], best: RunFacts) -> list[RunFacts]:
    """The runs an implementation's trust level sees: its measurements, and its best run."""
    runs = {r.id: r for r in measured if r.implementation.id == best.implementation.id}
    runs.setdefault(best.id, best)
    return list(runs.values())
