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

    @strawberry.field(description="'NVIDIA H100 · env 1': family, with env N when the family repeats (N by record latency).")
    def label(self) -> str:
        return self.record.environment_label

    @strawberry.field(description="The environment.")
    def environment(self) -> Environment:
        return Environment(facts=self.record.run.environment)

    @strawberry.field(description="The record run.")
    def run(self) -> Run:
        return Run(facts=self.record.run)

    @strawberry.field(description="Record latency in milliseconds.")
    def latency_ms(self) -> float:
        return self.record.run.latency_ms

    @strawberry.field(description="'1.39 ms'.")
    def latency_display(self) -> str:
        return format_latency(self.record.run.latency_ms)

    @strawberry.field(description="The record holder.")
    def implementation(self) -> Implementation:
        return Implementation(facts=self.record.run.implementation)

    @strawberry.field(description="Eligible runs in this environment's cohort.")
    def run_count(self) -> int:
        return self.record.run_count
