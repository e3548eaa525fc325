"""Relay both ways and Node everywhere (issue 18): a list read backward with last/before is the same
list read forward, pageInfo says which way more lies, mixed arguments are refused, and every Node
type refetches through `node(id:)`. Ids, cursors and documents not of their documented shape are
refused (issue 28): BAD_USER_INPUT, never an internal error or an empty page."""

from __future__ import annotations

import base64

import pytest

from tests.api.test_runs_connection import RESNET, varied  # noqa: F401  (the fixture)

PAGE = """query($first: Int, $after: String, $last: Int, $before: String, $order: RunOrder!) {
  runs(first: $first, after: $after, last: $last, before: $before, orderBy: $order, includeSuperseded: true) {
    edges { cursor node { databaseId } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}"""


async def _walk(graphql, order: str, backward: bool, size: int) -> tuple[list[int], list[dict]]:
    ids: list[int] = []
    infos: list[dict] = []
    cursor = None
    while True:
        variables = {"order": order, **({"last": size, "before": cursor} if backward else {"first": size, "after": cursor})}
        page = (await graphql(PAGE, variables))["runs"]
        infos.append(page["pageInfo"])
        got = [e["node"]["databaseId"] for e in page["edges"]]
        ids = got + ids if backward else ids + got
        more = page["pageInfo"]["hasPreviousPage" if backward else "hasNextPage"]
        if not more:
            return ids, infos
        cursor = page["pageInfo"]["startCursor" if backward else "endCursor"]
        assert len(infos) < 200, "the list does not end"


@pytest.mark.parametrize("order", ["FASTEST", "NEWEST", "RECENTLY_OBSERVED"])
async def test_backward_pages_are_the_forward_list(varied, graphql, order):  # noqa: F811
    forward, forward_infos = await _walk(graphql, order, backward=False, size=7)
    backward, backward_infos = await _walk(graphql, order, backward=True, size=7)
    assert len(forward) > 40 and backward == forward and len(set(forward)) == len(forward)
    # The first page forward has nothing before it; the first page backward nothing after it.
    assert forward_infos[0]["hasPreviousPage"] is False and backward_infos[0]["hasNextPage"] is False
    assert all(i["hasPreviousPage"] for i in forward_infos[1:]) and all(i["hasNextPage"] for i in backward_infos[1:])
    # A page backward from a forward page's end cursor is the items before it, in list order.
    page = (await graphql(PAGE, {"order": order, "first": 10}))["runs"]
    before_last = (await graphql(PAGE, {"order": order, "last": 3, "before": page["pageInfo"]["endCursor"]}))["runs"]
    assert [e["node"]["databaseId"] for e in before_last["edges"]] == forward[6:9]


@pytest.mark.parametrize("arguments, message", [
    ({"first": 2, "last": 2}, "not both"),
    ({"after": "x", "before": "y"}, "not both"),
    ({"first": 2, "before": "y"}, "pass last with it"),
    ({"last": 2, "after": "x"}, "pass first with it"),
    ({"last": 0}, "last must be at least 1"),
    ({"last": 101}, "last must be at most 100"),
])
async def test_mixed_or_bad_directions_are_refused(graphql, arguments, message):
    body = await graphql(PAGE, {"order": "NEWEST", **arguments}, expect_errors=True)
    assert body["data"] is None
    assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT" and message in body["errors"][0]["message"]


async def test_every_catalogue_connection_pages_backward(graphql):
    for field, key in (("workloads", "slug"), ("implementations", "slug"), ("hardware", "sku"), ("environments", "databaseId"),
                       ("recordFeed", "databaseId")):
        query = f"query($first: Int, $last: Int) {{ {field}(first: $first, last: $last) {{ nodes {{ {key} }} " \
                "pageInfo { hasNextPage hasPreviousPage } } }"
        whole = [n[key] for n in (await graphql(query, {"first": 100}))[field]["nodes"]]
        tail = (await graphql(query, {"last": 2}))[field]
        assert [n[key] for n in tail["nodes"]] == whole[-2:], field
        assert tail["pageInfo"]["hasPreviousPage"] is (len(whole) > 2) and tail["pageInfo"]["hasNextPage"] is False, field


