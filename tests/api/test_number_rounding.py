"""numbers-v1 at every boundary: no number the API returns carries binary noise (issue 26, point 8).

The page query here is built from the schema, selecting every Float field reachable from a workload
(depth-bounded, no type twice on one path), so a Float field added later is walked without touching
this file. It runs on the seed (whose eager H100 PCIe run gave `ciHalfWidthMs 0.017223003139766043`)
plus synthetic runs whose statistics make noisy derived values (speedups, vsFirst, intervals, floors).
"""

from __future__ import annotations

import copy
import csv
import io
import json
import math
import re
from dataclasses import dataclass, field
from decimal import Decimal

import pytest
from graphql import (
    GraphQLFloat,
    GraphQLInterfaceType,
    GraphQLNamedType,
    GraphQLObjectType,
    Undefined,
    get_named_type,
    is_non_null_type,
)

from kernelindex.graphql.schema import build_schema
from kernelindex.rules.numbers import SIGNIFICANT_DIGITS
from kernelindex.rules.stats import ci95_half_width
from kernelindex.settings import Settings
from kernelindex.web.exports import RUN_COLUMNS
from tests.api.helpers import synthetic_records, write_records
from tests.conftest import FIXED_NOW

SLUGS = ("kernelbench-l3-p9-resnet18", "kernelbench-l3-p12-vgg19")
# How deep below Workload the walk goes: every Float field of a page is reached by 6 (the deepest is
# Workload.recordHistory.edges.node.run.environment.hardware); more only repeats them.
DEPTH = 6
# Float fields no workload page reaches, each with why; any other unreached one fails the walk test.
OUTSIDE_A_PAGE = {("Job", "durationS"): "a fleet job's duration: the jobs query, under a fleet scope"}
# Float fields that may be null on every page of this data, each with why (the rest must show a value,
# so that the assertion on their digits is not vacuous).
NULL_HERE = {
    ("Hardware", "tdpW"): "not in every datasheet",
    ("Hardware", "tf32Tflops"): "the seed's SKUs on these pages may not state it",
    # What only a source adapter's runs state (tests/ingest/test_source_import.py reads them): a KernelBench
    # run states no quantiles and no speedup of its own. Every Float goes through the same rounding.
    ("Run", "figureLow"): "KernelBench states no quantiles", ("Run", "figureHigh"): "KernelBench states no quantiles",
    ("Run", "lowQuantile"): "KernelBench states no quantiles", ("Run", "highQuantile"): "KernelBench states no quantiles",
    ("Run", "sourceSpeedup"): "KernelBench states no speedup of its own",
}


def significant_digits(x: float) -> int:
    """Digits of the shortest text that reads back as x: independent of kernelindex.rules.numbers."""
    return len(Decimal(repr(x)).normalize().as_tuple().digits)


def is_clean(x: float) -> bool:
    """At most 12 significant figures, or an exact count (a whole number below 2**53: bytes, FLOPs)."""
    return math.isfinite(x) and (significant_digits(x) <= SIGNIFICANT_DIGITS or (x.is_integer() and abs(x) < 2**53))


@dataclass
class Selection:
    """A field's selection: its Float leaves and its object-valued children, by name."""

    type_name: str
    floats: list[str] = field(default_factory=list)
    children: dict[str, Selection] = field(default_factory=dict)

    def text(self) -> str:
        return " ".join([*self.floats, *(f"{name} {{ {child.text()} }}" for name, child in self.children.items())])


def _required_args(f) -> bool:
    return any(is_non_null_type(a.type) and a.default_value is Undefined for a in f.args.values())


def walk(t: GraphQLNamedType, depth: int, path: frozenset[str]) -> Selection | None:
    """The Float fields of `t` and of the object types below it; None when none is reachable."""
    assert isinstance(t, (GraphQLObjectType, GraphQLInterfaceType))
    selection = Selection(t.name)
    for name, f in t.fields.items():
        named = get_named_type(f.type)
        if named is GraphQLFloat:
            selection.floats.append(name)
        elif (isinstance(named, (GraphQLObjectType, GraphQLInterfaceType)) and depth > 0 and named.name not in path
              and not _required_args(f)):
            child = walk(named, depth - 1, path | {named.name})
            if child is not None:
                selection.children[name] = child
    return selection if selection.floats or selection.children else None


def page_selection() -> Selection:
    schema = build_schema(Settings())._schema
    selection = walk(schema.type_map["Workload"], DEPTH, frozenset({"Workload"}))
    assert selection is not None
    return selection


def float_fields(selection: Selection) -> set[tuple[str, str]]:
    out = {(selection.type_name, name) for name in selection.floats}
    for child in selection.children.values():
        out |= float_fields(child)
    return out


