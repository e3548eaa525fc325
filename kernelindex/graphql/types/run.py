"""Runs: one measurement each, with the facts that make it traceable."""

from __future__ import annotations

from datetime import date, datetime

import strawberry

from kernelindex.db.models import Workload as WorkloadRow
from kernelindex.graphql.context import Context
from kernelindex.graphql.cost import cost_weight
from kernelindex.graphql.enums import Evidence, FigureUnit, Metric, ReviewState, RunStatus, TrustLevel, of_rules
from kernelindex.graphql.node import Node, to_global_id
from kernelindex.graphql.text import MAX_SAMPLES_SHOWN, SAMPLES_KIB, SHORT_TEXT_KIB, short_text
from kernelindex.graphql.types.catalogue import Environment, Implementation, Protocol, Source, implementation_of
from kernelindex.graphql.types.holds import RunFlag
from kernelindex.graphql.types.revision import WorkloadRevision
from kernelindex.rules import plausibility, stats, trust_ladder
from kernelindex.rules import trust_labels as trust
from kernelindex.rules.display import format_date, format_figure, format_latency, half_width_display, plus_minus_display
from kernelindex.rules.facts import RunFacts


@strawberry.type(description="One bound axis of a configuration, e.g. batch_size = 2.")
class AxisBinding:
    axis: str = strawberry.field(description="Axis name.")
    value: int = strawberry.field(description="Bound value.")


@strawberry.type(description="What a run measured: axis bindings and dtype.")
class Configuration:
    bindings: list[AxisBinding] = strawberry.field(description="Axis bindings, in axis-name order: one per axis of the workload (a fixed, small list).")
    dtype: str = strawberry.field(description="Data type, e.g. 'fp32'.")

    @strawberry.field(description="'batch_size = 2'.")
    def bindings_display(self) -> str:
        return ", ".join(f"{b.axis} = {b.value}" for b in self.bindings)

    @strawberry.field(description="'batch_size = 2 · fp32'.")
    def display(self) -> str:
        return " · ".join(p for p in (self.bindings_display(), self.dtype) if p)

    @staticmethod
    def of(bindings: dict[str, int], dtype: str) -> Configuration:
        return Configuration(bindings=[AxisBinding(axis=k, value=int(v)) for k, v in sorted(bindings.items())], dtype=dtype)


