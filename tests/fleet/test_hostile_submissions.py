"""Hostile submissions through the two doors (issue 28): `kernelindex submit` says what is wrong with the
file in one line and exits 1; submitImplementation answers a problem with its field, never an internal
error."""

from __future__ import annotations

import pytest

from tests.api.helpers import make_token
from tests.fleet.conftest import candidate

HOSTILE_SOURCES = {
    "unary": "x = " + "-" * 100_000 + "1\nclass ModelNew: pass\n",
    "plus": "x = " + "1+" * 150_000 + "1\nclass ModelNew: pass\n",
    "attribute": "x = a" + ".b" * 150_000 + "\nclass ModelNew: pass\n",
    "not": "x = " + "not " * 80_000 + "1\nclass ModelNew: pass\n",
}
SUBMIT = """
mutation ($input: SubmitImplementationInput!) {
  submitImplementation(input: $input) { ok job { databaseId } problems { key reason } }
}"""


@pytest.mark.parametrize("name", list(HOSTILE_SOURCES))
def test_the_cli_refuses_a_source_too_deep_to_parse_as_a_file_problem(cli, tiny_workload, tmp_path, capsys, name):
    path = tmp_path / f"{name}.py"
    path.write_text(HOSTILE_SOURCES[name], encoding="utf-8")
    assert cli("submit", "--workload", tiny_workload, "--file", str(path), "--hardware", "cpu") == 1
    err = capsys.readouterr().err
    assert f"error: {name}.py" in err and "nested" in err, err
    assert "out of memory" not in err and "unexpected" not in err and "Traceback" not in err


def test_the_cli_shows_no_escape_sequence_a_file_name_holds(cli, tiny_workload, tmp_path, capsys):
    path = tmp_path / "model\x1b[2J.py"
    path.write_text("class ModelNew: pass\n", encoding="utf-8")
    assert cli("submit", "--workload", tiny_workload, "--file", str(path), "--hardware", "cpu") == 1
    err = capsys.readouterr().err
    assert "\x1b" not in err and "the file name holds a control character (U+001B" in err, err


def test_the_cli_refuses_a_file_over_the_size_limit_without_reading_it(cli, tiny_workload, tmp_path, capsys):
    path = tmp_path / "huge.py"
    with path.open("wb") as out:
        out.truncate(64 * 2**20)  # sparse: 64 MiB that are never read
    assert cli("submit", "--workload", tiny_workload, "--file", str(path), "--hardware", "cpu") == 1
    assert "error: huge.py: 67,108,864 bytes; a submission is at most 524,288" in capsys.readouterr().err


async def test_submit_implementation_answers_hostile_input_with_problems_not_errors(client, db_url, tiny_workload):
    token = await make_token(db_url, "implementations:submit")
    headers = {"Authorization": f"Bearer {token}"}
    base = {"workload": tiny_workload, "source": candidate("honest"), "title": "fair relu", "hardware": "cpu"}
    cases = [({"source": source}, "FILE", "nested") for source in HOSTILE_SOURCES.values()] + [
        ({"bindings": {"N" * 5000: 8}}, "BINDINGS", "at most 64"),
        ({"bindings": {"batch_size": 8}}, "BINDINGS", "has no axis batch_size"),
        ({"title": "relu \u202e fast"}, "TITLE", "U+202E"),
        ({"title": "relu \x1b]0;owned\x07"}, "TITLE", "U+001B"),
        ({"licence": "MIT\n" + "x" * 50_000}, "LICENCE", "at most 200"),
        ({"filename": "../" * 33_000 + "x.py"}, "FILE", "at most 4,096"),
    ]
    for change, key, words in cases:
        response = await client.post("/graphql", json={"query": SUBMIT, "variables": {"input": base | change}}, headers=headers)
        body = response.json()
        assert "errors" not in body, body["errors"]
        result = body["data"]["submitImplementation"]
        assert result["ok"] is False and result["job"] is None
        (problem,) = result["problems"]
        assert problem["key"] == key and words in problem["reason"], (change.keys(), problem)
    # The documented shape still lands, its file name without path parts.
    ok = (await client.post("/graphql", json={"query": SUBMIT, "variables": {"input": base | {
        "filename": "../../k/relu.py", "licence": "MIT", "bindings": {"N": 64}}}}, headers=headers)).json()
    assert ok["data"]["submitImplementation"]["ok"], ok
    job = ok["data"]["submitImplementation"]["job"]["databaseId"]
    shown = (await client.post("/graphql", json={"query": "query($id: ID!) { job(id: $id) { submission { filename } } }",
                                                  "variables": {"id": str(job)}})).json()
    assert shown["data"]["job"]["submission"]["filename"] == "relu.py"
