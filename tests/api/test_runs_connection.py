"""Run connections choose their page on `runs` alone and count only when `totalCount` is asked for,
with the same rows, order and cursors as the statement they replaced (every run joined to its
dimensions, then filtered and sorted), which this file keeps as the reference."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import and_, extract, func, literal, or_, select, text

from kernelindex.db.models import Hardware, Implementation, Run, Workload
from kernelindex.graphql.enums import RunOrder
from kernelindex.graphql.node import to_global_id
from kernelindex.graphql.pagination import encode_cursor
from kernelindex.graphql.queries.runs import KEYS
from kernelindex.rules.trust_labels import STALE_AFTER_DAYS
from kernelindex.services.eligibility import eligible_run_clause
from kernelindex.services.facts import FactsBuilder, run_rows_statement
from tests.api.helpers import synthetic_records, write_records
from tests.conftest import FIXED_NOW

RESNET = "kernelbench-l3-p9-resnet18"
VGG = "kernelbench-l3-p12-vgg19"


# The reference: the statement and conditions Query.runs used before pages were chosen on `runs`
# alone (conditions over runs joined to implementations, environments and hardware; the total
# counted over the same join).
def _reference_conditions(args: dict, now) -> list:
    out = []
    if not args.get("includeSuperseded"):
        out.append(Run.superseded_at.is_(None))
    if "workload" in args:
        out.append(Run.workload_id.in_(select(Workload.id).where(Workload.slug == args["workload"])))
    if "implementation" in args:
        out.append(Implementation.slug == args["implementation"])
    if "hardware" in args:
        lowered = args["hardware"].lower()
        out.append(or_(func.lower(Hardware.sku) == lowered, func.lower(Hardware.family) == lowered))
    if "environment" in args:
        out.append(Run.environment_id == args["environment_db_id"])
    if "evidence" in args:
        out.append(Run.evidence == args["evidence"].lower())
    if "licence" in args:
        out.append(func.lower(Implementation.licence) == args["licence"].lower())
    if "status" in args:
        out.append(Run.status == args["status"].lower())
    if "stale" in args:
        cutoff = now - timedelta(days=STALE_AFTER_DAYS)
        out.append(Run.observed_at < cutoff if args["stale"] else Run.observed_at >= cutoff)
    if "observedSince" in args:
        out.append(Run.observed_at >= args["observed_since"])
    if args.get("eligibleOnly"):
        out.append(eligible_run_clause())
    return out


REFERENCE_ORDERS = {
    "NEWEST": lambda: (-Run.id,),
    "FASTEST": lambda: (func.coalesce(Run.figure, float("inf")), Run.id),  # the headline figure (migration 0016)
    "RECENTLY_OBSERVED": lambda: (-extract("epoch", Run.observed_at), -Run.id),
}


async def _reference(session, args: dict, order: str) -> tuple[list[tuple[int, str]], int]:
    """(run id, cursor) of every run the old statement listed, in its order, and its total."""
    where = and_(literal(True), *_reference_conditions(args, FIXED_NOW))
    rows = (await session.execute(run_rows_statement().where(where).order_by(*REFERENCE_ORDERS[order]()))).all()
    builder = FactsBuilder()
    kind = f"run:{order.lower()}"
    listed = [(row[0].id, encode_cursor(kind, KEYS[RunOrder[order]](builder.run(*row)))) for row in rows]
    count_from = run_rows_statement().with_only_columns(Run.id).where(where)
    total = (await session.execute(select(func.count()).select_from(count_from.subquery()))).scalar_one()
    return listed, total


QUERY = """query($first: Int!, $after: String, $workload: String, $implementation: String, $hardware: String,
  $environment: ID, $evidence: Evidence, $licence: String, $status: RunStatus, $stale: Boolean,
  $observedSince: DateTime, $eligibleOnly: Boolean! = false, $includeSuperseded: Boolean! = false, $orderBy: RunOrder!) {
  runs(first: $first, after: $after, workload: $workload, implementation: $implementation, hardware: $hardware,
       environment: $environment, evidence: $evidence, licence: $licence, status: $status, stale: $stale,
       observedSince: $observedSince, eligibleOnly: $eligibleOnly, includeSuperseded: $includeSuperseded, orderBy: $orderBy) {
    totalCount pageInfo { hasNextPage hasPreviousPage endCursor } edges { cursor node { databaseId } } } }"""


async def _walk(graphql, variables: dict, page_size: int) -> tuple[list[tuple[int, str]], set[int]]:
    """Every (run id, cursor) of the list, page after page; the totals each page gave."""
    listed, totals, after = [], set(), None
    while True:
        data = (await graphql(QUERY, {**variables, "first": page_size, "after": after}))["runs"]
        listed += [(e["node"]["databaseId"], e["cursor"]) for e in data["edges"]]
        totals.add(data["totalCount"])
        assert data["pageInfo"]["hasPreviousPage"] is (after is not None)
        if data["edges"]:
            assert data["pageInfo"]["endCursor"] == data["edges"][-1]["cursor"]
        if not data["pageInfo"]["hasNextPage"]:
            return listed, totals
        after = data["pageInfo"]["endCursor"]
        assert len(listed) < 10_000, "the list does not end"


@pytest.fixture
async def varied(db_url):
    """The seed plus runs of every kind a filter tells apart: failed (no mean), retracted,
    superseded, off the canonical configuration, on other hardware and implementations (another
    licence), measured and reported, observed long ago and lately, with tied means."""
    await write_records(db_url, synthetic_records(40) + synthetic_records(12, VGG, batch=10)
                        + synthetic_records(8, RESNET, batch=4, start=100))
    from kernelindex.db.engine import in_own_transaction

    async def vary(session):
        for statement in (
            "INSERT INTO implementations (slug, title, framework, language, runtime_id, role, licence, source_availability)"
            " VALUES ('apache_impl', 'Apache implementation', 'PyTorch', 'python', 'apache_impl', 'candidate', 'Apache-2.0', 'upstream')",
            "UPDATE runs SET implementation_id = (SELECT id FROM implementations WHERE slug = 'apache_impl') WHERE id % 5 = 1",
            "UPDATE environments SET hardware_id = (SELECT id FROM hardware WHERE sku = 'NVIDIA A100 SXM4 80GB')"
            " WHERE label LIKE 'pool-%' AND substr(label, 6)::int % 3 = 0",
            "UPDATE runs SET status = 'failed', failure_reason = 'mismatch', mean_ms = NULL, std_ms = NULL, min_ms = NULL,"
            " max_ms = NULL, figure = NULL WHERE id % 7 = 2",
            "UPDATE runs SET retracted_at = now(), retraction_reason = 'test' WHERE id % 11 = 3",
            "UPDATE runs SET superseded_at = now() WHERE id % 13 = 4",
            "UPDATE runs SET evidence = 'reported' WHERE id % 4 = 0",
            "UPDATE runs SET observed_at = timestamptz '2024-01-01' + (id * interval '9 days')",
            "UPDATE runs SET mean_ms = 1.5, figure = 1.5, min_ms = 1.4, max_ms = 1.6 WHERE status = 'passed' AND id % 6 = 5",  # ties, broken by id
        ):
            await session.execute(text(statement))

    await in_own_transaction(db_url, vary)
    return db_url


def _cases(environment_id: int) -> list[dict]:
    return [
        {},
        {"workload": RESNET},
        {"workload": RESNET, "eligibleOnly": True},
        {"workload": VGG, "eligibleOnly": True},
        {"workload": RESNET, "hardware": "NVIDIA H200", "eligibleOnly": True},  # known names, no runs: an empty list
        {"eligibleOnly": True},
        {"workload": RESNET, "includeSuperseded": True},
        {"implementation": "apache_impl"},
        {"licence": "apache-2.0"},
        {"licence": "MIT", "workload": RESNET, "eligibleOnly": True},
        {"hardware": "NVIDIA A100"},
        {"hardware": "nvidia h100 sxm5 80gb", "status": "PASSED"},
        {"environment": to_global_id("Environment", environment_id), "environment_db_id": environment_id},
        {"evidence": "MEASURED", "workload": RESNET},
        {"status": "FAILED"},
        {"stale": True},
        {"stale": False, "eligibleOnly": True},
        {"observedSince": "2024-09-01T00:00:00Z", "workload": RESNET},
        {"workload": RESNET, "eligibleOnly": True, "includeSuperseded": True, "hardware": "NVIDIA H100"},
    ]


@pytest.mark.parametrize("order", ["FASTEST", "NEWEST", "RECENTLY_OBSERVED"])
async def test_pages_match_the_joined_statement(varied, graphql, session, order):
    environment_id = (await session.execute(text("SELECT environment_id FROM runs WHERE id % 5 = 2 ORDER BY id LIMIT 1"))).scalar_one()
    sizes = []
    for case in _cases(environment_id):
        args = dict(case)
        if "observedSince" in args:
            from datetime import datetime

            args["observed_since"] = datetime.fromisoformat(args["observedSince"].replace("Z", "+00:00"))
        expected, total = await _reference(session, args, order)
        variables = {k: v for k, v in case.items() if k != "environment_db_id"} | {"orderBy": order}
        for page_size in (3, 100):
            listed, totals = await _walk(graphql, variables, page_size)
            assert listed == expected, (case, order, page_size)
            assert totals == {total}, (case, order, page_size)
        sizes.append(len(expected))
    # The data must exercise the filters: one list of every run, one empty, and most of them in
    # between, each its own size.
    assert sizes[0] == max(sizes) > 60 and 0 in sizes
    assert len(set(sizes)) >= 12, sizes


async def test_workload_runs_match_the_joined_statement(varied, graphql, session):
    query = """query($slug: String!, $after: String, $orderBy: RunOrder!) { workload(slug: $slug) {
      runs(first: 7, after: $after, orderBy: $orderBy) { totalCount pageInfo { hasNextPage endCursor } edges { cursor node { databaseId } } } } }"""
    for order in ("FASTEST", "NEWEST", "RECENTLY_OBSERVED"):
        expected, total = await _reference(session, {"workload": RESNET}, order)
        listed, after = [], None
        while True:
            data = (await graphql(query, {"slug": RESNET, "after": after, "orderBy": order}))["workload"]["runs"]
            assert data["totalCount"] == total
            listed += [(e["node"]["databaseId"], e["cursor"]) for e in data["edges"]]
            if not data["pageInfo"]["hasNextPage"]:
                break
            after = data["pageInfo"]["endCursor"]
        assert listed == expected
        assert len(expected) > 40


@pytest.fixture
def captured_sql(app):
    """The SQL statements the app sends while the block runs."""
    from contextlib import contextmanager

    from sqlalchemy import event

    @contextmanager
    def capture():
        statements: list[str] = []

        def before(conn, cursor, statement, parameters, context, executemany):
            statements.append(statement)

        event.listen(app.state.engine.sync_engine, "before_cursor_execute", before)
        try:
            yield statements
        finally:
            event.remove(app.state.engine.sync_engine, "before_cursor_execute", before)

    return capture


def _run_statements(statements: list[str]) -> list[str]:
    """The statements that read runs (not the response cache's data_version / change_log reads)."""
    return [s for s in statements if " runs" in s and "change_log" not in s]


PAGE = '{ runs(workload: "%s", first: 16, orderBy: FASTEST, eligibleOnly: true) { %s edges { cursor node { id meanMs implementation { slug } environment { hardware { sku } } source { name } } } } }'
WORKLOAD_PAGE = '{ workload(slug: "%s") { runs(first: 5) { %s nodes { id meanMs } } } }'


@pytest.mark.parametrize("query", [PAGE, WORKLOAD_PAGE])
async def test_count_only_when_total_count_is_asked_for(varied, app, graphql, captured_sql, query):
    with captured_sql() as without:
        plain = await graphql(query % (RESNET, ""))
    with captured_sql() as with_total:
        counted = await graphql(query % (VGG, "totalCount"))  # another workload: not a cached answer
    with captured_sql() as aliased:
        await graphql(query % (RESNET, "a: totalCount b: totalCount"))
    assert plain and counted
    assert not [s for s in without if "count(" in s.lower()], without
    # One statement reads the page, the count is one more, and asked for twice it is counted once.
    assert len(_run_statements(without)) == 1, without
    assert len([s for s in with_total if "count(" in s.lower()]) == 1, with_total
    assert len(_run_statements(with_total)) == 2
    assert len([s for s in aliased if "count(" in s.lower()]) == 1, aliased


async def test_page_statement_is_constant_and_chosen_before_the_join(varied, db_url, graphql, captured_sql):
    """However many runs the workload has, one statement, and its page is cut on `runs` alone,
    where ix_runs_fastest can serve it: first + 1 index entries in order, no sort. (On this small
    table a scan and a sort are cheaper and are chosen; they are turned off to show the index fits
    the statement: its expression and its predicate. perf/runs_connection.py measures the real choice.)"""
    query = PAGE % (RESNET, "")
    with captured_sql() as before:
        await graphql(query)
    await write_records(db_url, synthetic_records(200, start=1000))
    with captured_sql() as after:
        data = await graphql(query)
    assert len(_run_statements(before)) == len(_run_statements(after)) == 1
    assert len(data["runs"]["edges"]) == 16

    from kernelindex.db.engine import in_own_transaction

    statement = _run_statements(after)[0]

    async def plan(session):
        # The page subquery of that statement, with its values written in.
        from sqlalchemy.dialects import postgresql

        from kernelindex.graphql.queries.runs import ORDERS
        from kernelindex.services.run_filters import RunFilters

        conditions = RunFilters(workload=RESNET, eligible_only=True).conditions(FIXED_NOW)
        order = ORDERS[RunOrder.FASTEST]()
        page = select(Run.id).where(*conditions).order_by(*order).limit(17)
        sql = str(page.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))
        # Fresh statistics, and only plans that read the page in order: on a few hundred runs a scan
        # and a sort are cheaper, and which one wins flipped with when autovacuum last analyzed.
        await session.execute(text("ANALYZE runs"))
        for plan_kind in ("seqscan", "bitmapscan", "sort"):
            await session.execute(text(f"SET LOCAL enable_{plan_kind} = off"))
        return [r[0] for r in (await session.execute(text("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) " + sql))).all()]

    lines = await in_own_transaction(db_url, plan)
    assert "ix_runs_fastest" in "\n".join(lines), "\n".join(lines)
    # The index gives the order: no Sort above its scan (a review's look-up, per held run, sorts its own few rows).
    above_scan = lines[:next(i for i, line in enumerate(lines) if "ix_runs_fastest" in line)]
    assert not any("Sort" in line for line in above_scan), lines
    scans = [line for line in lines if "ix_runs_fastest" in line]
    assert any("rows=17" in line for line in scans), lines
    assert "page" in statement and "LIMIT" in statement.upper()


