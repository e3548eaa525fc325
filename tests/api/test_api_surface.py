"""Connections, filters, Node, limits, caching headers, CORS and body limits."""

from __future__ import annotations

import json

import pytest

from tests.api.helpers import synthetic_records, write_records


async def _all_pages(graphql, field: str, args: str, page_size: int, selection: str = "databaseId") -> list:
    seen, after = [], None
    while True:
        after_arg = f', after: "{after}"' if after else ""
        data = await graphql(
            f"{{ {field}(first: {page_size}{after_arg}{args}) {{ totalCount pageInfo {{ hasNextPage endCursor }} edges {{ cursor node {{ {selection} }} }} }} }}"
        )
        conn = data[field]
        seen += [e["node"][selection.split()[0]] for e in conn["edges"]]
        if not conn["pageInfo"]["hasNextPage"]:
            return seen, conn["totalCount"]
        after = conn["pageInfo"]["endCursor"]


async def test_run_pagination_visits_every_row_once(db_url, graphql):
    await write_records(db_url, synthetic_records(23))
    for order in ("NEWEST", "FASTEST", "RECENTLY_OBSERVED"):
        ids, total = await _all_pages(graphql, "runs", f", orderBy: {order}", 4)
        assert total == 31
        assert len(ids) == len(set(ids)) == 31


async def test_workload_pagination_and_filters(graphql):
    ids, total = await _all_pages(graphql, "workloads", "", 1, "slug")
    assert ids == ["kernelbench-l3-p9-resnet18", "kernelbench-l3-p12-vgg19"] and total == 2
    q = "{ workloads(%s) { totalCount nodes { slug } } }"
    assert (await graphql(q % 'nameContains: "vgg"'))["workloads"]["totalCount"] == 1
    assert (await graphql(q % 'nameContains: "RESNET"'))["workloads"]["nodes"] == [{"slug": "kernelbench-l3-p9-resnet18"}]
    assert (await graphql(q % 'namePrefix: "res"'))["workloads"]["totalCount"] == 1
    assert (await graphql(q % 'namePrefix: "net"'))["workloads"]["totalCount"] == 0
    assert (await graphql(q % "kind: MODEL, level: 3"))["workloads"]["totalCount"] == 2
    assert (await graphql(q % "kind: OPERATOR"))["workloads"]["totalCount"] == 0
    assert (await graphql(q % 'measuredOn: "NVIDIA H100"'))["workloads"]["totalCount"] == 2
    assert (await graphql(q % 'measuredOn: "NVIDIA H100 PCIe 80GB"'))["workloads"]["totalCount"] == 2
    assert (await graphql(q % 'notMeasuredOn: "NVIDIA B200"'))["workloads"]["totalCount"] == 2
    assert (await graphql(q % 'measuredOn: "NVIDIA B200"'))["workloads"]["totalCount"] == 0
    assert (await graphql(q % 'nameContains: "%_\\\\"'))["workloads"]["totalCount"] == 0  # LIKE metacharacters are literal
    assert (await graphql(q % "orderBy: NAME"))["workloads"]["nodes"][0]["slug"] == "kernelbench-l3-p9-resnet18"


async def test_run_filters(db_url, graphql):
    await write_records(db_url, synthetic_records(3))
    q = "{ runs(%s) { totalCount } }"

    async def total(args: str) -> int:
        return (await graphql(q % args))["runs"]["totalCount"]

    assert await total('workload: "kernelbench-l3-p12-vgg19"') == 4
    assert await total('implementation: "torch_eager"') == 4
    assert await total('hardware: "NVIDIA H100 PCIe 80GB"') == 4
    assert await total('hardware: "nvidia h100"') == 11
    assert await total("evidence: MEASURED") == 3
    assert await total('licence: "MIT"') == 11
    assert await total('licence: "Apache-2.0"') == 0
    assert await total("stale: true") == 11  # the synthetic runs reuse the 2026-03-05 observation
    assert await total("stale: false") == 0
    assert await total('observedSince: "2026-03-06T00:00:00Z"') == 0
    assert await total('observedSince: "2026-03-05T00:00:00Z"') == 11
    assert await total("status: FAILED") == 0
    assert await total("eligibleOnly: true") == 11
    env = (await graphql('{ environments(hardware: "NVIDIA H100 PCIe 80GB") { nodes { id } } }'))["environments"]["nodes"]
    assert await total(f'environment: "{env[0]["id"]}"') == 4


