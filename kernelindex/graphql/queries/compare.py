"""compare-v1: runs set side by side, field by field."""

from __future__ import annotations

from typing import Annotated

import strawberry

from kernelindex.db.models import Run as RunRow
from kernelindex.graphql.context import Context
from kernelindex.graphql.errors import UserInputError
from kernelindex.graphql.node import from_global_id
from kernelindex.graphql.types.compare import RunComparison
from kernelindex.rules.compare import MAX_RUNS, MIN_RUNS, compare_runs
from kernelindex.services.facts import FactsBuilder, run_rows_statement


@strawberry.type
class CompareQueries:
    @strawberry.field(description="Compare 2 to 8 runs field by field; a winner only when all are in one cohort.")
    async def compare_runs(
        self, info: strawberry.Info[Context, None],
        ids: Annotated[list[strawberry.ID], strawberry.argument(description="2 to 8 Run IDs, in the order to compare them.")],
    ) -> RunComparison:
        if not MIN_RUNS <= len(ids) <= MAX_RUNS:
            raise UserInputError(f"compareRuns takes {MIN_RUNS} to {MAX_RUNS} run IDs, got {len(ids)}")
        database_ids = []
        for global_id in ids:
            type_name, database_id = from_global_id(global_id)
            if type_name != "Run":
                raise UserInputError(f"compareRuns takes Run IDs; {global_id[:40]!r} is a {type_name} ID")
            database_ids.append(database_id)
        builder = FactsBuilder()
        rows = (await info.context.session.execute(run_rows_statement().where(RunRow.id.in_(database_ids)))).all()
        facts = {row[0].id: builder.run(*row) for row in rows}
        missing = [g for g, d in zip(ids, database_ids) if d not in facts]
        if missing:
            raise UserInputError(f"no run with ID {missing[0][:40]!r}")
        return RunComparison(result=compare_runs([facts[d] for d in database_ids]), runs_by_id=facts)
