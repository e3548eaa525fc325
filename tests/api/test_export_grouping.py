"""Exports a researcher can group (the truth issue's point 10): runs.csv names each run's suite, level,
problem number and workload name, and `level` filters runs.csv, catalog.jsonl and GraphQL's `runs` alike."""

from __future__ import annotations

import csv
import io
import json

RESNET18 = "kernelbench-l3-p9-resnet18"


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


async def _gql(client, query: str) -> dict:
    response = await client.post("/graphql", json={"query": query})
    body = response.json()
    assert "errors" not in body, body
    return body["data"]


async def test_grouping_columns_match_the_workload(client):
    rows = _rows((await client.get("/exports/runs.csv")).text)
    columns = list(rows[0])
    # appended after the published columns, in this order (the figure's columns come after them)
    assert rows and columns[columns.index("suite"):columns.index("suite") + 4] == ["suite", "level", "problem_number", "workload_name"]
    for row in rows:
        # The slug spells the same facts (kernelbench-l<level>-p<number>-<name>): an independent check.
        suite, level, number, name = row["workload"].split("-", 3)
        assert (row["suite"], row["level"], row["problem_number"]) == (suite, level[1:], number[1:])
        assert row["workload_name"].lower() == name
    graphql = _rows((await client.get("/exports/runs.csv?names=graphql")).text)
    names = list(graphql[0])
    assert names[names.index("suite"):names.index("suite") + 4] == ["suite", "level", "problemNumber", "workloadName"]


async def test_level_filters_every_route_alike(client):
    every = _rows((await client.get("/exports/runs.csv")).text)
    level3 = _rows((await client.get("/exports/runs.csv?level=3")).text)
    assert level3 and len(level3) == sum(1 for r in every if r["level"] == "3")
    assert _rows((await client.get("/exports/runs.csv?level=1")).text) == []
    data = await _gql(client, "{ all: runs(level: 3) { totalCount } none: runs(level: 1) { totalCount } "
                              "eligible: runs(level: 3, eligibleOnly: true) { totalCount } }")
    assert data["all"]["totalCount"] == len(level3) and data["none"]["totalCount"] == 0
    eligible = _rows((await client.get("/exports/runs.csv?level=3&eligible_only=true")).text)
    assert data["eligible"]["totalCount"] == len(eligible)
    lines = [json.loads(line) for line in (await client.get("/exports/catalog.jsonl?level=1")).text.splitlines()]
    assert not [line for line in lines if line["format"] == "kernelindex.run/1"]


async def test_run_names_its_workload(client):
    data = await _gql(client, f'{{ runs(workload: "{RESNET18}", first: 1) {{ edges {{ node {{ workloadSlug '
                              "suite level problemNumber workloadName } } } }")
    node = data["runs"]["edges"][0]["node"]
    assert node == {"workloadSlug": RESNET18, "suite": "kernelbench", "level": 3, "problemNumber": 9, "workloadName": "ResNet18"}


async def test_bad_level_is_refused_in_words(client):
    for bad in ("three", "-1", "1.5", "²", "99999999999"):
        response = await client.get(f"/exports/runs.csv?level={bad}")
        assert response.status_code == 400 and "level must be a whole number" in response.json()["error"], bad