@pytest.mark.parametrize(
    "query, fragment",
    [
        ("{ runs(first: 101) { totalCount } }", "first must be at most 100, got 101"),
        ("{ runs(first: -1) { totalCount } }", "first must be at least 1, got -1"),
        ("{ runs(first: 0) { totalCount } }", "first must be at least 1, got 0"),
        ('{ runs(after: "not-a-cursor") { totalCount } }', "malformed cursor"),
        ("{ runs(evidence: RUMOURED) { totalCount } }", "RUMOURED"),
        ('{ workloads(kind: "model") { totalCount } }', "WorkloadKind"),
        ('{ node(id: "bm9wZQ==") { id } }', "malformed ID"),
        ("{ runs(first: 1000000000) { totalCount } }", "first must be at most 100"),
    ],
)
async def test_bad_arguments_are_named(graphql, query, fragment):
    body = await graphql(query, expect_errors=True)
    assert body.get("data") in (None, {}) or body["data"].get("runs") is None
    assert any(fragment in e["message"] for e in body["errors"]), body["errors"]


async def test_cursor_of_another_list_is_refused(graphql):
    data = await graphql("{ workloads(first: 1) { pageInfo { endCursor } } }")
    cursor = data["workloads"]["pageInfo"]["endCursor"]
    body = await graphql(f'{{ runs(after: "{cursor}") {{ totalCount }} }}', expect_errors=True)
    assert "does not belong to this list" in body["errors"][0]["message"]


async def test_node_refetches_every_type(graphql):
    data = await graphql(
        """{ workload(slug: "kernelbench-l3-p9-resnet18") { id headline { run { id implementation { id }
             environment { id hardware { id } } } } } }"""
    )
    w = data["workload"]
    run = w["headline"]["run"]
    for global_id, typename in (
        (w["id"], "Workload"), (run["id"], "Run"), (run["implementation"]["id"], "Implementation"),
        (run["environment"]["id"], "Environment"), (run["environment"]["hardware"]["id"], "Hardware"),
    ):
        node = (await graphql(f'{{ node(id: "{global_id}") {{ __typename id }} }}'))["node"]
        assert node == {"__typename": typename, "id": global_id}
    import base64

    missing = base64.urlsafe_b64encode(b"Run:999999").decode()
    assert (await graphql(f'{{ node(id: "{missing}") {{ id }} }}'))["node"] is None


async def test_records_by_hardware(graphql):
    data = await graphql('{ records(hardware: "NVIDIA H100 PCIe 80GB") { totalCount nodes { workload { slug } records { latencyMs label } } } }')
    by_slug = {n["workload"]["slug"]: n["records"] for n in data["records"]["nodes"]}
    assert by_slug["kernelbench-l3-p9-resnet18"] == [{"latencyMs": 1.39, "label": "NVIDIA H100 · env 1"}]
    assert by_slug["kernelbench-l3-p12-vgg19"] == [{"latencyMs": 3.64, "label": "NVIDIA H100 · env 2"}]
    assert (await graphql('{ records(hardware: "NVIDIA B200") { totalCount } }'))["records"]["totalCount"] == 0
    # One workload's records on the hardware (the MCP server's fastest_implementation asks this way).
    one = await graphql('{ records(hardware: "NVIDIA H100 PCIe 80GB", workload: "kernelbench-l3-p12-vgg19") '
                        '{ totalCount nodes { workload { slug } records { latencyMs label } } } }')
    assert one["records"]["totalCount"] == 1
    assert one["records"]["nodes"] == [{"workload": {"slug": "kernelbench-l3-p12-vgg19"},
                                        "records": by_slug["kernelbench-l3-p12-vgg19"]}]
    none = await graphql('{ records(hardware: "NVIDIA H100 PCIe 80GB", workload: "no-such-workload") { totalCount } }')
    assert none["records"]["totalCount"] == 0


async def test_depth_alias_and_token_limits(graphql):
    deep = "{ workload(slug: \"x\") { headline { run { environment { hardware { sku } } } } } }"
    assert "errors" not in await graphql(deep, expect_errors=True)
    too_deep = '{ records(hardware: "x") { edges { node { workload { comparison { rows { run { environment { hardware { sku } } } } } } } } } }'
    body = await graphql(too_deep, expect_errors=True)
    assert "exceeds maximum operation depth of 8" in body["errors"][0]["message"]
    aliases = " ".join(f"a{i}: policy {{ version }}" for i in range(16))
    body = await graphql(f"{{ {aliases} }}", expect_errors=True)
    assert "aliases" in body["errors"][0]["message"]
    in_fragment = "fragment F on Query { " + " ".join(f"b{i}: policy {{ version }}" for i in range(16)) + " } { ...F }"
    body = await graphql(in_fragment, expect_errors=True)
    assert "aliases" in body["errors"][0]["message"]
    many_tokens = "{ " + " ".join("policy { version }" for _ in range(600)) + " }"
    body = await graphql(many_tokens, expect_errors=True)
    assert "token" in body["errors"][0]["message"].lower()


