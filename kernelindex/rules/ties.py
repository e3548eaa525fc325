"""Ranks that respect noise, and the verdict against the baseline with its own interval.

ranking-v2 (on top of ranking-v1's eligibility, cohorts and order):
- each row's 95% confidence interval of the mean: from its raw samples when stored
  (mean ± 1.96·s/√n of the samples), otherwise from the stored mean, std and n; a row without a
  std (or n) has a zero-width interval at its mean;
- walk the cohort in ranking-v1 order (mean, then earlier observation, then run id); the first row
  opens a tie group; each next row joins the current group when its interval overlaps (touching
  counts) the interval of the group's FIRST row, otherwise it opens a new group. Comparing with the
  first row, not the last, stops ties chaining without bound (A≈B, B≈C, C≈D… with A far from D);
- ranks are dense: group 1 is rank 1, group 2 rank 2, whatever the group sizes (1, 2=, 2=, 3);
  a rank shared by two or more rows is shown "N=" (a shared first place shows "1="), a rank of one
  row plain "N";
- verdict against the baseline: speedup = baseline mean / run mean with the 95% interval of that
  ratio (stats.ratio_interval, delta method); an interval containing 1.00 (touching counts) reads
  "Indistinguishable from the baseline", otherwise "N.NN× faster/slower than the baseline" with the
  interval, written for slower runs as the slowdown (1/high–1/low). The ranking-v1 sentence
  ("1.09× slower than the baseline.") is kept unchanged beside it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kernelindex.rules.facts import RunFacts
from kernelindex.rules.ranking import order_key
from kernelindex.rules.stats import Interval, mean_interval, ratio_interval, summary_from_samples
from kernelindex.rules.verdicts import verdict_vs_baseline

RANKING_V2 = "ranking-v2"
TIES_VERSION = RANKING_V2

INDISTINGUISHABLE = "Indistinguishable from the baseline"


def run_summary(run: RunFacts) -> tuple[float, float | None, int | None]:
    """(mean, std, n) for the interval: from the raw samples when stored, else as stored."""
    if run.samples_ms:
        return summary_from_samples(list(run.samples_ms))
    return run.latency_ms, run.std_ms, run.num_trials


def run_interval(run: RunFacts) -> Interval:
    """The 95% confidence interval of a run's mean latency, in ms."""
    return mean_interval(*run_summary(run))


@dataclass(frozen=True)
class TiedRow:
    run: RunFacts
    rank: int  # dense: 1, 2, 2, 3
    shared: bool  # True when another row holds the same rank
    interval: Interval
    vs_first: float  # this row's mean / the first row's mean
    group_first_id: int  # the run that opened this row's tie group

    @property
    def rank_display(self) -> str:
        """'2=' for a shared rank, '1' otherwise."""
        return f"{self.rank}=" if self.shared else str(self.rank)


def tied_ranks(runs: Iterable[RunFacts]) -> list[TiedRow]:
    """One cohort's rows in ranking-v1 order, ranked with ties as described in the module docstring."""
    ordered = sorted(runs, key=order_key)
    if not ordered:
        return []
    intervals = [run_interval(r) for r in ordered]
    groups: list[list[int]] = []
    for i, interval in enumerate(intervals):
        if groups and interval.overlaps(intervals[groups[-1][0]]):
            groups[-1].append(i)
        else:
            groups.append([i])
    first = ordered[0].latency_ms
    rows: list[TiedRow] = []
    for rank, members in enumerate(groups, start=1):
        for i in members:
            rows.append(
                TiedRow(
                    run=ordered[i],
                    rank=rank,
                    shared=len(members) > 1,
                    interval=intervals[i],
                    vs_first=ordered[i].latency_ms / first,
                    group_first_id=ordered[members[0]].id,
                )
            )
    return rows


def _ratio(value: float) -> str:
    return f"{value:.2f}"


def interval_verdict(speedup: float, interval: Interval) -> str:
    """The sentence for a speedup (baseline/run) and its 95% interval.

    'Indistinguishable from the baseline (95% CI 0.98–1.03×).' when the interval contains 1.00,
    '1.60× faster than the baseline (95% CI 1.59–1.60×).', or
    '1.09× slower than the baseline (95% CI 1.08–1.11×).' (slowdown = 1/speedup, its interval
    1/high–1/low).
    """
    if interval.contains(1.0):
        return f"{INDISTINGUISHABLE} (95% CI {_ratio(interval.low)}–{_ratio(interval.high)}×)."
    if speedup > 1:
        return f"{_ratio(speedup)}× faster than the baseline (95% CI {_ratio(interval.low)}–{_ratio(interval.high)}×)."
    return (
        f"{_ratio(1 / speedup)}× slower than the baseline "
        f"(95% CI {_ratio(1 / interval.high)}–{_ratio(1 / interval.low)}×)."
    )


@dataclass(frozen=True)
class BaselineVerdict:
    run_id: int
    baseline_run_id: int
    speedup: float  # baseline mean / run mean; >1 is faster
    interval: Interval  # 95% interval of the speedup
    indistinguishable: bool  # the interval contains 1.00
    sentence: str  # with the interval (ranking-v2)
    page_sentence: str  # ranking-v1's sentence, unchanged: '1.09× slower than the baseline.'


def baseline_verdict(run: RunFacts, baseline: RunFacts) -> BaselineVerdict:
    """The verdict of a run against its cohort's baseline, with the interval of the speedup."""
    base = run_summary(baseline)
    this = run_summary(run)
    # The point estimate uses the stored means, as ranking-v1 does, so the page sentence is unchanged.
    speedup = (baseline.mean_ms if baseline.mean_ms is not None else base[0]) / (
        run.mean_ms if run.mean_ms is not None else this[0]
    )
    interval = ratio_interval(base, this)
    return BaselineVerdict(
        run_id=run.id,
        baseline_run_id=baseline.id,
        speedup=speedup,
        interval=interval,
        indistinguishable=interval.contains(1.0),
        sentence=interval_verdict(speedup, interval),
        page_sentence=verdict_vs_baseline(speedup),
    )