NODES = f"""{{
  workload(slug: "{RESNET}") {{
    revisions {{ id sha256 }}
    sources {{ id name }}
    headline {{ run {{ protocol {{ id databaseId name }} }} }}
    recordHistory(first: 1) {{ nodes {{ id kind }} }}
  }}
  records(hardware: "NVIDIA H100", first: 1) {{ nodes {{ id workload {{ slug }} records {{ label }} }} }}
}}"""


async def test_every_node_refetches_by_its_id(graphql):
    data = await graphql(NODES)
    w = data["workload"]
    protocol = w["headline"]["run"]["protocol"]
    assert protocol["id"] != str(protocol["databaseId"])  # a global ID, not the bare database id
    found = {
        "WorkloadRevision": (w["revisions"][0]["id"], "... on WorkloadRevision { sha256 }", {"sha256": w["revisions"][0]["sha256"]}),
        "Source": (w["sources"][0]["id"], "... on Source { name }", {"name": w["sources"][0]["name"]}),
        "Protocol": (protocol["id"], "... on Protocol { name }", {"name": protocol["name"]}),
        "RecordEvent": (w["recordHistory"]["nodes"][0]["id"], "... on RecordEvent { kind }",
                        {"kind": w["recordHistory"]["nodes"][0]["kind"]}),
        "WorkloadRecords": (data["records"]["nodes"][0]["id"], "... on WorkloadRecords { workload { slug } records { label } }",
                            {"workload": data["records"]["nodes"][0]["workload"], "records": data["records"]["nodes"][0]["records"]}),
    }
    for type_name, (node_id, fragment, expected) in found.items():
        node = (await graphql(f'{{ node(id: "{node_id}") {{ __typename id {fragment} }} }}'))["node"]
        assert node == {"__typename": type_name, "id": node_id, **expected}, type_name


# -- strict ids, cursors and operations (issue 28) -------------------------------------------------

def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode()


JOB = "query($id: ID!) { job(id: $id) { databaseId } }"
JOBS_AFTER = "query($after: String) { jobs(first: 2, after: $after) { nodes { databaseId } } }"
FASTEST_AFTER = "query($after: String) { runs(first: 2, after: $after, orderBy: FASTEST) { nodes { databaseId } } }"


@pytest.mark.parametrize("job_id", [
    "²", "9" * 5000, "１２", "1_0", " 1", "+1", "01", "-1", "0", "1.0", "9223372036854775808", "",
    _b64("Job:²"), _b64("Job:1_0"), _b64("Run:1"), "Sm9iOjE",  # the last: Job:1 without its padding
])
async def test_a_job_id_not_of_the_documented_shape_is_bad_user_input(graphql, job_id):
    body = await graphql(JOB, {"id": job_id}, expect_errors=True)
    assert body["data"] == {"job": None}
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT", error
    assert len(error["message"]) < 200


async def test_a_job_id_of_the_documented_shape_that_names_nothing_is_null(graphql):
    for job_id in ("1", "9223372036854775807", _b64("Job:1")):
        assert await graphql(JOB, {"id": job_id}) == {"job": None}


