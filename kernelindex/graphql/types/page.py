"""The computed parts of a workload page: the headline, the ranked comparison of a cohort (with each
row's trust level and cross-check), implementation summaries and coverage gaps. Every figure is
derived from stored runs by the rules package."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Annotated

import strawberry

from kernelindex.graphql.context import Context
from kernelindex.graphql.enums import Evidence, HeadlineKind, TrustLevel, of_rules
from kernelindex.graphql.pagination import check_first
from kernelindex.graphql.types.catalogue import Environment, Hardware, Implementation, implementation_of
from kernelindex.graphql.types.run import Configuration, Run
from kernelindex.rules import ranking, stats, ties, verdicts
from kernelindex.rules import trust_labels as trust
from kernelindex.rules import trust_ladder as evidence_rules
from kernelindex.rules.comparison_text import MIXED_SOURCES_TITLE, SOURCE_NATIVE_TITLE, row_notes
from kernelindex.rules.display import format_date, format_latency, format_ratio, half_width_display, plural, plus_minus_display
from kernelindex.rules.facts import HardwareFacts, RunFacts
from kernelindex.services import comparisons
from kernelindex.services.workload_page import CohortSummary, WorkloadPage


@strawberry.type(description="The top of a workload page: who holds the overall record, and by how much.")
class Headline:
    page: strawberry.Private[WorkloadPage]
    record: strawberry.Private[ranking.CohortRecord]

    @property
    def _baseline(self) -> ranking.RankedRun | None:
        return ranking.baseline_of(self.record.cohort)

    @strawberry.field(description="BASELINE_UNBEATEN when the source baseline holds the overall record, otherwise FASTEST.")
    def kind(self) -> HeadlineKind:
        return HeadlineKind.BASELINE_UNBEATEN if self.record.run.implementation.is_baseline else HeadlineKind.FASTEST

    @strawberry.field(description="kind in words, e.g. 'Source baseline · unbeaten'.")
    def label(self) -> str:
        return verdicts.headline_label(self.record.run.implementation.is_baseline, self.record.run.evidence)

    @strawberry.field(description="The run holding the overall record.")
    def run(self) -> Run:
        return Run(facts=self.record.run)

    @strawberry.field(description="Its mean latency in milliseconds.")
    def latency_ms(self) -> float:
        return self.record.run.latency_ms

    @strawberry.field(description="Half width of the 95% confidence interval of that mean, in milliseconds.")
    def ci_half_width_ms(self) -> float | None:
        return stats.ci95_half_width(self.record.run.std_ms, self.record.run.num_trials)

    @strawberry.field(description="'1.39 ms'.")
    def latency_display(self) -> str:
        return format_latency(self.record.run.latency_ms)

    @strawberry.field(description="'± 0.02': to the latency's decimals, as the reference pages write it (so a tiny interval reads '± 0.00').")
    def plus_minus_display(self) -> str | None:
        run = self.record.run
        return plus_minus_display(run.std_ms, run.num_trials, run.latency_ms)

    @strawberry.field(description="'± 0.0041 ms': the 95% half width to two significant figures, however narrow (plusMinusDisplay writes it to the latency's decimals, as the reference pages do: '± 0.00').")
    def ci_half_width_display(self) -> str:
        run = self.record.run
        return half_width_display(run.std_ms, run.num_trials)

    @strawberry.field(description="'mean of 100'.")
    def statistic_display(self) -> str:
        return f"{self.record.run.protocol.statistic} of {self.record.run.num_trials}"

    @strawberry.field(description="Baseline latency / record latency in the record's cohort; null when the baseline holds it or was not measured there.")
    def speedup_vs_baseline(self) -> float | None:
        base = self._baseline
        if base is None or base.run.id == self.record.run.id:
            return None
        return ranking.speedup_vs_baseline(self.record.run, base.run)

    @strawberry.field(description="'1.60× faster than baseline'; null when the baseline holds the record.")
    def speedup_display(self) -> str | None:
        speedup = self.speedup_vs_baseline()
        return None if speedup is None else verdicts.headline_speedup(speedup)

    @strawberry.field(description="The record holder.")
    def implementation(self) -> Implementation:
        return implementation_of(self.record.run.implementation)

    @strawberry.field(description="'Reported evidence · last observed 2026-03-05.'")
    def evidence_line(self) -> str:
        return verdicts.evidence_line(self.record.run.evidence, format_date(self.page.last_observed))

    @strawberry.field(description="Caveats on the record run.")
    def caveats(self) -> list[str]:
        return trust.caveats(self.record.run)


@strawberry.type(description="One row of a comparison: a run ranked inside its cohort.")
class ComparisonRow:
    row: strawberry.Private[ranking.RankedRun]
    tied: strawberry.Private[ties.TiedRow]
    baseline: strawberry.Private[RunFacts | None]
    exact: strawberry.Private[bool]
    context_runs: strawberry.Private[list[RunFacts]]

    @strawberry.field(description="Rank inside the cohort (ranking-v3): rows whose 95% intervals overlap share a rank; dense.")
    def rank(self) -> int:
        return self.tied.rank

    @strawberry.field(description="The rank as text, e.g. '2', with '=' after it when the rank is shared ('2=').")
    def rank_display(self) -> str:
        return self.tied.rank_display

    @strawberry.field(description="Strict position by mean latency (ranking-v1), 1 = fastest.")
    def position(self) -> int:
        return self.row.rank

    @strawberry.field(description="95% confidence interval of the mean latency, ms (from raw samples when stored).")
    def interval_ms(self) -> list[float]:
        return [self.tied.interval.low, self.tied.interval.high]

    @strawberry.field(description="The verdict against the baseline with its own 95% interval; 'Indistinguishable from the baseline' when it contains 1.00.")
    def verdict_with_interval(self) -> str | None:
        if self.baseline is None or self.row.run.implementation.is_baseline:
            return None
        return ties.baseline_verdict(self.row.run, self.baseline).sentence

    @strawberry.field(description="95% interval of baseline latency / this latency.")
    def speedup_interval(self) -> list[float] | None:
        if self.baseline is None or self.row.run.implementation.is_baseline:
            return None
        interval = ties.baseline_verdict(self.row.run, self.baseline).interval
        return None if interval is None else [interval.low, interval.high]

    @strawberry.field(description="trust-v2 ladder: the run's rung, weighing the KernelIndex measurements of its implementation on its SKU.")
    def trust_level(self) -> TrustLevel:
        return of_rules(TrustLevel, evidence_rules.trust_level(self.row.run, self.context_runs).word)

    @strawberry.field(description="A KernelIndex measurement on the same SKU confirming (within 5%) or contradicting this reported figure.")
    def cross_check(self) -> str | None:
        # cross_check weighs only the fleet's own measurements, and none for a run that is one.
        check = evidence_rules.cross_check(self.row.run, self.context_runs)
        return check.sentence if check else None

    @strawberry.field(description="The run.")
    def run(self) -> Run:
        return Run(facts=self.row.run)

    @strawberry.field(description="The implementation.")
    def implementation(self) -> Implementation:
        return implementation_of(self.row.run.implementation)

    @strawberry.field(description="Whether this is the source's designated baseline.")
    def is_baseline(self) -> bool:
        return self.row.run.implementation.is_baseline

    @strawberry.field(description="Mean latency in milliseconds.")
    def latency_ms(self) -> float:
        return self.row.run.latency_ms

    @strawberry.field(description="Half width of the 95% confidence interval, in milliseconds.")
    def ci_half_width_ms(self) -> float | None:
        return stats.ci95_half_width(self.row.run.std_ms, self.row.run.num_trials)

    @strawberry.field(description="'1.52 ms'.")
    def latency_display(self) -> str:
        return format_latency(self.row.run.latency_ms)

    @strawberry.field(description="'± 0.00': to the latency's decimals, as the reference pages write it.")
    def plus_minus_display(self) -> str | None:
        run = self.row.run
        return plus_minus_display(run.std_ms, run.num_trials, run.latency_ms)

    @strawberry.field(description="'± 0.0041 ms': the 95% half width to two significant figures, however narrow (plusMinusDisplay writes it to the latency's decimals, as the reference pages do: '± 0.00').")
    def ci_half_width_display(self) -> str:
        run = self.row.run
        return half_width_display(run.std_ms, run.num_trials)

    @strawberry.field(description="Latency / the #1 row's latency.")
    def vs_first(self) -> float:
        return self.row.vs_first

    @strawberry.field(description="'1.09×'.")
    def vs_first_display(self) -> str:
        return format_ratio(self.row.vs_first)

    @strawberry.field(description="Baseline latency / this latency (>1 is faster); null on the baseline row or without a baseline.")
    def speedup_vs_baseline(self) -> float | None:
        if self.baseline is None or self.row.run.implementation.is_baseline:
            return None
        return ranking.speedup_vs_baseline(self.row.run, self.baseline)

    @strawberry.field(description="'1.09× slower than the baseline.'; null on the baseline row.")
    def verdict(self) -> str | None:
        if self.baseline is None or self.row.run.implementation.is_baseline:
            return None
        return ties.baseline_verdict(self.row.run, self.baseline).page_sentence

    @strawberry.field(description="Whether the run's configuration equals the workload's canonical one.")
    def exact_configuration(self) -> bool:
        return self.exact

    @strawberry.field(description="The row's sentences, in order: verdict, configuration note, caveats.")
    def notes(self) -> list[str]:
        return row_notes(self.row.run, self.verdict(), self.exact)

    @strawberry.field(description="The notes as one paragraph.")
    def summary(self) -> str:
        return " ".join(self.notes())

    @strawberry.field(description="'Reported · MIT · source'.")
    def trust_label(self) -> str:
        return trust.trust_label(self.row.run.evidence, self.row.run.implementation)

    @strawberry.field(description="'2026-03-05'.")
    def observed_display(self) -> str:
        return format_date(self.row.run.observed_at) or ""

    @strawberry.field(description="Observed more than 180 days before now.")
    def stale(self, info: strawberry.Info[Context, None]) -> bool:
        return trust.is_stale(self.row.run.observed_at, info.context.now)


@strawberry.type(description="The ranked runs of one cohort (same workload configuration, protocol and environment), with the facts they share stated once.")
class Comparison:
    """A cohort's comparison. Its facts about every row (count, latest observation, title) come from
    the page's cohort bests; `rows` reads only the rows it shows (kernelindex.services.pages.CohortTop).

    measured_runs: the KernelIndex measurements the rows' trust levels weigh, or None for every
    eligible measurement of each row's implementation on its SKU (read for the rows shown)."""

    record: strawberry.Private[ranking.CohortRecord]
    summary: strawberry.Private[CohortSummary]
    canonical_configuration_key: strawberry.Private[str]
    measured_runs: strawberry.Private[Sequence[RunFacts] | None]

    @strawberry.field(description="'Source-native comparison' when singleSource, else 'Comparison'.")
    def title(self) -> str:
        return SOURCE_NATIVE_TITLE if self.summary.single_source else MIXED_SOURCES_TITLE

    @strawberry.field(description="Whether every row comes from one source.")
    def single_source(self) -> bool:
        return self.summary.single_source

    @strawberry.field(description="The shared environment.")
    def environment(self) -> Environment:
        return Environment(facts=self.record.run.environment)

    @strawberry.field(description="'NVIDIA H100'.")
    def gpu(self) -> str:
        return self.record.run.environment.hardware.family

    @strawberry.field(description="The shared configuration.")
    def configuration(self) -> Configuration:
        return Configuration.of(self.record.run.bindings, self.record.run.dtype)

    @strawberry.field(description="'KernelBench timing scripts'.")
    def protocol_name(self) -> str:
        return self.record.run.protocol.name

    @strawberry.field(description="'mean'.")
    def statistic(self) -> str:
        return self.record.run.protocol.statistic

    @strawberry.field(description="Rows in the comparison.")
    def result_count(self) -> int:
        return self.record.run_count

    @strawberry.field(description="'2 results'.")
    def result_count_display(self) -> str:
        return plural(self.record.run_count, "result")

    @strawberry.field(description="Latest observation among the rows.")
    def last_observed(self) -> date | None:
        return self.summary.last_observed

    @strawberry.field(description="The shared facts as one line.")
    def header(self) -> str:
        config = self.configuration()
        return (
            f"{self.title()} · GPU {self.gpu()} · Workload {config.bindings_display()} · {config.dtype} · "
            f"Protocol {self.protocol_name()} · {self.statistic()} · {self.result_count_display()} · "
            f"last observed {format_date(self.last_observed())}"
        )

    @strawberry.field(description="Ranked rows, fastest first: the first `first` of them (resultCount says how many in all).")
    async def rows(
        self, info: strawberry.Info[Context, None],
        first: Annotated[int, strawberry.argument(description="How many rows, at most (1 to 100; default 20), fastest first.")] = 20,
    ) -> list[ComparisonRow]:
        check_first(first, info.context.settings.max_page_size)
        loaders = info.context.loaders
        top = await loaders.cohort_top.load((self.record.run.cohort_key, first))
        measured = self.measured_runs
        if measured is None:
            subjects = comparisons.subjects_of(comparisons.shown_runs(top, first))
            measured = [m for runs in await loaders.subject_measurements.load_many(subjects) for m in runs]
        rows = comparisons.comparison_rows(top, first, measured, self.canonical_configuration_key)
        return [ComparisonRow(row=r.row, tied=r.tied, baseline=r.baseline, exact=r.exact, context_runs=r.context_runs)
                for r in rows]


