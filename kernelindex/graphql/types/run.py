"""Runs: one measurement each, with the facts that make it traceable."""

from __future__ import annotations

from datetime import date, datetime

import strawberry

from kernelindex.graphql.context import Context
from kernelindex.graphql.cost import cost_weight
from kernelindex.graphql.node import Node, to_global_id
from kernelindex.graphql.text import MAX_SAMPLES_SHOWN, SAMPLES_KIB, SHORT_TEXT_KIB, short_text
from kernelindex.graphql.types.catalogue import Environment, Implementation, Protocol, Source
from kernelindex.graphql.types.holds import RunFlag
from kernelindex.graphql.types.revision import WorkloadRevision
from kernelindex.rules import stats, trust_ladder
from kernelindex.rules import trust_labels as trust
from kernelindex.rules.display import format_date, format_latency, plus_minus_display
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
    facts: strawberry.Private[RunFacts]

    @strawberry.field(description="Opaque global ID.")
    def id(self) -> strawberry.ID:
        return to_global_id("Run", self.facts.id)

    @strawberry.field(description="Database id (stable, for scripts).")
    def database_id(self) -> int:
        return self.facts.id

    @strawberry.field(description="Slug of the workload measured.")
    async def workload_slug(self, info: strawberry.Info[Context, None]) -> str:
        workload = await info.context.loaders.workload_by_id.load(self.facts.workload_id)
        assert workload is not None  # a run's workload is never deleted (foreign key)
        return workload.slug

    @strawberry.field(description="The revision of the workload's reference source it measured (revisions-v1): its digest, upstream snapshot and whether it is current.")
    async def revision(self, info: strawberry.Info[Context, None]) -> WorkloadRevision:
        facts = await info.context.loaders.revision_by_id.load(self.facts.workload_revision_id)
        assert facts is not None  # a run's revision is never deleted (foreign key)
        return WorkloadRevision(facts=facts)

    @strawberry.field(description="The configuration measured.")
    def configuration(self) -> Configuration:
        return Configuration.of(self.facts.bindings, self.facts.dtype)

    @strawberry.field(description="The implementation measured.")
    def implementation(self) -> Implementation:
        return Implementation(facts=self.facts.implementation)

    @strawberry.field(description="Where it was measured.")
    def environment(self) -> Environment:
        return Environment(facts=self.facts.environment)

    @strawberry.field(description="How it was timed.")
    def protocol(self) -> Protocol:
        return Protocol(facts=self.facts.protocol)

    @strawberry.field(description="Who reported or measured it, at which revision.")
    def source(self) -> Source:
        return Source(facts=self.facts.source)

    @strawberry.field(description="'passed' or 'failed'.")
    def status(self) -> str:
        return self.facts.status

    @strawberry.field(description="Why a failed run failed (at most 2 KiB; longer text is cut, with a marker).",
                      metadata=cost_weight(SHORT_TEXT_KIB))
    def failure_reason(self) -> str | None:
        return short_text(self.facts.failure_reason)

    @strawberry.field(description="Mean latency in milliseconds.")
    def mean_ms(self) -> float | None:
        return self.facts.mean_ms

    @strawberry.field(description="Standard deviation of the trials in milliseconds.")
    def std_ms(self) -> float | None:
        return self.facts.std_ms

    @strawberry.field(description="Fastest trial in milliseconds.")
    def min_ms(self) -> float | None:
        return self.facts.min_ms

    @strawberry.field(description="Slowest trial in milliseconds.")
    def max_ms(self) -> float | None:
        return self.facts.max_ms

    @strawberry.field(description="Median trial in milliseconds, when reported.")
    def median_ms(self) -> float | None:
        return self.facts.median_ms

    @strawberry.field(description="5th percentile in milliseconds, when reported.")
    def p5_ms(self) -> float | None:
        return self.facts.p5_ms

    @strawberry.field(description="95th percentile in milliseconds, when reported.")
    def p95_ms(self) -> float | None:
        return self.facts.p95_ms

    @strawberry.field(description="Number of timed trials.")
    def num_trials(self) -> int | None:
        return self.facts.num_trials

    @strawberry.field(description="Raw per-trial latencies in milliseconds, when stored: the first 1,000 (numTrials says how many there are; the interval uses them all).",
                      metadata=cost_weight(SAMPLES_KIB))
    def samples_ms(self) -> list[float] | None:
        return list(self.facts.samples_ms[:MAX_SAMPLES_SHOWN]) if self.facts.samples_ms else None

    @strawberry.field(description="Compile time (first call) in milliseconds, apart from the latency.")
    def compile_time_ms(self) -> float | None:
        return self.facts.compile_time_ms

    @strawberry.field(description="Half width of the 95% confidence interval of the mean (t·std/√n, Student's t for n−1 degrees of freedom), in milliseconds; null for one trial.")
    def ci_half_width_ms(self) -> float | None:
        return stats.ci95_half_width(self.facts.std_ms, self.facts.num_trials)

    @strawberry.field(description="'1.39 ms'.")
    def latency_display(self) -> str | None:
        return format_latency(self.facts.mean_ms) if self.facts.mean_ms else None

    @strawberry.field(description="'± 0.02' (ms, to the latency's decimals).")
    def plus_minus_display(self) -> str | None:
        if not self.facts.mean_ms:
            return None
        return plus_minus_display(self.facts.std_ms, self.facts.num_trials, self.facts.mean_ms)

    @strawberry.field(description="'mean of 100'.")
    def statistic_display(self) -> str | None:
        if self.facts.num_trials is None:
            return None
        return f"{self.facts.protocol.statistic} of {self.facts.num_trials}"

    @strawberry.field(description="When it was measured.")
    def observed_at(self) -> datetime:
        return self.facts.observed_at

    @strawberry.field(description="The day it was measured.")
    def observed_date(self) -> date:
        return self.facts.observed_at.date()

    @strawberry.field(description="'2026-03-05'.")
    def observed_display(self) -> str:
        return format_date(self.facts.observed_at) or ""

    @strawberry.field(description="'reported' (a source published it) or 'measured' (a KernelIndex runner measured it).")
    def evidence(self) -> str:
        return self.facts.evidence

    @strawberry.field(description="'Reported · MIT · source': evidence, licence, source availability.")
    def trust_label(self) -> str:
        return trust.trust_label(self.facts.evidence, self.facts.implementation)

    @strawberry.field(
        description="trust-v2 ladder: 'Replicated' (measured by KernelIndex on two machines of the same SKU, agreeing), "
        "'Verified' (measured by a KernelIndex worker, correctness checked), 'Reproducible' or 'Reported'. Set by the rules "
        "from how the run was measured, never by whoever submitted it."
    )
    async def trust_level(self, info: strawberry.Info[Context, None]) -> str:
        facts = self.facts
        subject = (facts.workload_revision_id, facts.configuration_key, facts.implementation.id, facts.environment.hardware.id)
        measured = await info.context.loaders.subject_measurements.load(subject)
        return trust_ladder.trust_level(facts, measured).word

    @strawberry.field(description="Observed more than 180 days before now.")
    def stale(self, info: strawberry.Info[Context, None]) -> bool:
        return trust.is_stale(self.facts.observed_at, info.context.now)

    @strawberry.field(description="Superseded by a newer figure for the same natural key.")
    def superseded(self) -> bool:
        return self.facts.superseded

    @strawberry.field(description="Retracted by an operator.")
    def retracted(self) -> bool:
        return self.facts.retracted

    @strawberry.field(description="plausibility-v1 flags (faster than its floor, >10× faster than the baseline) with their reasons: at most one per flag code.")
    async def flags(self, info: strawberry.Info[Context, None]) -> list[RunFlag]:
        holds = await info.context.loaders.holds_by_run_id.load(self.facts.id)
        return [RunFlag.of(f) for f in holds.flags]

    @strawberry.field(description="'suspicious: needs review', 'approved after review', 'rejected after review', or null when unflagged.")
    async def review_status(self, info: strawberry.Info[Context, None]) -> str | None:
        return (await info.context.loaders.holds_by_run_id.load(self.facts.id)).status_words

    @strawberry.field(description="Fixed caveats: baseline, reported figure.")
    def caveats(self) -> list[str]:
        return trust.caveats(self.facts)