@strawberry.type(description="One measurement of one implementation of one workload, under a protocol, in an environment, from a source.")
class Run(Node):
    """A run's fields. The scalar and dimension fields are plain attributes, filled once from the
    facts when the object is made (__init__): strawberry resolves a field without a resolver by
    reading the attribute, with none of the Info and argument handling it gives a method resolver
    (about a microsecond a field instead of several, and a page of runs is mostly such fields).
    Fields that need the request (loaders, the clock) or derive text or figures stay resolvers, so
    they cost only when selected."""

    facts: strawberry.Private[RunFacts]
    id: strawberry.ID = strawberry.field(description="Opaque global ID.")
    database_id: int = strawberry.field(description="Database id (stable, for scripts).")

    # Written by hand, so the dataclass keeps it (it never replaces an __init__ the class defines):
    # every site makes a Run from its facts alone, and the plain fields below are those facts.
    def __init__(self, facts: RunFacts) -> None:
        self.facts = facts
        self.id = to_global_id("Run", facts.id)
        self.database_id = facts.id
        self.implementation = implementation_of(facts.implementation)
        self.environment = Environment(facts=facts.environment)
        self.protocol = Protocol(facts=facts.protocol)
        self.source = Source(facts=facts.source)
        self.status = of_rules(RunStatus, facts.status)
        self.mean_ms = facts.mean_ms
        self.std_ms = facts.std_ms
        self.min_ms = facts.min_ms
        self.max_ms = facts.max_ms
        self.median_ms = facts.median_ms
        self.p5_ms = facts.p5_ms
        self.p95_ms = facts.p95_ms
        self.num_trials = facts.num_trials
        self.compile_time_ms = facts.compile_time_ms
        self.observed_at = facts.observed_at
        self.observed_date = facts.observed_at.date()
        self.evidence = of_rules(Evidence, facts.evidence)
        self.claimed_evidence = None if facts.claimed_evidence is None else of_rules(Evidence, facts.claimed_evidence)
        self.superseded = facts.superseded
        self.retracted = facts.retracted
        self.metric = of_rules(Metric, facts.protocol.metric)
        self.figure = facts.figure
        self.figure_unit = of_rules(FigureUnit, facts.protocol.unit)
        self.figure_low = facts.figure_low
        self.figure_high = facts.figure_high
        self.low_quantile = facts.low_quantile
        self.high_quantile = facts.high_quantile
        self.source_speedup = facts.source_speedup
        self.upstream_id = facts.upstream_id or None

    async def _workload_slug(self, info: strawberry.Info[Context, None]) -> str:
        workload = await info.context.loaders.workload_by_id.load(self.facts.workload_id)
        assert workload is not None  # a run's workload is never deleted (foreign key)
        return workload.slug
    workload_slug: str = strawberry.field(resolver=_workload_slug, description="Slug of the workload measured.")

    # The workload's grouping facts beside its slug (runs.csv's suite, level, problem_number and workload_name
    # columns). Plain values, not a Workload object: workload.py shows runs, so run.py cannot import it.
    async def _workload_row(self, info: strawberry.Info[Context, None]) -> WorkloadRow:
        row = await info.context.loaders.workload_by_id.load(self.facts.workload_id)
        assert row is not None  # a run's workload is never deleted (foreign key)
        return row

    async def _suite(self, info: strawberry.Info[Context, None]) -> str:
        return (await self._workload_row(info)).suite
    suite: str = strawberry.field(resolver=_suite, description="The suite of the workload measured, e.g. 'kernelbench'.")

    async def _level(self, info: strawberry.Info[Context, None]) -> int | None:
        return (await self._workload_row(info)).level
    level: int | None = strawberry.field(
        resolver=_level, description="The level of the workload measured within its suite (KernelBench); null for a suite without levels.")

    async def _problem_number(self, info: strawberry.Info[Context, None]) -> int | None:
        return (await self._workload_row(info)).problem_number
    problem_number: int | None = strawberry.field(
        resolver=_problem_number, description="The problem number of the workload measured within its level (KernelBench); null for a suite without levels.")

    async def _workload_name(self, info: strawberry.Info[Context, None]) -> str:
        return (await self._workload_row(info)).name
    workload_name: str = strawberry.field(resolver=_workload_name, description="The name of the workload measured, e.g. 'ResNet18'.")

    async def _revision(self, info: strawberry.Info[Context, None]) -> WorkloadRevision:
        facts = await info.context.loaders.revision_by_id.load(self.facts.workload_revision_id)
        assert facts is not None  # a run's revision is never deleted (foreign key)
        return WorkloadRevision(facts=facts)
    revision: WorkloadRevision = strawberry.field(
        resolver=_revision,
        description="The revision of the workload's reference source it measured (revisions-v1): its digest, upstream snapshot and whether it is current.",
    )

    def _configuration(self) -> Configuration:
        return Configuration.of(self.facts.bindings, self.facts.dtype)
    configuration: Configuration = strawberry.field(resolver=_configuration, description="The configuration measured.")

    implementation: Implementation = strawberry.field(description="The implementation measured.")
    environment: Environment = strawberry.field(description="Where it was measured.")
    protocol: Protocol = strawberry.field(description="How it was timed.")
    source: Source = strawberry.field(description="Who reported or measured it, at which revision.")
    status: RunStatus = strawberry.field(description="Passed or failed.")

    def _failure_reason(self) -> str | None:
        return short_text(self.facts.failure_reason)
    failure_reason: str | None = strawberry.field(
        resolver=_failure_reason,
        description="Why a failed run failed (at most 2 KiB; longer text is cut, with a marker).",
        metadata=cost_weight(SHORT_TEXT_KIB),
    )

    metric: Metric = strawberry.field(description="What the figure is: latency, peak memory, or the source's own score.")
    figure: float | None = strawberry.field(
        description="The headline figure: the protocol's statistic of its metric, in figureUnit (a KernelBench run's mean "
                    "latency; Liger-Kernel's median; GPU MODE's leaderboard score). Runs rank by it within one protocol.")
    figure_unit: FigureUnit = strawberry.field(description="The unit of figure, figureLow and figureHigh.")
    figure_low: float | None = strawberry.field(description="The lower quantile the source states (at lowQuantile), in figureUnit.")
    figure_high: float | None = strawberry.field(description="The upper quantile the source states (at highQuantile), in figureUnit.")
    low_quantile: float | None = strawberry.field(description="Which quantile figureLow is, e.g. 0.2 for Liger-Kernel's 20th percentile.")
    high_quantile: float | None = strawberry.field(description="Which quantile figureHigh is, e.g. 0.8.")
    source_speedup: float | None = strawberry.field(
        description="A speedup the source itself states (FlashInfer-Bench's speedup_factor): the source's, not ours.")
    upstream_id: str | None = strawberry.field(
        description="The source's own id of the run (a kernelindex.com export's run id, Liger-Kernel's row key); null for a run record.")

    def _figure_display(self) -> str | None:
        return format_figure(self.facts.figure, self.facts.protocol.unit) if self.facts.figure else None
    figure_display: str | None = strawberry.field(resolver=_figure_display, description="'1.39 ms', '2,048.0 MB', '1.005e-05 s'.")

    mean_ms: float | None = strawberry.field(description="Mean latency in milliseconds.")
    std_ms: float | None = strawberry.field(description="Standard deviation of the trials in milliseconds.")
    min_ms: float | None = strawberry.field(description="Fastest trial in milliseconds.")
    max_ms: float | None = strawberry.field(description="Slowest trial in milliseconds.")
    median_ms: float | None = strawberry.field(description="Median trial in milliseconds, when reported.")
    p5_ms: float | None = strawberry.field(description="5th percentile in milliseconds, when reported.")
    p95_ms: float | None = strawberry.field(description="95th percentile in milliseconds, when reported.")
    num_trials: int | None = strawberry.field(description="Number of timed trials.")

    def _samples_ms(self) -> list[float] | None:
        return list(self.facts.samples_ms[:MAX_SAMPLES_SHOWN]) if self.facts.samples_ms else None
    samples_ms: list[float] | None = strawberry.field(
        resolver=_samples_ms,
        description="Raw per-trial latencies in milliseconds, when stored: the first 1,000 (numTrials says how many there are; the interval uses them all).",
        metadata=cost_weight(SAMPLES_KIB),
    )

    compile_time_ms: float | None = strawberry.field(description="Compile time (first call) in milliseconds, apart from the latency.")

    def _ci_half_width_ms(self) -> float | None:
        return stats.ci95_half_width(self.facts.std_ms, self.facts.num_trials)
    ci_half_width_ms: float | None = strawberry.field(
        resolver=_ci_half_width_ms,
        description="Half width of the 95% confidence interval of the mean (t·std/√n, Student's t for n−1 degrees of freedom), in milliseconds; null for one trial.",
    )

    def _latency_display(self) -> str | None:
        return format_latency(self.facts.mean_ms) if self.facts.mean_ms else None
    latency_display: str | None = strawberry.field(resolver=_latency_display, description="'1.39 ms'.")

    def _plus_minus_display(self) -> str | None:
        if not self.facts.mean_ms:
            return None
        return plus_minus_display(self.facts.std_ms, self.facts.num_trials, self.facts.mean_ms)
    plus_minus_display: str | None = strawberry.field(
        resolver=_plus_minus_display,
        description="'± 0.02' (ms, to the latency's decimals).",
    )

    def _ci_half_width_display(self) -> str | None:
        if not self.facts.mean_ms:
            return None
        return half_width_display(self.facts.std_ms, self.facts.num_trials)
    ci_half_width_display: str | None = strawberry.field(resolver=_ci_half_width_display, description="'± 0.0041 ms': the 95% half width to two significant figures, however narrow (plusMinusDisplay writes it to the latency's decimals, as the reference pages do: '± 0.00').")

    def _statistic_display(self) -> str | None:
        if self.facts.num_trials is None:
            # A source that states its statistic but not its trial count (a catalogue export, Liger-Kernel).
            return self.facts.protocol.statistic if self.facts.figure is not None else None
        return f"{self.facts.protocol.statistic} of {self.facts.num_trials}"
    statistic_display: str | None = strawberry.field(
        resolver=_statistic_display, description="'mean of 100'; the statistic alone ('median') where the source states no trial count.")

    observed_at: datetime = strawberry.field(description="When it was measured.")
    observed_date: date = strawberry.field(description="The day it was measured.")

    def _observed_display(self) -> str:
        return format_date(self.facts.observed_at) or ""
    observed_display: str = strawberry.field(resolver=_observed_display, description="'2026-03-05'.")

    evidence: Evidence = strawberry.field(
        description="Where the figure comes from: measured (a registered KernelIndex fleet worker measured it) or reported "
        "(anything else: a record from submitRuns or `ingest runs` is reported whatever its own evidence says)."
    )
    claimed_evidence: Evidence | None = strawberry.field(
        description="The source's claim, where a record from outside the fleet said MEASURED: kept and shown as its "
        "claim, not as evidence (the run is REPORTED). Null otherwise."
    )

    def _trust_label(self) -> str:
        return trust.trust_label(self.facts.evidence, self.facts.implementation)
    trust_label: str = strawberry.field(
        resolver=_trust_label,
        description="'Reported · MIT · source': evidence, licence, source availability.",
    )

    async def _trust_level(self, info: strawberry.Info[Context, None]) -> TrustLevel:
        facts = self.facts
        subject = (facts.workload_revision_id, facts.configuration_key, facts.implementation.id, facts.environment.hardware.id)
        measured = await info.context.loaders.subject_measurements.load(subject)
        return of_rules(TrustLevel, trust_ladder.trust_level(facts, measured).word)
    trust_level: TrustLevel = strawberry.field(
        resolver=_trust_level,
        description="trust-v2 ladder: REPLICATED (measured by registered KernelIndex fleet workers on two machines of the "
        "same SKU, agreeing), VERIFIED (measured by a registered KernelIndex fleet worker, correctness checked), "
        "REPRODUCIBLE or REPORTED. Set by the rules from how the run was measured, never by whoever submitted it: "
        "records from submitRuns or `ingest runs` are never above REPRODUCIBLE.",
    )

    def _stale(self, info: strawberry.Info[Context, None]) -> bool:
        return trust.is_stale(self.facts.observed_at, info.context.now)
    stale: bool = strawberry.field(resolver=_stale, description="Observed more than 180 days before now.")

    superseded: bool = strawberry.field(description="Superseded by a newer figure for the same natural key.")
    retracted: bool = strawberry.field(description="Retracted by an operator.")

    async def _flags(self, info: strawberry.Info[Context, None]) -> list[RunFlag]:
        holds = await info.context.loaders.holds_by_run_id.load(self.facts.id)
        return [RunFlag.of(f) for f in holds.flags]
    flags: list[RunFlag] = strawberry.field(
        resolver=_flags,
        description="Plausibility flags (faster than its floor, >10× faster than the baseline) with their reasons: at most one per flag code. Every stored flag is listed; reviewStatus and reviewState weigh those plausibility-v2 still holds for (none on the source's baseline, no below_floor on a run whose correctness check passed).",
    )

    async def _review_status(self, info: strawberry.Info[Context, None]) -> str | None:
        return (await info.context.loaders.holds_by_run_id.load(self.facts.id)).status_words
    review_status: str | None = strawberry.field(
        resolver=_review_status,
        description="reviewState in words, e.g. 'suspicious: needs review'; null when unflagged.",
    )

    async def _review_state(self, info: strawberry.Info[Context, None]) -> ReviewState | None:
        holds = await info.context.loaders.holds_by_run_id.load(self.facts.id)
        if not holds.holding:  # a stored flag plausibility-v2 no longer holds for (a baseline's v1 below_floor) asks no review
            return None
        review = plausibility.latest_review(holds.reviews, self.facts.id)
        return ReviewState.NEEDS_REVIEW if review is None else of_rules(ReviewState, review.decision)
    review_state: ReviewState | None = strawberry.field(
        resolver=_review_state,
        description="Where a flagged run stands in review (the latest review decides); null when unflagged.",
    )

    def _caveats(self) -> list[str]:
        return trust.caveats(self.facts)
    caveats: list[str] = strawberry.field(resolver=_caveats, description="Fixed caveats: baseline, reported figure.")