async def test_cursor_of_another_order_is_refused(varied, graphql):
    first = (await graphql(QUERY, {"first": 2, "orderBy": "NEWEST"}))["runs"]["pageInfo"]["endCursor"]
    body = await graphql(QUERY, {"first": 2, "after": first, "orderBy": "FASTEST"}, expect_errors=True)
    assert "does not belong to this list and order" in body["errors"][0]["message"]


async def test_index_is_the_models_and_matches_the_order(session):
    """Migration 0009 built the index the model declares, on the very expression ORDERS sorts by."""
    from sqlalchemy.dialects import postgresql
    from sqlalchemy.schema import CreateIndex

    from kernelindex.graphql.queries.runs import ORDERS

    migrated = (await session.execute(text("SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_runs_fastest'"))).scalar_one()
    [model] = [i for i in Run.__table__.indexes if i.name == "ix_runs_fastest"]
    declared = str(CreateIndex(model).compile(dialect=postgresql.dialect()))
    # Built again from the model's own DDL, PostgreSQL writes it back the same way.
    await session.execute(text(declared.replace("ix_runs_fastest", "ix_runs_fastest_again")))
    again = (await session.execute(text("SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_runs_fastest_again'"))).scalar_one()
    assert again.replace("ix_runs_fastest_again", "ix_runs_fastest") == migrated
    order = str(ORDERS[RunOrder.FASTEST]()[0].compile(dialect=postgresql.dialect()))
    assert order == "coalesce(runs.figure, 'Infinity'::float8)"
    assert "COALESCE(figure, 'Infinity'::double precision), id)" in migrated
    assert "status = 'passed'::text" in migrated
