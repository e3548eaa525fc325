"""compare-v1 as API types: runs set side by side field by field, with a winner only inside one cohort."""

from __future__ import annotations

import strawberry

from kernelindex.graphql.enums import CompareField, of_rules
from kernelindex.graphql.types.run import Run
from kernelindex.rules import compare as compare_rules
from kernelindex.rules.facts import RunFacts


@strawberry.type(description="One field compared across runs.")
class FieldDifference:
    diff: strawberry.Private[compare_rules.FieldDiff]

    @strawberry.field(description="The field compared.")
    def field(self) -> CompareField:
        return of_rules(CompareField, self.diff.field)

    @strawberry.field(description="Its label in words.")
    def label(self) -> str:
        return self.diff.label

    @strawberry.field(description="The value for each run, in the order asked, as text (display-v1): null where that "
                                  "run does not record it (e.g. no Triton version stated); bindings as 'batch_size=2' "
                                  "(axes by name, comma-separated; 'no bindings' when none).")
    def values(self) -> list[str | None]:
        return list(self.diff.texts)

    @strawberry.field(description="Whether the runs differ on it.")
    def differs(self) -> bool:
        return self.diff.differs


@strawberry.type(description="compare-v1: field-by-field differences of 2 to 8 runs, and a winner only when all are in one cohort.")
class RunComparison:
    result: strawberry.Private[compare_rules.Comparison]
    runs_by_id: strawberry.Private[dict[int, RunFacts]]

    @strawberry.field(description="The runs compared, in the order asked.")
    def runs(self) -> list[Run]:
        return [Run(facts=self.runs_by_id[i]) for i in self.result.run_ids]

    @strawberry.field(description="Every field compared.")
    def fields(self) -> list[FieldDifference]:
        return [FieldDifference(diff=d) for d in self.result.fields]

    @strawberry.field(description="Only the fields that differ.")
    def differences(self) -> list[FieldDifference]:
        return [FieldDifference(diff=d) for d in self.result.differences]

    @strawberry.field(description="Whether all runs are in one cohort (same workload revision, configuration, protocol, environment).")
    def comparable(self) -> bool:
        return self.result.comparable

    @strawberry.field(description="The fastest run, only when comparable.")
    def winner(self) -> Run | None:
        return Run(facts=self.result.winner) if self.result.winner is not None else None

    @strawberry.field(description="The first difference that makes them incomparable, in words.")
    def incomparable_because(self) -> str | None:
        return self.result.incomparable_because