async def test_get_queries_have_etag_and_honour_if_none_match(client):
    params = {"query": '{ workload(slug: "kernelbench-l3-p9-resnet18") { eligibleRunCount } }'}
    first = await client.get("/graphql", params=params)
    assert first.status_code == 200 and first.json()["data"]["workload"]["eligibleRunCount"] == 4
    etag = first.headers["etag"]
    assert first.headers["cache-control"].startswith("public, max-age=")
    second = await client.get("/graphql", params=params, headers={"if-none-match": etag})
    assert second.status_code == 304 and second.content == b"" and second.headers["etag"] == etag
    twin = await client.get("/workloads/kernelbench-l3-p9-resnet18.json")
    assert (await client.get("/workloads/kernelbench-l3-p9-resnet18.json", headers={"if-none-match": twin.headers["etag"]})).status_code == 304
    other = await client.get("/workloads/kernelbench-l3-p9-resnet18.json", headers={"if-none-match": '"stale"'})
    assert other.status_code == 200


async def test_mutations_are_not_allowed_over_get(client):
    response = await client.get("/graphql", params={"query": "mutation { __typename }"})
    assert response.status_code in (400, 405)


async def test_cors_default_same_origin_only(client):
    response = await client.options(
        "/graphql", headers={"origin": "https://evil.example", "access-control-request-method": "POST"}
    )
    assert "access-control-allow-origin" not in response.headers


async def test_cors_allowed_origin(db_url):
    import httpx

    from kernelindex.settings import Settings
    from kernelindex.web.app import create_app

    app = create_app(Settings(cors_allowed_origins=["https://app.example"]), database_url=db_url)
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
            ok = await client.options("/graphql", headers={"origin": "https://app.example", "access-control-request-method": "POST"})
            refused = await client.options("/graphql", headers={"origin": "https://evil.example", "access-control-request-method": "POST"})
            simple = await client.get("/healthz", headers={"origin": "https://app.example"})
    assert ok.headers["access-control-allow-origin"] == "https://app.example"
    assert "access-control-allow-origin" not in refused.headers
    assert simple.headers["access-control-allow-origin"] == "https://app.example"


async def test_body_size_limit(client):
    big = json.dumps({"query": "{ policy { version } }", "padding": "x" * 2_100_000})
    response = await client.post("/graphql", content=big, headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert "over the limit" in response.json()["error"]
    assert response.headers["x-request-id"]


async def test_request_id_on_every_response(client):
    response = await client.get("/healthz", headers={"x-request-id": "abcdef0123456789"})
    assert response.headers["x-request-id"] == "abcdef0123456789"
    assert len((await client.get("/healthz")).headers["x-request-id"]) == 16


async def test_validation_runs_once_per_distinct_query(graphql, monkeypatch):
    """The limit rules are built once, so the validation cache hits (strawberry issue 4635)."""
    from kernelindex.graphql import validation

    calls = []
    original = validation.validate

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(validation, "validate", counting)
    validation._validate_kept.clear()
    query = "query($slug: String!) { workload(slug: $slug) { eligibleRunCount } }"
    for i in range(5):
        # Other variables each time: each request is executed (the response cache keys on them), on one document.
        await graphql(query, {"slug": f"kernelbench-l3-p12-vgg19-{i}"})
    assert len(calls) == 1
    await graphql('{ workload(slug: "kernelbench-l3-p9-resnet18") { eligibleRunCount } }')
    assert len(calls) == 2
    validation._validate_kept.clear()


async def test_introspection_off_in_production(db_url):
    import httpx

    from kernelindex.settings import Settings
    from kernelindex.web.app import create_app

    app = create_app(Settings(environment="production"), database_url=db_url)
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
            body = (await client.post("/graphql", json={"query": "{ __schema { types { name } } }"})).json()
            ok = (await client.post("/graphql", json={"query": "{ policy { version } }"})).json()
    assert "introspection" in body["errors"][0]["message"].lower()
    assert "errors" not in ok


async def test_startup_freezes_the_heap_and_collects_young_objects_rarely(app):
    import gc

    from kernelindex.gc_tuning import GC_YOUNG_THRESHOLD

    assert gc.get_threshold()[0] == GC_YOUNG_THRESHOLD
    assert gc.get_freeze_count() > 10_000  # the modules, the schema and the settings at least
