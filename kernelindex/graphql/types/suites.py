"""A suite and a source as the index holds them (kernelindex.services.suites)."""

from __future__ import annotations

from datetime import date

import strawberry

from kernelindex.rules.suites import suite_title
from kernelindex.services.suites import SourceOverview, SuiteOverview


@strawberry.type(description="A suite of workloads the index holds (KernelBench, Liger-Kernel, FlashInfer-Bench, …).")
class Suite:
    name: str = strawberry.field(description="The name workloads are stored under, e.g. 'kernelbench': workloads(suite:) takes it.")
    title: str = strawberry.field(description="'KernelBench'.")
    workload_count: int = strawberry.field(description="Workloads of the suite, in any snapshot.")
    workloads_in_latest_snapshot: int = strawberry.field(description="Workloads its latest complete snapshot holds.")
    run_count: int = strawberry.field(description="Live runs of its workloads (not superseded, not retracted), of every metric.")
    eligible_run_count: int = strawberry.field(description="Runs that count towards its workloads' headline records (eligibility-v3: canonical configuration, latency), summed.")
    latest_revision: str | None = strawberry.field(description="The upstream revision of its latest complete snapshot.")
    latest_revision_date: date | None = strawberry.field(description="The date of that snapshot.")
    families: list[str] = strawberry.field(description="The operation families its workloads state (none for KernelBench).")

    @staticmethod
    def of(o: SuiteOverview) -> Suite:
        return Suite(
            name=o.suite, title=suite_title(o.suite), workload_count=o.workload_count,
            workloads_in_latest_snapshot=o.workloads_in_latest_snapshot, run_count=o.run_count,
            eligible_run_count=o.eligible_run_count, latest_revision=o.latest_revision,
            latest_revision_date=o.latest_revision_date, families=list(o.families),
        )


@strawberry.type(description="A source of figures (a suite's own timings, a leaderboard, a benchmark's results) with its terms.")
class SourceSummary:
    key: str | None = strawberry.field(description="The source's own key, e.g. 'gpumode-kernelbot' (null for a source named only by records).")
    name: str = strawberry.field(description="'GPU MODE KernelBot'.")
    kind: str | None = strawberry.field(description="As the source states it: 'leaderboard', 'benchmark', …")
    url: str | None = strawberry.field(description="Where its data is published.")
    licence: str | None = strawberry.field(description="The licence of its data.")
    terms: str | None = strawberry.field(description="Its terms of use, as stated.")
    attribution: str | None = strawberry.field(description="The attribution it asks for.")
    run_count: int = strawberry.field(description="Live runs from it, through any route.")
    snapshot_count: int = strawberry.field(description="Snapshots of it the index holds (revisions, export files).")
    latest_revision: str | None = strawberry.field(description="Its newest snapshot's revision.")
    latest_revision_date: date | None = strawberry.field(description="Its newest snapshot's date.")
    latest_route: str | None = strawberry.field(description="The file its newest snapshot came through, where it came through another route.")

    @staticmethod
    def of(o: SourceOverview) -> SourceSummary:
        return SourceSummary(
            key=o.key, name=o.name, kind=o.kind, url=o.url, licence=o.licence, terms=o.terms, attribution=o.attribution,
            run_count=o.run_count, snapshot_count=o.snapshot_count, latest_revision=o.latest_revision,
            latest_revision_date=o.latest_revision_date, latest_route=o.latest_route,
        )