@strawberry.type(description="An implementation's best eligible latency on this workload over all environments.")
class ImplementationSummary:
    best: strawberry.Private[ranking.ImplementationBest]
    evidence_kinds_found: strawberry.Private[list[Evidence]]
    runs: strawberry.Private[list[RunFacts]]

    @strawberry.field(description="The implementation.")
    def implementation(self) -> Implementation:
        return implementation_of(self.best.run.implementation)

    @strawberry.field(description="The run with its best latency.")
    def best_run(self) -> Run:
        return Run(facts=self.best.run)

    @strawberry.field(description="Best latency in milliseconds.")
    def best_latency_ms(self) -> float:
        return self.best.run.latency_ms

    @strawberry.field(description="'1.39 ms'.")
    def best_latency_display(self) -> str:
        return format_latency(self.best.run.latency_ms)

    @strawberry.field(description="Best latency / the best implementation's best latency.")
    def vs_best(self) -> float:
        return self.best.vs_best

    @strawberry.field(description="'1.06×'.")
    def vs_best_display(self) -> str:
        return format_ratio(self.best.vs_best)

    @strawberry.field(description="The strongest trust-v2 level among its runs (REPORTED when none is stronger).")
    def trust_level(self) -> TrustLevel:
        level = evidence_rules.implementation_level(self.runs)
        return TrustLevel.REPORTED if level is None else of_rules(TrustLevel, level.word)

    @strawberry.field(description="Kinds of evidence among its eligible runs, each once.")
    def evidence_kinds(self) -> list[Evidence]:
        return list(self.evidence_kinds_found)

    @strawberry.field(description="'MIT · source'.")
    def availability(self) -> str:
        return trust.availability_label(self.best.run.implementation)

    @strawberry.field(description="'python · torch_eager'.")
    def runtime_display(self) -> str:
        impl = self.best.run.implementation
        return f"{impl.language} · {impl.runtime_id}"


@strawberry.type(description="Priority hardware with no eligible run for this workload.")
class HardwareGap:
    hardware_facts: strawberry.Private[HardwareFacts]

    @strawberry.field(description="The hardware not measured.")
    def hardware(self) -> Hardware:
        return Hardware(facts=self.hardware_facts)

    @strawberry.field(description="'Not measured on B200 for this workload.'")
    def message(self) -> str:
        return verdicts.not_measured(self.hardware_facts.short_name)


