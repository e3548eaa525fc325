"""Workload revisions: which upstream file a run measured (revisions-v1)."""

from __future__ import annotations

from datetime import date
from typing import Annotated

import strawberry

from kernelindex.graphql.context import Context
from kernelindex.graphql.node import Node, to_global_id
from kernelindex.graphql.pagination import LIST_DEFAULT, first_of
from kernelindex.services.revisions import RevisionFacts, SnapshotFacts


@strawberry.type(description="A suite at one upstream revision (e.g. a KernelBench commit).")
class SuiteSnapshot:
    facts: strawberry.Private[SnapshotFacts]

    @strawberry.field(description="Suite, e.g. 'kernelbench'.")
    def suite(self) -> str:
        return self.facts.suite

    @strawberry.field(description="Upstream revision, e.g. a git commit.")
    def upstream_revision(self) -> str:
        return self.facts.upstream_revision

    @strawberry.field(description="Date of the upstream revision.")
    def revision_date(self) -> date | None:
        return self.facts.revision_date

    @strawberry.field(description="True when the whole suite was read at this revision (a checkout import); false for a partial one (the seed).")
    def complete(self) -> bool:
        return self.facts.complete


@strawberry.type(description="One version of a workload's reference source, identified by the sha256 of the upstream file.")
class WorkloadRevision(Node):
    facts: strawberry.Private[RevisionFacts]

    @strawberry.field(description="Opaque global ID.")
    def id(self) -> strawberry.ID:
        return to_global_id("WorkloadRevision", self.facts.id)

    @strawberry.field(description="Database id (stable, for scripts).")
    def database_id(self) -> int:
        return self.facts.id

    @strawberry.field(description="sha256 of the upstream file's bytes: the revision's identity.")
    def sha256(self) -> str:
        return self.facts.source_sha256

    @strawberry.field(description="Size of the upstream file in bytes, when known.")
    def source_size(self) -> int | None:
        return self.facts.source_size

    @strawberry.field(description="File name upstream, e.g. '9_ResNet18.py'.")
    def source_filename(self) -> str | None:
        return self.facts.source_filename

    @strawberry.field(description="True while the stored source is our own module standing in for the upstream file (the seed's).")
    def stand_in(self) -> bool:
        return self.facts.stand_in

    @strawberry.field(description="The workload's current revision: the one in the latest upstream snapshot. Only its runs count for records.")
    def current(self) -> bool:
        return self.facts.current

    @strawberry.field(description="The upstream revision of the first snapshot holding this revision.")
    def upstream_revision(self) -> str | None:
        return self.facts.snapshots[0].upstream_revision if self.facts.snapshots else None

    @strawberry.field(description="The date of that upstream revision.")
    def revision_date(self) -> date | None:
        return self.facts.snapshots[0].revision_date if self.facts.snapshots else None

    @strawberry.field(description="Every upstream snapshot holding this revision, oldest first. A capped list: the first `first` of them (at most 100).")
    def snapshots(
        self, info: strawberry.Info[Context, None],
        first: Annotated[int, strawberry.argument(description="How many, at most (1 to 100; default 100).")] = LIST_DEFAULT,
    ) -> list[SuiteSnapshot]:
        return [SuiteSnapshot(facts=s) for s in first_of(self.facts.snapshots, first, info.context.settings.max_page_size)]
