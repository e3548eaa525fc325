"""Ranks that respect noise, and the verdict against the baseline with its own interval.

ranking-v3 (ranking-v2 with stats-v2's intervals, and no verdict without an interval), on top of
ranking-v1's eligibility, cohorts and order:
- each row's 95% confidence interval of the mean (stats-v2): from its raw samples when stored
  (mean ± t·s/√n of the samples, t Student's for n − 1 degrees of freedom), otherwise from the
  stored mean, std and n. A row with one trial, or without a std (or n), has no interval: it is
  placed in the walk below as a point at its mean, and its words say why ("one trial: no interval");
- walk the cohort in ranking-v1 order (mean, then earlier observation, then run id); the first row
  opens a tie group; each next row joins the current group when its interval overlaps (touching
  counts) the interval of the group's FIRST row, otherwise it opens a new group. Comparing with the
  first row, not the last, stops ties chaining without bound (A≈B, B≈C, C≈D… with A far from D);
- ranks are dense: group 1 is rank 1, group 2 rank 2, whatever the group sizes (1, 2=, 2=, 3);
  a rank shared by two or more rows is shown "N=" (a shared first place shows "1="), a rank of one
  row plain "N";
- verdict against the baseline: speedup = baseline mean / run mean with the 95% interval of that
  ratio (stats.ratio_interval: delta method, t at the Welch–Satterthwaite degrees of freedom); an
  interval containing 1.00 (touching counts) reads "Indistinguishable from the baseline", otherwise
  "N.NN× faster/slower than the baseline" with the interval, written for slower runs as the slowdown
  (1/high–1/low). The ranking-v1 sentence ("1.09× slower than the baseline.") is kept beside it;
- no verdict when either side has no interval: both sentences read "No verdict (one trial: no
  interval)." (or "No verdict (the baseline: one trial: no interval).", or with "no spread
  reported" for a missing std), and the verdict has no interval.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kernelindex.rules.facts import RunFacts
from kernelindex.rules.ranking import order_key
from kernelindex.rules.stats import Interval, mean_interval, no_interval_reason, ratio_interval, summary_from_samples
from kernelindex.rules.verdicts import verdict_vs_baseline

RANKING_V2 = "ranking-v2"  # 1.96·std/√n whatever n, and a verdict from zero-width intervals
RANKING_V3 = "ranking-v3"
TIES_VERSION = RANKING_V3

INDISTINGUISHABLE = "Indistinguishable from the baseline"


def run_summary(run: RunFacts) -> tuple[float, float | None, int | None]:
    """(mean, std, n) for the interval: from the raw samples when stored, else as stored."""
    if run.samples_ms:
        return summary_from_samples(list(run.samples_ms))
    return run.latency_ms, run.std_ms, run.num_trials


def run_interval(run: RunFacts) -> Interval:
    """The 95% confidence interval of a run's mean latency, in ms; a point at the mean when the run
    has none (see run_no_interval_reason)."""
    return mean_interval(*run_summary(run))


def run_no_interval_reason(run: RunFacts) -> str | None:
    """'one trial: no interval' (or 'no spread reported: no interval') when the run has no interval."""
    _, std, n = run_summary(run)
    return no_interval_reason(std, n)


def no_verdict(run_reason: str | None, baseline_reason: str | None) -> str:
    """'No verdict (one trial: no interval).', or '(the baseline: …)' when the baseline lacks one."""
    reason = run_reason if run_reason is not None else f"the baseline: {baseline_reason}"
    return f"No verdict ({reason})."


@dataclass(frozen=True)
class TiedRow:
    run: RunFacts
    rank: int  # dense: 1, 2, 2, 3
    shared: bool  # True when another row holds the same rank
    interval: Interval  # a point at the mean when the row has no interval (see no_interval)
    vs_first: float  # this row's mean / the first row's mean
    group_first_id: int  # the run that opened this row's tie group
    no_interval: str | None = None  # 'one trial: no interval' when the row has no interval

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
                    no_interval=run_no_interval_reason(ordered[i]),
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
    interval: Interval | None  # 95% interval of the speedup; None when either side has no interval
    indistinguishable: bool  # the interval contains 1.00 (False without an interval)
    sentence: str  # with the interval, or 'No verdict (one trial: no interval).'
    page_sentence: str  # ranking-v1's sentence, '1.09× slower than the baseline.', or the no-verdict one


def baseline_verdict(run: RunFacts, baseline: RunFacts) -> BaselineVerdict:
    """The verdict of a run against its cohort's baseline, with the interval of the speedup."""
    base = run_summary(baseline)
    this = run_summary(run)
    # The point estimate uses the stored headline figures, as ranking-v1 does, so the page sentence is unchanged.
    speedup = (baseline.figure if baseline.figure is not None else base[0]) / (
        run.figure if run.figure is not None else this[0]
    )
    run_reason, base_reason = no_interval_reason(this[1], this[2]), no_interval_reason(base[1], base[2])
    if run_reason is not None or base_reason is not None:
        words = no_verdict(run_reason, base_reason)
        return BaselineVerdict(
            run_id=run.id, baseline_run_id=baseline.id, speedup=speedup, interval=None,
            indistinguishable=False, sentence=words, page_sentence=words,
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
