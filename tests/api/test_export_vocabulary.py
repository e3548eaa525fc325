"""One vocabulary for GraphQL and the exports: runs.csv's columns map to GraphQL paths from one table
(exports.RUN_COLUMNS), checked here against the schema and against GraphQL's own answers; filters take
GraphQL's enum values; a name that matches nothing is an error with the close matches, in both."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime

import graphql as gql
import pytest

from kernelindex.graphql.schema import export_sdl
from kernelindex.web.exports import CSV_COLUMNS, GRAPHQL_COLUMNS, RUN_COLUMNS
from tests.api.helpers import synthetic_records, write_records

# The columns runs.csv has published: renaming one breaks its readers, so `names=csv` stays this.
PUBLISHED = (
    "run_id", "workload", "workload_source_sha256", "bindings", "dtype", "implementation", "hardware_sku",
    "hardware_family", "provider", "environment_fingerprint", "protocol", "protocol_version", "status",
    "failure_reason", "mean_ms", "std_ms", "min_ms", "max_ms", "median_ms", "p5_ms", "p95_ms", "num_trials",
    "ci95_half_width_ms", "compile_time_ms", "observed_at", "evidence", "source", "source_revision", "licence",
    "trust_label", "stale", "superseded", "retracted",
    # added after the first publication, at the end (positional readers keep working)
    "suite", "level", "problem_number", "workload_name",
    "metric", "statistic", "figure", "figure_unit", "figure_low", "figure_high", "low_quantile", "high_quantile",
    "source_speedup", "source_route",
)


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def _selection(paths: tuple[str, ...]) -> str:
    """The GraphQL selection that reads every path, e.g. environment { hardware { sku } }."""
    tree: dict = {}
    for path in paths:
        node = tree
        for part in path.split("."):
            node = node.setdefault(part, {})
    tree["configuration"]["bindings"] = {"axis": {}, "value": {}}

    def render(node: dict) -> str:
        return " ".join(k + (f" {{ {render(v)} }}" if v else "") for k, v in node.items())

    return render(tree)


def _at(value, path: str):
    for part in path.split("."):
        value = value[part]
    return value


def test_every_column_is_a_path_in_the_schema():
    schema = gql.build_schema(export_sdl())
    assert CSV_COLUMNS == PUBLISHED
    assert len(set(GRAPHQL_COLUMNS)) == len(GRAPHQL_COLUMNS) == len(RUN_COLUMNS)
    for column in RUN_COLUMNS:
        type_: gql.GraphQLNamedType = schema.get_type("Run")  # type: ignore[assignment]
        for part in column.graphql.split("."):
            assert isinstance(type_, gql.GraphQLObjectType), f"{column.csv}: {column.graphql} goes through {type_}"
            assert part in type_.fields, f"{column.csv}: Run.{column.graphql} has no field {part!r} on {type_.name}"
            type_ = gql.get_named_type(type_.fields[part].type)
        if column.graphql == "configuration.bindings":  # the one list, written as its JSON
            assert type_.name == "AxisBinding"
        else:
            assert isinstance(type_, gql.GraphQLScalarType | gql.GraphQLEnumType), f"{column.graphql} is not a leaf"


async def test_graphql_names_are_graphql_answers(client, graphql, db_url):
    """Every column of `names=graphql`, row by row, is what GraphQL answers for that path."""
    await write_records(db_url, synthetic_records(3))
    published = await client.get("/exports/runs.csv")
    response = await client.get("/exports/runs.csv?names=graphql")
    assert response.status_code == 200
    header = next(csv.reader(io.StringIO(response.text)))
    assert tuple(header) == GRAPHQL_COLUMNS
    rows = _rows(response.text)
    old = {r["run_id"]: r for r in _rows(published.text)}
    data = await graphql(f"{{ runs(first: 100) {{ nodes {{ {_selection(GRAPHQL_COLUMNS)} }} }} }}")
    nodes = {str(n["databaseId"]): n for n in data["runs"]["nodes"]}
    assert len(rows) == len(nodes) == len(old) == 11
    for row in rows:
        node = nodes[row["databaseId"]]
        for column in RUN_COLUMNS:
            got, want = row[column.graphql], _at(node, column.graphql)
            if want is None:
                assert got == "", column.graphql
            elif isinstance(want, bool):
                assert got == ("true" if want else "false"), column.graphql
            elif isinstance(want, list):
                assert json.loads(got) == want, column.graphql
            elif isinstance(want, float):
                assert float(got) == want, column.graphql
            elif column.graphql == "observedAt":
                assert datetime.fromisoformat(got) == datetime.fromisoformat(want)
            else:
                assert got == str(want), column.graphql
            # the published column holds the same value (bindings as an object, booleans as Python's,
            # an enum by its lower-case value: PASSED is passed)
            published = old[row["databaseId"]][column.csv]
            if column.enum is not None:
                assert got == want and published == column.enum[got].value == want.lower(), column.csv
            elif column.csv != "bindings" and not isinstance(want, bool):
                assert published == got, column.csv
    bad = await client.get("/exports/runs.csv?names=snake")
    assert bad.status_code == 400 and "names must be csv or graphql" in bad.json()["error"]


async def test_enum_filters_take_graphql_values(client, graphql, db_url):
    failed = synthetic_records(1, start=90)[0]
    failed.update(status="failed", statistics=None, failure_reason="out of memory")
    await write_records(db_url, [failed, *synthetic_records(2)])
    for field, values in (("status", ("passed", "failed")), ("evidence", ("reported", "measured"))):
        for value in values:
            spellings = {value, value.upper(), value.title()}
            answers = {tuple(sorted(r["run_id"] for r in _rows((await client.get(f"/exports/runs.csv?{field}={s}")).text)))
                       for s in spellings}
            assert len(answers) == 1, (field, value, answers)
            data = await graphql(f"{{ runs(first: 100, {field}: {value.upper()}) {{ nodes {{ databaseId }} }} }}")
            ids = answers.pop()
            assert ids == tuple(sorted(str(n["databaseId"]) for n in data["runs"]["nodes"])) and ids, (field, value)
    bad = await client.get("/exports/runs.csv?status=ok")
    assert bad.status_code == 400
    assert bad.json()["error"] == "status must be one of PASSED (passed), FAILED (failed), got 'ok'"
    # GraphQL's spellings of the parameter names are accepted as well
    camel = await client.get("/exports/runs.csv?observedSince=2026-03-01T00:00:00Z&includeSuperseded=true&eligibleOnly=true")
    snake = await client.get("/exports/runs.csv?observed_since=2026-03-01T00:00:00Z&include_superseded=true&eligible_only=true")
    assert camel.status_code == 200 and camel.text == snake.text and len(_rows(camel.text)) > 0


UNKNOWN = [
    ("hardware", "H100x", "no hardware 'H100x'; did you mean", "'H100 SXM'"),
    ("hardware", "H100", "no hardware 'H100'; did you mean", "'NVIDIA H100'"),
    ("workload", "kernelbench-l3-p9-resnet19", "no workload 'kernelbench-l3-p9-resnet19'; did you mean",
     "'kernelbench-l3-p9-resnet18'"),
    ("implementation", "torch_eagre", "no implementation 'torch_eagre'; did you mean", "'torch_eager'"),
    ("hardware", "zzzzzz", "no hardware 'zzzzzz'; nothing in the catalogue is close", ""),
]


@pytest.mark.parametrize(("kind", "name", "words", "match"), UNKNOWN)
async def test_unknown_name_is_an_error_with_close_matches(client, graphql, kind, name, words, match):
    for path in ("runs.csv", "catalog.jsonl"):
        response = await client.get(f"/exports/{path}", params={kind: name})
        assert response.status_code == 400, (path, response.text)
        assert words in response.json()["error"] and match in response.json()["error"]
    body = await graphql(f'{{ runs({kind}: "{name}") {{ nodes {{ id }} }} }}', expect_errors=True)
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert error["message"] == response.json()["error"]  # the same words in both
    if kind == "hardware":
        for query in (f'{{ records(hardware: "{name}") {{ nodes {{ workload {{ slug }} }} }} }}',
                      f'{{ workloads(measuredOn: "{name}") {{ nodes {{ slug }} }} }}',
                      f'{{ workloads(notMeasuredOn: "{name}") {{ nodes {{ slug }} }} }}'):
            (error,) = (await graphql(query, expect_errors=True))["errors"]
            assert error["extensions"]["code"] == "BAD_USER_INPUT" and error["message"] == response.json()["error"]


# Every name of the catalogue a hardware filter takes, and the SKUs each must reach in the seed's runs.
SXM, PCIE = "NVIDIA H100 SXM5 80GB", "NVIDIA H100 PCIe 80GB"
NAMES = [("NVIDIA H100", {SXM, PCIE}), ("nvidia h100", {SXM, PCIE}), (SXM, {SXM}), ("H100 SXM", {SXM}),
         ("h100 pcie", {PCIE}), ("NVIDIA H100 80GB HBM3", {SXM}), ("NVIDIA H100 PCIe", {PCIE})]


@pytest.mark.parametrize(("name", "skus"), NAMES)
async def test_hardware_names_that_match(client, graphql, name, skus):
    data = await graphql('query($h: String!) { runs(hardware: $h, first: 100) { nodes { environment { hardware { sku } } } }'
                         ' records(hardware: $h) { nodes { records { run { environment { hardware { sku } } } } } } }',
                         {"h": name})
    assert {n["environment"]["hardware"]["sku"] for n in data["runs"]["nodes"]} == skus
    assert {r["run"]["environment"]["hardware"]["sku"] for n in data["records"]["nodes"] for r in n["records"]} == skus
    rows = _rows((await client.get("/exports/runs.csv", params={"hardware": name})).text)
    assert {r["hardware_sku"] for r in rows} == skus


async def test_empty_page_of_known_names_is_no_error(graphql):
    """A name that exists but has no runs in the page is an empty page, not an error."""
    data = await graphql('{ runs(hardware: "NVIDIA H200", workload: "kernelbench-l3-p9-resnet18") { nodes { id } } }')
    assert data["runs"]["nodes"] == []


def test_runs_links_the_csv_export():
    schema = gql.build_schema(export_sdl())
    description = schema.query_type.fields["runs"].description  # type: ignore[union-attr]
    assert "/exports/runs.csv" in description and "names=graphql" in description and "status=PASSED" in description
    for column in ("workload", "hardware", "observedSince"):
        assert f"`{column}`" in description


async def test_names_are_looked_up_only_for_an_empty_page(app, graphql, count_statements):
    """A page with runs proves every name it was asked for exists: no look-up; an empty one costs one."""
    query = 'query($h: String!) { runs(hardware: $h, first: 5) { nodes { databaseId } } }'
    counts = {}
    for name in ("NVIDIA H100", "NVIDIA H200"):
        with count_statements(app.state.engine) as statements:
            await graphql(query, {"h": name})
        counts[name] = len(statements)
    with count_statements(app.state.engine) as statements:
        await graphql('{ runs(first: 5) { nodes { databaseId } } }')
    assert counts["NVIDIA H100"] == len(statements)
    assert counts["NVIDIA H200"] == len(statements) + 1