def floats_in(value, selection: Selection, path: str, seen: dict[tuple[str, str], list[tuple[str, float]]]) -> None:
    """Every float the response holds for the selection, by (type, field), with its path."""
    if value is None:
        return
    if isinstance(value, list):
        for i, item in enumerate(value):
            floats_in(item, selection, f"{path}[{i}]", seen)
        return
    for name in selection.floats:
        v = value[name]
        for i, x in enumerate(v if isinstance(v, list) else [v]):
            if x is not None:
                assert isinstance(x, (int, float)), (path, name, x)
                seen.setdefault((selection.type_name, name), []).append((f"{path}.{name}" + (f"[{i}]" if isinstance(v, list) else ""), float(x)))
    for name, child in selection.children.items():
        floats_in(value[name], child, f"{path}.{name}", seen)


def all_floats(value, path: str = "") -> list[tuple[str, float]]:
    """Every float anywhere in a JSON value (ints are exact and not looked at)."""
    if isinstance(value, float):
        return [(path, value)]
    if isinstance(value, dict):
        return [found for k, v in value.items() for found in all_floats(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [found for i, v in enumerate(value) for found in all_floats(v, f"{path}[{i}]")]
    return []


def noisy_records() -> list[dict]:
    """Measured runs on H100 SXM beside the seed's: odd means and spreads, so that speedups, vsFirst,
    half widths, intervals and the floors' ratios are the kind of quotient that carries binary noise;
    the first states every statistic (median, p5, p95, samples, compile time) so every Run field has a value."""
    records = synthetic_records(4)
    for i, record in enumerate(records):
        mean = (1.17, 1.23, 1.31, 1.43)[i]
        std = (0.0123, 0.0377, 0.0111, 0.0291)[i]
        record["statistics"] = {"mean": mean, "std": std, "min": round(mean - 0.03, 6), "max": round(mean + 0.07, 6),
                                "num_trials": 100}
    full = records[0]
    samples = [round(1.17 + ((k * 37) % 21 - 10) * 0.001, 6) for k in range(100)]
    full["statistics"] = {"mean": 1.17, "std": 0.0061, "min": min(samples), "max": max(samples), "median": 1.17,
                          "p5": 1.161, "p95": 1.179, "num_trials": 100}
    full["samples_ms"] = samples
    full["compile_time_ms"] = 4321.5
    return records


async def write_noisy(db_url: str) -> None:
    """The noisy records in two writes: the fastest comes last, in the environment of a slower one,
    and beats its record, so the record history has an improvement (RecordEvent.improvementPercent)."""
    records = noisy_records()
    records[0]["environment"] = copy.deepcopy(records[1]["environment"])
    await write_records(db_url, records[1:])
    await write_records(db_url, records[:1])


@pytest.fixture
async def roomy_client(db_url):
    """A client of a server whose query limits let the whole walked page through in one query."""
    import httpx

    from kernelindex.web.app import create_app

    settings = Settings(max_query_depth=40, max_query_tokens=100_000, max_query_cost=10_000_000)
    application = create_app(settings, database_url=db_url, clock=lambda: FIXED_NOW)
    async with application.router.lifespan_context(application):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=application), base_url="http://testserver") as client:
            yield client


def test_the_walk_reaches_every_float_field_a_page_can_have():
    schema = build_schema(Settings())._schema
    every = {(t.name, name) for t in schema.type_map.values()
             if isinstance(t, (GraphQLObjectType, GraphQLInterfaceType)) and not t.name.startswith("__")
             for name, f in t.fields.items() if get_named_type(f.type) is GraphQLFloat}
    reached = float_fields(page_selection())
    assert every - reached == set(OUTSIDE_A_PAGE), "a Float field no page reaches: add it to OUTSIDE_A_PAGE, with why"
    assert {("Run", "ciHalfWidthMs"), ("ComparisonRow", "intervalMs"), ("ComparisonRow", "vsFirst"),
            ("Headroom", "floorNs")} <= reached  # the fields issue 26 saw noisy


async def test_every_float_of_a_full_page_has_at_most_twelve_significant_figures(roomy_client, db_url):
    await write_noisy(db_url)
    selection = page_selection()
    query = f"query Page($slug: String!) {{ workload(slug: $slug) {{ {selection.text()} }} }}"
    seen: dict[tuple[str, str], list[tuple[str, float]]] = {}
    for slug in SLUGS:
        response = await roomy_client.post("/graphql", json={"query": query, "variables": {"slug": slug}})
        body = response.json()
        assert response.status_code == 200 and "errors" not in body, body.get("errors")
        floats_in(body["data"]["workload"], selection, slug, seen)
    noisy = [(path, x) for values in seen.values() for path, x in values if not is_clean(x)]
    assert noisy == []
    # Not vacuous: every Float field of the page had a value somewhere (bar the few listed, with why)...
    assert float_fields(selection) - set(seen) - set(NULL_HERE) == set()
    # ...and the derived values issue 26 saw with binary noise are there, rounded: each is a quotient
    # whose exact double has more than 12 figures, so without the rounding this test fails on them.
    for key in (("Run", "ciHalfWidthMs"), ("ComparisonRow", "intervalMs"), ("ComparisonRow", "vsFirst"),
                ("Headroom", "floorNs"), ("ComparisonRow", "speedupVsBaseline")):
        assert seen[key], key
    assert 0.0172230031398 in [x for _, x in seen[("Run", "ciHalfWidthMs")]]  # was 0.017223003139766043


