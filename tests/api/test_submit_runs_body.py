"""submitRuns' request body: decoded in C to what json.loads gives, and its records walked for values
PostgreSQL cannot store only when the body could hold one (issue 24, point 4)."""

from __future__ import annotations

import json
import math

import pytest

import kernelindex.graphql.mutations as mutations
from kernelindex.web.app import KernelIndexGraphQL, strictly_plain_body
from tests.api.helpers import make_token, synthetic_records

SUBMIT = """
mutation Submit($records: [JSON!]!) {
  submitRuns(records: $records) { ok inserted unchanged problems { index key reason } }
}
"""


@pytest.fixture
def walked(monkeypatch) -> list[bool]:
    """values_checked as submitRuns passed it, record by record."""
    seen: list[bool] = []
    check = mutations.check_record

    def recording(data, now=None, *, values_checked=False):
        seen.append(values_checked)
        return check(data, now, values_checked=values_checked)

    monkeypatch.setattr(mutations, "check_record", recording)
    return seen


async def submit(client, token: str, body: str) -> dict:
    response = await client.post(
        "/graphql", content=body.encode(), headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    )
    assert response.status_code == 200, response.text
    return response.json()["data"]["submitRuns"]


async def test_a_plain_body_is_not_walked_again_and_one_with_an_escape_is(client, db_url, walked):
    token = await make_token(db_url, "runs:write")
    records = synthetic_records(3)
    result = await submit(client, token, json.dumps({"query": SUBMIT, "variables": {"records": records}}))
    assert (result["ok"], result["inserted"]) == (True, 3)
    assert walked == [True, True, True]

    walked.clear()
    records = synthetic_records(2, start=10)
    records[1]["environment"]["label"] = "pool-é"  # written as \u00e9 by json.dumps
    result = await submit(client, token, json.dumps({"query": SUBMIT, "variables": {"records": records}}))
    assert (result["ok"], result["inserted"]) == (True, 2)
    assert walked == [False, False]


@pytest.mark.parametrize(("change", "key", "words"), [
    (lambda r: r["configuration"]["bindings"].update(batch_size=2**63), "configuration.bindings.batch_size",
     "is out of range for a 64-bit integer"),
    (lambda r: r["implementation"].update(title="evil\x00title"), "implementation.title", "NUL"),
    (lambda r: r["implementation"].update(title="lone \ud800"), "implementation.title", "unpaired surrogate"),
])
async def test_a_value_postgres_cannot_store_is_still_found(client, db_url, walked, change, key, words):
    token = await make_token(db_url, "runs:write")
    records = synthetic_records(2)
    change(records[1])
    result = await submit(client, token, json.dumps({"query": SUBMIT, "variables": {"records": records}}))
    assert result["ok"] is False and result["inserted"] == 0
    assert [(p["index"], p["key"]) for p in result["problems"]] == [(1, key)]
    assert words in result["problems"][0]["reason"]
    assert walked == [False, False]


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400"])
async def test_non_finite_numbers_are_read_as_json_loads_reads_them(client, db_url, walked, literal):
    token = await make_token(db_url, "runs:write")
    records = synthetic_records(1)
    body = json.dumps({"query": SUBMIT, "variables": {"records": records}}).replace('"mean": 1.2', f'"mean": {literal}', 1)
    result = await submit(client, token, body)
    assert result["ok"] is False
    assert [(p["index"], p["key"]) for p in result["problems"]] == [(0, "statistics.mean")]
    assert "numbers must be finite" in result["problems"][0]["reason"]
    assert walked == [False]


async def test_records_written_in_the_query_are_walked(client, db_url, walked):
    token = await make_token(db_url, "runs:write")
    record = json.dumps(synthetic_records(1)[0])
    # A GraphQL object literal: keys unquoted.
    literal = json.loads(record)

    def graphql_value(value) -> str:
        if isinstance(value, dict):
            return "{" + " ".join(f"{k}: {graphql_value(v)}" for k, v in value.items()) + "}"
        if isinstance(value, list):
            return "[" + " ".join(graphql_value(v) for v in value) + "]"
        return json.dumps(value)

    query = f"mutation {{ submitRuns(records: [{graphql_value(literal)}]) {{ ok inserted problems {{ index key reason }} }} }}"
    result = await submit(client, token, json.dumps({"query": query}))
    assert (result["ok"], result["inserted"]) == (True, 1), result
    assert walked == [False]


def decode(data: str | bytes) -> object:
    return KernelIndexGraphQL.decode_json(object.__new__(KernelIndexGraphQL), data)


@pytest.mark.parametrize("text", [
    '{"a": [1, 2.5, -0.0, 1E2, 123456789012345678901234567890, "h\\u00e9llo", null, true], "a": {"b": 4.9e-324}}',
    '{"x": NaN, "y": -Infinity, "z": 1e400}', '{"s": "\\ud800"}', '[{"query": "{ a }"}]',
])
def test_the_body_decodes_as_json_loads_does(text):
    got, want = decode(text.encode()), json.loads(text)
    assert json.dumps(got) == json.dumps(want)  # the same values and types (1E2 a float, the big one an int)
    assert type(got) is type(want)
    assert decode(text) is not None  # a GET parameter (str) as well


def test_non_finite_numbers_are_kept_as_json_loads_keeps_them():
    got = decode(b'{"x": NaN, "y": Infinity, "z": 1e400}')
    assert isinstance(got, dict) and math.isnan(got["x"]) and got["y"] == math.inf and got["z"] == math.inf


@pytest.mark.parametrize(("body", "message"), [
    (b'{"query": ', "the request's JSON is invalid: Expecting value at line 1 column 11"),
    (b'{"query": "\xff"}', "the request body is not valid UTF-8 (byte 11)"),
    (b"[" * 100_000, "the request's JSON is nested too deeply"),
    (b"42", "the request body must be a JSON object with a `query`"),
])
def test_a_bad_body_is_refused_in_the_same_words(body, message):
    from cross_web import HTTPException

    with pytest.raises(HTTPException) as raised:
        decode(body)
    assert raised.value.reason == message


@pytest.mark.parametrize(("raw", "plain"), [
    (b'{"a": "x", "n": 123456789012345678}', True),  # 18 digits: within 64 bits
    (b'{"n": 1234567890123456789}', False),  # 19: may not be
    (b'{"a": "\\u00e9"}', False), (b'{"a": "\\u0000"}', False), (b'{"a": "caf\xc3\xa9"}', True),
])
def test_a_body_is_plain_only_without_escapes_or_long_numbers(raw, plain):
    assert strictly_plain_body(raw) is plain


def test_variable_texts_skip_lists_of_json_but_not_of_text_or_inputs():
    from graphql import GraphQLInputField, GraphQLInputObjectType, GraphQLList, GraphQLNonNull, GraphQLScalarType, GraphQLString

    from kernelindex.graphql.inputs import _variable_texts

    json_type = GraphQLScalarType("JSON")
    assert list(_variable_texts([{"a": "x"}, "y"], GraphQLNonNull(GraphQLList(GraphQLNonNull(json_type))))) == []
    assert sorted(_variable_texts(["a", "b"], GraphQLList(GraphQLNonNull(GraphQLString)))) == ["a", "b"]
    pair = GraphQLInputObjectType("Pair", {"name": GraphQLInputField(GraphQLString), "data": GraphQLInputField(json_type)})
    assert list(_variable_texts([{"name": "n", "data": "not text"}], GraphQLList(pair))) == ["n"]