@pytest.mark.parametrize(("query", "key"), [
    (JOBS_AFTER, "NaN"), (JOBS_AFTER, "Infinity"), (JOBS_AFTER, "-Infinity"), (JOBS_AFTER, "-1.5"), (JOBS_AFTER, "-1.0"),
    (JOBS_AFTER, "1e400"), (JOBS_AFTER, "9" * 5000),
    # Not ("NaN, 1"): a run whose stored figure is NaN (past the database's checks) gives that key, and a
    # client pages from it (test_planned_execution.test_a_run_whose_stored_figure_is_nan_is_paged_past).
    (FASTEST_AFTER, "-Infinity, 1"), (FASTEST_AFTER, "0.5, 1.5"), (FASTEST_AFTER, "0.5, NaN"),
])
async def test_a_cursor_key_no_page_of_the_list_gives_is_bad_user_input_not_an_empty_page(graphql, query, key):
    kind = "job" if query is JOBS_AFTER else "run:fastest"
    body = await graphql(query, {"after": _b64(f'["{kind}", [{key}]]')}, expect_errors=True)
    assert body["data"] is None or list(body["data"].values()) == [None]
    assert [e["extensions"]["code"] for e in body["errors"]] == ["BAD_USER_INPUT"]
    assert "malformed cursor" in body["errors"][0]["message"]


async def test_the_cursors_the_api_writes_still_page(graphql):
    page = (await graphql("{ runs(first: 3, orderBy: FASTEST) { pageInfo { endCursor } } }"))["runs"]
    after = await graphql(FASTEST_AFTER, {"after": page["pageInfo"]["endCursor"]})
    assert len(after["runs"]["nodes"]) == 2


@pytest.mark.parametrize("accept", ["application/json", "application/graphql-response+json"])
async def test_several_operations_without_an_operation_name_are_refused(client, accept):
    documents = [
        "query A { policy { version } } query B { workloads(first: 1) { totalCount } }",
        "{ policy { version } } query B { workloads(first: 1) { totalCount } }",
        "query A { policy { version } } mutation B { retractRun(id: \"1\", reason: \"x\") { ok } }",
    ]
    for document in documents:
        response = await client.post("/graphql", json={"query": document}, headers={"accept": accept})
        assert response.status_code == 400, response.text
        body = response.json()
        assert "data" not in body or body["data"] is None
        (error,) = body["errors"]
        assert error["extensions"]["code"] == "BAD_REQUEST" and "operationName" in error["message"]
        assert "holds 2 operations" in error["message"]
    # Named, the same document runs the operation named; one operation needs no name.
    named = await client.post("/graphql", json={"query": documents[0], "operationName": "B"}, headers={"accept": accept})
    assert named.status_code == 200 and set(named.json()["data"]) == {"workloads"}
    single = await client.get("/graphql", params={"query": "query A { policy { version } }"}, headers={"accept": accept})
    assert single.status_code == 200 and single.json()["data"]["policy"]["version"]


@pytest.mark.parametrize("arguments", ["first: 2", "last: 3", "first: 100", "suite: \"kernelbench\", first: 1",
                                       "nameContains: \"no such workload\"", "level: 1, orderBy: NAME, last: 1"])
async def test_the_workloads_total_read_with_the_first_page_is_the_count(graphql, arguments):
    """A page of workloads without a cursor reads totalCount in its own statement (keyset_page's
    total_with_page): the number of workloads the filter selects, as the separate count gives it on a
    page with a cursor, and as the whole list is long."""
    filters = ", ".join(part for part in arguments.split(", ") if not part.startswith(("first", "last")))
    whole = (await graphql(f"{{ workloads(first: 100{', ' + filters if filters else ''}) "
                           "{ nodes { slug } pageInfo { hasNextPage } } }"))["workloads"]
    assert whole["pageInfo"]["hasNextPage"] is False
    page = (await graphql(f"{{ workloads({arguments}) {{ totalCount edges {{ cursor }} }} }}"))["workloads"]
    assert page["totalCount"] == len(whole["nodes"])
    if page["edges"]:
        after = (await graphql(f"{{ workloads(first: 1, after: \"{page['edges'][0]['cursor']}\""
                               f"{', ' + filters if filters else ''}) {{ totalCount }} }}"))["workloads"]
        assert after["totalCount"] == page["totalCount"]
