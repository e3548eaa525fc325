"""Records: the fastest eligible run of each environment (cohort)."""

from __future__ import annotations

import strawberry

from kernelindex.graphql.enums import FigureUnit, Metric, of_rules
from kernelindex.graphql.types.catalogue import Environment, Hardware, Implementation, implementation_of
from kernelindex.graphql.types.run import Configuration, Run
from kernelindex.rules import ranking
from kernelindex.rules.display import format_figure, format_latency
from kernelindex.rules.eligibility import HEADLINE_METRIC
from kernelindex.rules.facts import HardwareFacts
from kernelindex.rules.identity import read_configuration_key
from kernelindex.services.pages import ScopeSummary


@strawberry.type(description="The record of one environment (cohort): its fastest eligible run.")
class EnvironmentRecord:
    record: strawberry.Private[ranking.CohortRecord]

    # Written by hand (as the catalogue types are): what a list shows of each record is plain fields,
    # filled once (a list of 100 workloads resolves some 700 records; its implementation is shared,
    # catalogue.implementation_of); the formatted figures and enum members, and the run and its
    # environment, are resolvers, computed only when selected.
    def __init__(self, record: ranking.CohortRecord) -> None:
        self.record = record
        self.label = record.environment_label
        run = record.run
        self.latency_ms = run.latency_ms if run.protocol.metric == HEADLINE_METRIC else None
        self.implementation = implementation_of(run.implementation)
        self.run_count = record.run_count

    label: str = strawberry.field(
        description="'NVIDIA H100 · env 1': family, with env N when the family repeats (N by record latency).")

    @strawberry.field(description="The environment.")
    def environment(self) -> Environment:
        return Environment(facts=self.record.run.environment)

    @strawberry.field(description="The record run.")
    def run(self) -> Run:
        return Run(facts=self.record.run)

    latency_ms: float | None = strawberry.field(
        description="Record latency in milliseconds; null for a record of another metric (recordsAt(metric:)): see figure.")

    def _latency_display(self) -> str | None:
        run = self.record.run
        return format_latency(run.latency_ms) if run.protocol.metric == HEADLINE_METRIC else None
    latency_display: str | None = strawberry.field(
        resolver=_latency_display, description="'1.39 ms'; null for a record of another metric.")

    def _metric(self) -> Metric:
        return of_rules(Metric, self.record.run.protocol.metric)
    metric: Metric = strawberry.field(
        resolver=_metric, description="What the record's figure is: latency (the headline records), peak memory or a source's score.")

    def _figure(self) -> float:
        return ranking.figure_of(self.record.run)
    figure: float = strawberry.field(
        resolver=_figure, description="The record's headline figure in figureUnit (lower is better for every metric).")

    def _figure_unit(self) -> FigureUnit:
        return of_rules(FigureUnit, self.record.run.protocol.unit)
    figure_unit: FigureUnit = strawberry.field(resolver=_figure_unit, description="The unit of figure.")

    def _figure_display(self) -> str:
        return format_figure(ranking.figure_of(self.record.run), self.record.run.protocol.unit)
    figure_display: str = strawberry.field(resolver=_figure_display, description="'1.39 ms', '1,234.5 MB', '1.005e-05 s'.")

    implementation: Implementation = strawberry.field(description="The record holder.")
    run_count: int = strawberry.field(description="Eligible runs in this environment's cohort.")


@strawberry.type(description="A configuration and metric of the current revision that holds records (eligibility-v3): "
                             "the canonical configuration's latencies are the workload's own records; every other "
                             "configuration (a FlashInfer-Bench case, a Liger-Kernel x value) and metric (peak memory, a "
                             "source's score) has records of its own, compared only with its like.")
class RecordConfiguration:
    summary: strawberry.Private[ScopeSummary]
    hardware_facts: strawberry.Private[list[HardwareFacts]]

    @strawberry.field(description="The configuration's key: pass it as Workload.recordsAt(configuration:).")
    def key(self) -> str:
        return self.summary.configuration_key

    @strawberry.field(description="The axis bindings and dtype.")
    def configuration(self) -> Configuration:
        stated = read_configuration_key(self.summary.configuration_key)
        return Configuration.of(stated.bindings, stated.dtype)

    @strawberry.field(description="The source's own id of the case, where the bindings and dtype alone do not tell it from another of the workload's cases (a suite of cases measured as one figure); null otherwise.")
    def case_key(self) -> str | None:
        return read_configuration_key(self.summary.configuration_key).case

    @strawberry.field(description="Whether it is the canonical configuration (the workload's headline records are there).")
    def canonical(self) -> bool:
        return self.summary.canonical

    @strawberry.field(description="The metric of these records.")
    def metric(self) -> Metric:
        return of_rules(Metric, self.summary.metric)

    @strawberry.field(description="Runs that count towards these records.")
    def eligible_run_count(self) -> int:
        return self.summary.run_count

    @strawberry.field(description="The hardware these records were measured on, in catalogue order (a short list: the SKUs of the catalogue).")
    def measured_on(self) -> list[Hardware]:
        return [Hardware(facts=h) for h in self.hardware_facts]
