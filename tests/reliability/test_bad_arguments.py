"""Bad arguments, hand-written: each is a validation or user error with a message that says what was
wrong, never an internal error; a missing object is null, not an error."""

from __future__ import annotations

import base64
import json
import os

import asyncpg
import pytest

from kernelindex.db.urls import to_libpq_url
from tests.reliability.helpers import internal_errors

RESNET18 = "kernelbench-l3-p9-resnet18"


@pytest.fixture(scope="module")
async def shared_client(pg_url, template_url):
    """One app on one seeded database for the read-only cases of this module (a database per case is slow)."""
    import httpx

    from kernelindex.settings import Settings
    from kernelindex.web.app import create_app
    from tests.conftest import FIXED_NOW, TEMPLATE_DB, _admin, _with_database

    name = f"kernelindex_test_bad_arguments_{os.getpid()}"
    await _admin(pg_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', f'CREATE DATABASE "{name}" TEMPLATE "{TEMPLATE_DB}"')
    application = create_app(Settings(), database_url=_with_database(pg_url, name), clock=lambda: FIXED_NOW)
    async with application.router.lifespan_context(application):
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            yield client
    await _admin(pg_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def gid(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode()


def cursor(kind: str, key) -> str:
    return base64.urlsafe_b64encode(json.dumps([kind, key]).encode()).decode()


def raw_cursor(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode()


async def post(client, query: str, variables: dict | None = None) -> dict:
    # json.dumps escapes what httpx's encoder would refuse (unpaired surrogates): the server must cope.
    body = json.dumps({"query": query, "variables": variables or {}})
    response = await client.post("/graphql", content=body, headers={"content-type": "application/json"})
    assert response.status_code < 500, (response.status_code, response.text[:500])
    return response.json()


def assert_refused(body: dict, fragment: str, code: str | None = "BAD_USER_INPUT") -> None:
    """One or more errors, none internal; one names the problem; data for the field is absent."""
    errors = body.get("errors")
    assert errors, body
    assert not internal_errors(body), errors
    matching = [e for e in errors if fragment in e["message"]]
    assert matching, (fragment, errors)
    if code is not None:
        assert (matching[0].get("extensions") or {}).get("code") == code, matching[0]
    assert not any(v for v in (body.get("data") or {}).values()), body


RUNS = "query($first: Int, $after: String) { runs(first: $first, after: $after) { totalCount } }"
RUNS_FASTEST = "query($after: String) { runs(orderBy: FASTEST, after: $after) { totalCount } }"
WORKLOADS_BY_NAME = "query($after: String) { workloads(orderBy: NAME, after: $after) { totalCount } }"
IMPLEMENTATIONS = "query($after: String) { implementations(after: $after) { totalCount } }"
FEED = "query($after: String) { recordFeed(after: $after) { totalCount } }"
NODE = "query($id: ID!) { node(id: $id) { id } }"
COMPARE = "query($ids: [ID!]!) { compareRuns(ids: $ids) { __typename } }"
RUNS_IN_ENV = "query($env: ID) { runs(environment: $env) { totalCount } }"

# (query, variables, fragment of the message, extensions.code or None for a GraphQL validation error)
CASES = {
    # wrong types
    "string for Int": ('{ workloads(level: "one") { totalCount } }', None, "Int cannot represent", None),
    "string for first": ('{ runs(first: "ten") { totalCount } }', None, "Int cannot represent", None),
    "Int for String": ("{ workload(slug: 5) { slug } }", None, "String cannot represent", None),
    "string for Boolean": ('{ runs(stale: "yes") { totalCount } }', None, "Boolean cannot represent", None),
    "object for ID list": ("{ compareRuns(ids: {a: 1}) { __typename } }", None, "ID cannot represent", None),
    "variable of the wrong type": (RUNS, {"first": "abc"}, "Int cannot represent", None),
    "Int over 32 bits": ("{ runs(first: 3000000000) { totalCount } }", None, "non 32-bit signed integer", None),
    "bad DateTime": ('{ runs(observedSince: "yesterday") { totalCount } }', None, "cannot represent a DateTime", None),
    "missing required argument": ("{ workload { slug } }", None, "Argument 'Query.workload(slug:)' of type 'String!' is required", None),
    "unknown argument": ('{ workloads(colour: "red") { totalCount } }', None, "Unknown argument 'colour'", None),
    # invalid enums
    "unknown order": ("{ runs(orderBy: SLOWEST) { totalCount } }", None, "SLOWEST", None),
    "unknown kind": ("{ workloads(kind: MODELS) { totalCount } }", None, "MODELS", None),
    "enum as a string": ('{ runs(evidence: "MEASURED") { totalCount } }', None, "Evidence", None),
    "enum variable": ("query($o: RunOrder!) { runs(orderBy: $o) { totalCount } }", {"o": "newest"}, "RunOrder", None),
    # page sizes
    "first -1": (RUNS, {"first": -1}, "first must be at least 1, got -1", "BAD_USER_INPUT"),
    "first 0": (RUNS, {"first": 0}, "first must be at least 1, got 0", "BAD_USER_INPUT"),
    "first 101": (RUNS, {"first": 101}, "first must be at most 100, got 101", "BAD_USER_INPUT"),
    "first 1000000000": (RUNS, {"first": 1000000000}, "first must be at most 100, got 1000000000", "BAD_USER_INPUT"),
    "first on a nested list": (
        f'{{ workload(slug: "{RESNET18}") {{ recordHistory(first: -1) {{ totalCount }} }} }}', None,
        "first must be at least 1", "BAD_USER_INPUT",
    ),
    # malformed cursors
    "not base64": (RUNS, {"after": "not-a-cursor"}, "malformed cursor", "BAD_USER_INPUT"),
    "base64 of junk": (RUNS, {"after": raw_cursor("junk")}, "malformed cursor", "BAD_USER_INPUT"),
    "JSON but not a pair": (RUNS, {"after": raw_cursor('{"a": 1}')}, "malformed cursor", "BAD_USER_INPUT"),
    "another list's cursor": (RUNS, {"after": cursor("workload:slug", ["x", 1])}, "does not belong to this list", "BAD_USER_INPUT"),
    "too many key parts": (RUNS, {"after": cursor("run:newest", [1, 2])}, "does not belong to this list", "BAD_USER_INPUT"),
    "a string where the key is a number": (RUNS, {"after": cursor("run:newest", ["x"])}, "malformed cursor", "BAD_USER_INPUT"),
    "a boolean key": (RUNS, {"after": cursor("run:newest", [True])}, "malformed cursor", "BAD_USER_INPUT"),
    "a key past bigint": (RUNS, {"after": cursor("run:newest", [10**30])}, "malformed cursor", "BAD_USER_INPUT"),
    "a null key": (RUNS, {"after": cursor("run:newest", [None])}, "malformed cursor", "BAD_USER_INPUT"),
    "a string key for the fastest order": (RUNS_FASTEST, {"after": cursor("run:fastest", ["x", 1])}, "malformed cursor", "BAD_USER_INPUT"),
    "a number where the key is text": (WORKLOADS_BY_NAME, {"after": cursor("workload:name", [5, 1])}, "malformed cursor", "BAD_USER_INPUT"),
    "NUL in a text key": (IMPLEMENTATIONS, {"after": cursor("implementation", ["a\x00"])}, "malformed cursor", "BAD_USER_INPUT"),
    "unpaired surrogate in a text key": (
        IMPLEMENTATIONS, {"after": raw_cursor('["implementation", ["\\ud800"]]')}, "malformed cursor", "BAD_USER_INPUT",
    ),
    "deeply nested cursor": (FEED, {"after": raw_cursor("[" * 100_000)}, "malformed cursor", "BAD_USER_INPUT"),
    "a 100 kB cursor": (FEED, {"after": "A" * 100_000}, "malformed cursor", "BAD_USER_INPUT"),
    # malformed global IDs
    "ID of nothing": (NODE, {"id": gid("nope")}, "malformed ID", "BAD_USER_INPUT"),
    "empty ID": (NODE, {"id": ""}, "malformed ID", "BAD_USER_INPUT"),
    "ID not base64": (NODE, {"id": "!!!"}, "malformed ID", "BAD_USER_INPUT"),
    "ID with a non-number": (NODE, {"id": gid("Run:abc")}, "malformed ID", "BAD_USER_INPUT"),
    "ID of an unknown type": (NODE, {"id": gid("Foo:1")}, "names no known type", "BAD_USER_INPUT"),
    "ID 0": (NODE, {"id": gid("Run:0")}, "malformed ID", "BAD_USER_INPUT"),
    "negative ID": (NODE, {"id": gid("Run:-1")}, "malformed ID", "BAD_USER_INPUT"),
    "run ID past bigint": (NODE, {"id": gid("Run:99999999999999999999")}, "malformed ID", "BAD_USER_INPUT"),
    "environment ID past integer": (RUNS_IN_ENV, {"env": gid("Environment:3000000000")}, "malformed ID", "BAD_USER_INPUT"),
    "a Run ID as environment": (RUNS_IN_ENV, {"env": gid("Run:1")}, "expects an Environment ID", "BAD_USER_INPUT"),
    "a Workload ID to compare": (COMPARE, {"ids": [gid("Workload:1"), gid("Run:1")]}, "takes Run IDs", "BAD_USER_INPUT"),
    "one ID to compare": (COMPARE, {"ids": [gid("Run:1")]}, "takes 2 to 8 run IDs", "BAD_USER_INPUT"),
    "unknown run to compare": (COMPARE, {"ids": [gid("Run:1"), gid("Run:999999")]}, "no run with ID", "BAD_USER_INPUT"),
    "a 100 kB ID": (NODE, {"id": "A" * 100_000}, "malformed ID", "BAD_USER_INPUT"),
    # text PostgreSQL cannot take
    "NUL in a slug variable": ("query($s: String!) { workload(slug: $s) { slug } }", {"s": "a\x00b"}, "$s must not contain NUL", "BAD_USER_INPUT"),
    "NUL in a slug literal": ('{ workload(slug: "a\\u0000b") { slug } }', None, "'slug' must not contain NUL", "BAD_USER_INPUT"),
    "NUL in a filter": ('{ runs(hardware: "\\u0000") { totalCount } }', None, "'hardware' must not contain NUL", "BAD_USER_INPUT"),
    "NUL in a list of IDs": (COMPARE, {"ids": [gid("Run:1"), "x\x00"]}, "$ids must not contain NUL", "BAD_USER_INPUT"),
    "unpaired surrogate in a variable": (
        "query($s: String) { workloads(nameContains: $s) { totalCount } }", {"s": "\ud800"}, "unpaired surrogate", "BAD_USER_INPUT",
    ),
    # times
    "a time without a zone": ('{ runs(observedSince: "2026-01-01T00:00:00") { totalCount } }', None, "needs a time zone", "BAD_USER_INPUT"),
    "a time before year 1 in UTC": (
        '{ runs(observedSince: "0001-01-01T00:00:00+05:00") { totalCount } }', None, "observedSince is out of range", "BAD_USER_INPUT",
    ),
    "a time after year 9999 in UTC": (
        '{ runs(observedSince: "9999-12-31T23:59:59-05:00") { totalCount } }', None, "observedSince is out of range", "BAD_USER_INPUT",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
async def test_bad_argument_is_a_clear_user_error(shared_client, name):
    query, variables, fragment, code = CASES[name]
    assert_refused(await post(shared_client, query, variables), fragment, code)


async def test_a_refused_field_does_not_spoil_its_siblings(shared_client):
    client = shared_client
    """A bad argument on one nullable root field fails that field only; the others answer."""
    body = await post(client, f'{{ bad: node(id: "bm9wZQ==") {{ id }} good: workload(slug: "{RESNET18}") {{ slug }} }}')
    assert body["data"]["bad"] is None and body["data"]["good"] == {"slug": RESNET18}
    assert [e["extensions"]["code"] for e in body["errors"]] == ["BAD_USER_INPUT"]


async def test_many_root_fields_share_one_session(shared_client):
    client = shared_client
    """Root fields resolve concurrently; they must not race for the request's database connection
    (it failed with 'This session is provisioning a new connection' before the fix)."""
    query = (
        f'{{ a: workload(slug: "{RESNET18}") {{ slug }} b: runs {{ totalCount }} c: implementations {{ totalCount }} '
        'd: hardware { totalCount } e: environments { totalCount } f: recordFeed { totalCount } '
        'g: workloads { totalCount } h: records(hardware: "NVIDIA H100") { totalCount } }'
    )
    for _ in range(5):
        body = await post(client, query)
        assert "errors" not in body, body["errors"]
        assert body["data"]["a"] == {"slug": RESNET18} and body["data"]["b"]["totalCount"] > 0


async def test_missing_objects_are_null(client, db_url):
    body = await post(client, '{ workload(slug: "nope") { slug } }')
    assert "errors" not in body and body["data"] == {"workload": None}
    for missing in ("Run:999999", "Workload:999999", "Implementation:999999", "Hardware:999999", "Environment:999999"):
        body = await post(client, NODE, {"id": gid(missing)})
        assert "errors" not in body and body["data"] == {"node": None}, missing

    # A run that existed and was deleted: its ID now names nothing.
    conn = await asyncpg.connect(to_libpq_url(db_url))
    try:
        run_id = await conn.fetchval(
            "SELECT r.id FROM runs r WHERE NOT EXISTS (SELECT 1 FROM record_events e WHERE r.id IN (e.run_id, e.previous_run_id)) "
            "AND NOT EXISTS (SELECT 1 FROM runs s WHERE s.superseded_by_id = r.id) ORDER BY r.id LIMIT 1"
        )
        assert run_id is not None
        assert (await post(client, NODE, {"id": gid(f"Run:{run_id}")}))["data"]["node"] == {"id": gid(f"Run:{run_id}")}
        await conn.execute("DELETE FROM runs WHERE id = $1", run_id)
    finally:
        await conn.close()
    body = await post(client, NODE, {"id": gid(f"Run:{run_id}")})
    assert "errors" not in body and body["data"] == {"node": None}
    assert_refused(await post(client, COMPARE, {"ids": [gid("Run:1"), gid(f"Run:{run_id}")]}), "no run with ID")


@pytest.mark.parametrize(
    "path, status, fragment",
    [
        ("/workloads/nope.json", 404, "no workload with slug"),
        ("/workloads/a%00b.json", 400, "must not contain NUL"),
        ("/exports/runs.csv?workload=%00", 400, "workload must not contain NUL"),
        ("/exports/catalog.jsonl?hardware=a%00", 400, "hardware must not contain NUL"),
        ("/exports/runs.csv?colour=red", 400, "unknown filter(s): colour"),
        ("/exports/runs.csv?stale=maybe", 400, "stale must be true or false"),
        ("/exports/runs.csv?observed_since=yesterday", 400, "observed_since must be an ISO 8601 time"),
        ("/exports/runs.csv?observed_since=0001-01-01T00:00:00%2B05:00", 400, "observed_since is out of range"),
    ],
)
async def test_bad_arguments_to_the_plain_urls(shared_client, path, status, fragment):
    response = await shared_client.get(path)
    assert response.status_code == status, response.text[:300]
    assert fragment in response.json()["error"]


async def test_a_user_error_beside_database_reads_stays_a_user_error(client):
    """A field error cancels its sibling fields, mid-statement (graphql-core 3.3 cancels on error). That
    closed the request's connection, the commit at response start failed, and a bad `first` came back
    as a 503 'database unavailable'. Queries are now rolled back, not committed (found by perf/fuzz_graphql.py)."""
    query = (
        f'{{ workload(slug: "{RESNET18}") {{ databaseId comparisons {{ rows(first: 256) {{ run {{ id numTrials '
        "flags { reason } implementation { framework } } } } roofline { unavailableReason } } }"
    )
    for _ in range(3):
        response = await client.post("/graphql", json={"query": query})
        assert response.status_code == 200, response.text[:300]
        body = response.json()
        assert [(e["message"], e["extensions"]["code"]) for e in body["errors"]] == [
            ("first must be at most 100, got 256", "BAD_USER_INPUT")
        ]
    after = await client.post("/graphql", json={"query": f'{{ workload(slug: "{RESNET18}") {{ slug eligibleRunCount }} }}'})
    assert after.status_code == 200 and "errors" not in after.json()