async def test_the_json_twin_has_no_binary_noise(client, db_url):
    await write_noisy(db_url)
    for slug in SLUGS:
        response = await client.get(f"/workloads/{slug}.json")
        assert response.status_code == 200
        found = all_floats(response.json())
        assert found and [(p, x) for p, x in found if not is_clean(x)] == []
    # The half width of the fastest run (std 0.0061 of 100 trials) is a quotient with binary noise:
    raw = ci95_half_width(0.0061, 100)
    assert raw is not None and significant_digits(raw) > SIGNIFICANT_DIGITS
    headline = (await client.get(f"/workloads/{SLUGS[0]}.json")).json()["headline"]
    assert headline["latencyMs"] == 1.17 and headline["ciHalfWidthMs"] == float(f"{raw:.12g}")


_NUMBER = re.compile(r"-?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?")


# The columns of runs.csv that are floats: stored figures, and the derived half width.
FLOAT_COLUMNS = ("mean_ms", "std_ms", "min_ms", "max_ms", "median_ms", "p5_ms", "p95_ms", "ci95_half_width_ms", "compile_time_ms")


@pytest.mark.parametrize("names", ["csv", "graphql"])
async def test_every_number_of_every_runs_csv_column(client, db_url, names):
    await write_noisy(db_url)
    response = await client.get(f"/exports/runs.csv?names={names}&include_superseded=true")
    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert len(rows) == 12
    column_of = {c.csv: (c.csv if names == "csv" else c.graphql) for c in RUN_COLUMNS}
    with_a_number: set[str] = set()
    for row in rows:
        for column, cell in row.items():
            if _NUMBER.fullmatch(cell):
                with_a_number.add(column)
                assert is_clean(float(cell)), (row[column_of["run_id"]], column, cell)
            elif cell.startswith(("{", "[")):  # the bindings, as JSON
                assert [(p, x) for p, x in all_floats(json.loads(cell)) if not is_clean(x)] == []
    # Every float column had a value to look at (the full synthetic run states them all).
    assert {column_of[c] for c in FLOAT_COLUMNS} <= with_a_number
    half = column_of["ci95_half_width_ms"]
    assert "0.0172230031398" in [row[half] for row in rows]  # was 0.017223003139766043


async def test_every_number_in_catalog_jsonl(client, db_url):
    """The catalogue carries stored figures only (none derived), exactly as stored: on this data none
    has binary noise, and the noisy-figure test below shows they are not rounded."""
    await write_noisy(db_url)
    response = await client.get("/exports/catalog.jsonl")
    assert response.status_code == 200
    found = [number for line in response.text.splitlines() for number in all_floats(json.loads(line))]
    assert len(found) > 100 and [(p, x) for p, x in found if not is_clean(x)] == []


async def test_a_stored_figure_with_noise_reads_rounded_but_is_kept_exactly(client, graphql, db_url):
    """A source that states 0.1 + 0.2 as 0.30000000000000004: GraphQL, the twin and runs.csv give 0.3,
    as they give every number; catalog.jsonl, the copy a re-import reads, keeps the stored figure."""
    record = copy.deepcopy(synthetic_records(1)[0])
    record["statistics"] = {"mean": 0.1 + 0.2, "std": 0.001, "min": 0.29, "max": 0.31, "num_trials": 100}
    await write_records(db_url, [record])
    data = await graphql("""{ runs(workload: "kernelbench-l3-p9-resnet18", hardware: "NVIDIA H100 SXM5 80GB", first: 50)
                             { edges { node { meanMs environment { provider } } } } }""")
    means = [e["node"]["meanMs"] for e in data["runs"]["edges"] if e["node"]["environment"]["provider"] == "TestCloud"]
    assert means == [0.3]
    rows = list(csv.DictReader(io.StringIO((await client.get("/exports/runs.csv?hardware=NVIDIA+H100+SXM5+80GB")).text)))
    assert [r["mean_ms"] for r in rows if r["provider"] == "TestCloud"] == ["0.3"]
    lines = [json.loads(line) for line in (await client.get("/exports/catalog.jsonl")).text.splitlines()]
    stated = [line["statistics"]["mean"] for line in lines
              if line["format"] == "kernelindex.run/1" and line["environment"]["provider"] == "TestCloud"]
    assert stated == [0.30000000000000004]
