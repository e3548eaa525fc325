"""Records: the fastest eligible run of each environment (cohort)."""

from __future__ import annotations

import strawberry

from kernelindex.graphql.types.catalogue import Environment, Implementation
from kernelindex.graphql.types.run import Run
from kernelindex.rules import ranking
from kernelindex.rules.display import format_latency


@strawberry.type(description="The record of one environment (cohort): its fastest eligible run.")
class EnvironmentRecord:
    record: strawberry.Private[ranking.CohortRecord]

    # Written by hand (as the catalogue types are): what a list shows of each record is plain fields,
    # filled once (a list of 100 workloads resolves some 1,000 records); the run and its environment,
    # which cost more to build and are rarely asked for here, stay resolvers.
    def __init__(self, record: ranking.CohortRecord) -> None:
        self.record = record
        self.label = record.environment_label
        self.latency_ms = record.run.latency_ms
        self.latency_display = format_latency(record.run.latency_ms)
        self.implementation = Implementation(facts=record.run.implementation)
        self.run_count = record.run_count

    label: str = strawberry.field(
        description="'NVIDIA H100 · env 1': family, with env N when the family repeats (N by record latency).")

    @strawberry.field(description="The environment.")
    def environment(self) -> Environment:
        return Environment(facts=self.record.run.environment)

    @strawberry.field(description="The record run.")
    def run(self) -> Run:
        return Run(facts=self.record.run)

    latency_ms: float = strawberry.field(description="Record latency in milliseconds.")
    latency_display: str = strawberry.field(description="'1.39 ms'.")
    implementation: Implementation = strawberry.field(description="The record holder.")
    run_count: int = strawberry.field(description="Eligible runs in this environment's cohort.")
