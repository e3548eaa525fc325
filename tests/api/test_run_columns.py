"""The runs page reads plain columns (services.facts.run_columns_statement) where the rest of the
code reads entities (run_rows_statement): both must give every run the very same facts, and the Run
type's plain fields must be those facts."""

from __future__ import annotations

from sqlalchemy import text

from kernelindex.graphql.node import to_global_id
from kernelindex.graphql.types.run import Run
from kernelindex.services.facts import RUN_ID_COLUMN, FactsBuilder, run_columns_statement, run_rows_statement
from tests.api.helpers import synthetic_records, write_records

RESNET = "kernelbench-l3-p9-resnet18"


async def test_columns_and_entities_give_the_same_facts(db_url, session):
    await write_records(db_url, synthetic_records(12) + synthetic_records(4, RESNET, batch=4, start=100))
    # Values the seed has few of: a failed run with its reason, samples, correctness, a retraction.
    await session.execute(text("UPDATE runs SET status = 'failed', failure_reason = 'mismatch', mean_ms = NULL, figure = NULL, std_ms = NULL,"
                               " min_ms = NULL, max_ms = NULL WHERE id % 7 = 2"))
    await session.execute(text("UPDATE runs SET retracted_at = now() WHERE id % 11 = 3"))
    await session.execute(text("UPDATE runs SET samples_ms = ARRAY[min_ms, max_ms], num_trials = 2 WHERE id % 5 = 1 AND min_ms IS NOT NULL"))
    await session.execute(text("""UPDATE runs SET correctness = '{"passed": true}' WHERE id % 3 = 0"""))
    by_entities = {row[0].id: FactsBuilder().run(*row) for row in (await session.execute(run_rows_statement())).all()}
    shared = FactsBuilder()  # one builder for all rows: its shared dimensions must not mix them up
    rows = (await (await session.connection()).execute(run_columns_statement().order_by(RUN_ID_COLUMN))).all()
    by_columns = {facts.id: facts for facts in map(shared.run_of_columns, rows)}
    assert len(by_columns) == (await session.execute(text("SELECT count(*) FROM runs"))).scalar_one() > 20
    assert by_columns == by_entities
    kinds = {(f.status, f.retracted, f.samples_ms is not None, f.correctness_passed) for f in by_columns.values()}
    assert len(kinds) >= 4, kinds  # the data exercised the columns that differ
    assert len({f.environment.id for f in by_columns.values()}) > 1


async def test_plain_fields_are_the_facts(db_url, session):
    row = (await session.execute(run_rows_statement().limit(1))).one()
    facts = FactsBuilder().run(*row)
    run = Run(facts=facts)
    assert run.id == to_global_id("Run", facts.id) and run.database_id == facts.id
    for name in ("mean_ms", "std_ms", "min_ms", "max_ms", "median_ms", "p5_ms", "p95_ms", "num_trials",
                 "compile_time_ms", "observed_at", "superseded", "retracted"):
        assert getattr(run, name) == getattr(facts, name), name
    # the fixed sets as the schema's enums, from the rules' values
    assert (run.status.value, run.evidence.value) == (facts.status, facts.evidence)
    assert run.observed_date == facts.observed_at.date()
    assert (run.implementation.facts, run.environment.facts, run.protocol.facts, run.source.facts) == (
        facts.implementation, facts.environment, facts.protocol, facts.source)


async def test_kept_statements_do_not_mix_arguments(db_url, graphql):
    """queries.runs keeps built statements by their arguments: pages of two workloads, two sizes and
    a next page, asked in turn and again, each name their own runs."""
    await write_records(db_url, synthetic_records(12) + synthetic_records(12, "kernelbench-l3-p12-vgg19", batch=10))
    query = """query($w: String!, $first: Int!, $after: String) { runs(workload: $w, first: $first, after: $after, orderBy: FASTEST) {
      pageInfo { endCursor } nodes { databaseId workloadSlug } } }"""

    async def page(workload: str, first: int, after: str | None = None) -> tuple[list[int], str]:
        data = (await graphql(query, {"w": workload, "first": first, "after": after}))["runs"]
        assert {n["workloadSlug"] for n in data["nodes"]} == {workload}
        return [n["databaseId"] for n in data["nodes"]], data["pageInfo"]["endCursor"]

    answers = {}
    for _ in range(2):
        for workload in (RESNET, "kernelbench-l3-p12-vgg19"):
            for first in (3, 5):
                ids, end = await page(workload, first)
                following, _ = await page(workload, first, end)
                assert len(ids) == first and not set(ids) & set(following)
                answers.setdefault((workload, first), (ids, following))
                assert answers[(workload, first)] == (ids, following)
    assert answers[(RESNET, 5)][0][:3] == answers[(RESNET, 3)][0]
