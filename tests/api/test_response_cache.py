"""The response cache: a repeated query is served without executing, and never after a write it
does not reflect, whichever process wrote."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import httpx
import pytest

from kernelindex.db.changes import EVERYTHING, DataVersionReader
from kernelindex.settings import Settings
from kernelindex.web.app import create_app
from kernelindex.web.response_cache import ResponseCache, cache_key
from kernelindex.web.twins import WORKLOAD_PAGE_QUERY
from tests.api.helpers import make_token, synthetic_records, write_records
from tests.api.test_tokens import SUBMIT
from tests.conftest import FIXED_NOW

RESNET18 = {"slug": "kernelbench-l3-p9-resnet18"}
COUNT = "query ($slug: String!) { workload(slug: $slug) { eligibleRunCount } }"


async def post(client, query, variables=None, headers=None) -> httpx.Response:
    return await client.post("/graphql", json={"query": query, "variables": variables or {}}, headers=headers or {})


async def test_a_repeated_query_is_served_without_sql_and_byte_for_byte_the_same(app, client, count_statements):
    first = await post(client, WORKLOAD_PAGE_QUERY, RESNET18)
    with count_statements(app.state.engine) as statements:
        second = await post(client, WORKLOAD_PAGE_QUERY, RESNET18)
    assert first.status_code == second.status_code == 200
    assert second.content == first.content
    assert "errors" not in second.json()
    assert statements == []
    assert app.state.response_cache.hits == 1


async def test_variables_and_operation_are_part_of_the_key(app, client):
    resnet = (await post(client, COUNT, RESNET18)).json()
    vgg = (await post(client, COUNT, {"slug": "kernelbench-l3-p12-vgg19"})).json()
    assert resnet["data"]["workload"] is not None and vgg["data"]["workload"] is not None
    missing = (await post(client, COUNT, {"slug": "no-such-workload"})).json()
    assert missing["data"]["workload"] is None
    assert app.state.response_cache.hits == 0
    assert (await post(client, COUNT, RESNET18)).json() == resnet
    assert app.state.response_cache.hits == 1


async def test_a_write_from_another_process_is_seen_at_once(app, client, db_url):
    before = (await post(client, COUNT, RESNET18)).json()["data"]["workload"]["eligibleRunCount"]
    await write_records(db_url, synthetic_records(3))  # the ingest path, on its own engine
    after = (await post(client, COUNT, RESNET18)).json()["data"]["workload"]["eligibleRunCount"]
    assert after == before + 3


async def test_a_mutation_is_never_cached_and_its_write_is_seen_by_the_next_read(app, client, db_url):
    token = await make_token(db_url)
    headers = {"Authorization": f"Bearer {token}"}
    before = (await post(client, COUNT, RESNET18)).json()["data"]["workload"]["eligibleRunCount"]
    assert (await post(client, COUNT, RESNET18)).json()["data"]["workload"]["eligibleRunCount"] == before
    first = (await post(client, SUBMIT, {"records": synthetic_records(1)}, headers)).json()
    second = (await post(client, SUBMIT, {"records": synthetic_records(1, start=1)}, headers)).json()
    assert first["data"]["submitRuns"]["inserted"] == 1
    assert second["data"]["submitRuns"]["inserted"] == 1  # executed, not replayed from the cache
    assert (await post(client, COUNT, RESNET18)).json()["data"]["workload"]["eligibleRunCount"] == before + 2


async def test_errors_are_not_cached(app, client):
    bad = "{ workloads(first: 1000) { totalCount } }"
    for _ in range(2):
        body = (await post(client, bad)).json()
        assert "errors" in body
    assert app.state.response_cache.hits == 0
    assert len(app.state.response_cache) == 0


async def test_get_queries_are_cached_too_and_keep_their_etag(app, client):
    params = {"query": "{ workloads(first: 2) { totalCount } }"}
    first = await client.get("/graphql", params=params)
    second = await client.get("/graphql", params=params, headers={"If-None-Match": first.headers["etag"]})
    assert first.status_code == 200 and second.status_code == 304
    assert app.state.response_cache.hits == 1


async def test_entries_expire_after_the_ttl_of_the_app_clock(db_url, count_statements):
    now = [FIXED_NOW]
    application = create_app(Settings(response_cache_ttl_s=60), database_url=db_url, clock=lambda: now[0])
    async with application.router.lifespan_context(application):
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            await post(client, COUNT, RESNET18)
            now[0] = FIXED_NOW + timedelta(seconds=53)  # under the shortest lifetime, 90 % of the TTL
            with count_statements(application.state.engine) as cached:
                await post(client, COUNT, RESNET18)
            now[0] = FIXED_NOW + timedelta(seconds=61)
            with count_statements(application.state.engine) as expired:
                await post(client, COUNT, RESNET18)
    assert cached == [] and len(expired) > 0


async def test_the_cache_can_be_turned_off(db_url, count_statements):
    """Both caches off: every request executes, and nothing reads the data version (the read model
    alone would: tests/api/test_read_model.py)."""
    application = create_app(Settings(response_cache_entries=0, read_model_workloads=0), database_url=db_url,
                             clock=lambda: FIXED_NOW)
    async with application.router.lifespan_context(application):
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            await post(client, COUNT, RESNET18)
            with count_statements(application.state.engine) as statements:
                await post(client, COUNT, RESNET18)
    assert len(statements) > 0
    assert application.state.data_version.reads == 0


async def test_concurrent_requests_share_version_reads(app):
    reader: DataVersionReader = app.state.data_version
    versions = await asyncio.gather(*(reader.current() for _ in range(50)))
    assert len(set(versions)) == 1 and versions[0] is not None
    assert reader.reads <= 2  # the first read, and one shared by everyone who arrived during it


async def test_an_unreachable_database_reads_as_no_version():
    reader = DataVersionReader("postgresql://kernelindex@127.0.0.1:1/kernelindex", timeout_s=1)
    try:
        assert await reader.current() is None
    finally:
        await reader.close()


# -- the pieces on their own -------------------------------------------------------------------------


def test_only_query_operations_have_a_key():
    assert cache_key("{ workloads { totalCount } }", None, None) is not None
    assert cache_key("query Q { workloads { totalCount } }", "Q", {}) is not None
    assert cache_key("mutation { retractRun(id: 1, reason: \"x\") { ok } }", None, None) is None
    doc = "query Q { workloads { totalCount } } mutation M { retractRun(id: 1, reason: \"x\") { ok } }"
    assert cache_key(doc, "Q", None) is not None and cache_key(doc, "M", None) is None
    assert cache_key("{ unclosed", None, None) is None
    assert cache_key("x" * 30_000, None, None) is None
    assert cache_key("{ a }", None, {"b": 1, "a": 2}) == cache_key("{ a }", None, {"a": 2, "b": 1})


def test_a_newer_version_drops_older_entries_and_late_results_are_not_stored():
    cache = ResponseCache(max_entries=10, max_bytes=10_000, ttl_s=60)
    key = cache_key("{ a }", None, None)
    cache.put(key, 1, FIXED_NOW, "one")
    assert cache.get(key, 1, FIXED_NOW) == "one"
    assert cache.get(key, 2, FIXED_NOW) is None
    cache.put(key, 1, FIXED_NOW, "late")  # computed before version 2 was seen
    assert len(cache) == 0 and cache.get(key, 2, FIXED_NOW) is None


def test_the_cache_is_bounded_by_entries_and_bytes():
    by_count = ResponseCache(max_entries=3, max_bytes=1_000_000, ttl_s=60)
    keys = [cache_key(f"{{ a{i} }}", None, None) for i in range(5)]
    for key in keys:
        by_count.put(key, 1, FIXED_NOW, "x")
    assert len(by_count) == 3 and by_count.get(keys[0], 1, FIXED_NOW) is None and by_count.get(keys[4], 1, FIXED_NOW) == "x"
    by_bytes = ResponseCache(max_entries=100, max_bytes=250, ttl_s=60)
    for key in keys:
        by_bytes.put(key, 1, FIXED_NOW, "y" * 100)
    assert len(by_bytes) == 2
    by_bytes.put(cache_key("{ big }", None, None), 1, FIXED_NOW, "z" * 1000)  # larger than the whole cache
    assert len(by_bytes) == 2


async def test_the_json_twin_is_cached_and_follows_writes(app, client, db_url, count_statements):
    url = "/workloads/kernelbench-l3-p9-resnet18.json"
    first = await client.get(url)
    with count_statements(app.state.engine) as statements:
        second = await client.get(url)
    assert first.status_code == second.status_code == 200
    assert second.content == first.content and statements == []
    graphql_page = (await post(client, WORKLOAD_PAGE_QUERY, RESNET18)).json()["data"]["workload"]
    assert first.json() == graphql_page
    await write_records(db_url, synthetic_records(2))
    third = (await client.get(url)).json()
    assert third["eligibleRunCount"] == first.json()["eligibleRunCount"] + 2
    assert (await client.get("/workloads/no-such-workload.json")).status_code == 404


@pytest.mark.parametrize("path", ["/exports/runs.csv?workload=kernelbench-l3-p9-resnet18", "/exports/catalog.jsonl"])
async def test_small_exports_are_cached_and_follow_writes(app, client, db_url, count_statements, path):
    first = await client.get(path)
    with count_statements(app.state.export_engine) as statements:  # exports run on their own pool
        second = await client.get(path)
    assert first.status_code == second.status_code == 200
    assert second.content == first.content and statements == []
    assert second.headers["content-type"] == first.headers["content-type"]
    assert second.headers["content-disposition"] == first.headers["content-disposition"]
    await write_records(db_url, synthetic_records(2))
    third = await client.get(path)
    assert len(third.text.splitlines()) >= len(first.text.splitlines()) + 2


async def test_an_export_over_the_size_limit_streams_every_time(app, client, count_statements, monkeypatch):
    from kernelindex.web import exports

    monkeypatch.setattr(exports, "CACHEABLE_EXPORT_BYTES", 100)
    first = await client.get("/exports/runs.csv")
    with count_statements(app.state.export_engine) as statements:
        second = await client.get("/exports/runs.csv")
    assert second.content == first.content and len(first.content) > 100
    assert len(statements) > 0


async def test_concurrent_misses_of_one_key_execute_once(app, client, count_statements):
    with count_statements(app.state.engine) as statements:
        bodies = await asyncio.gather(*(post(client, WORKLOAD_PAGE_QUERY, RESNET18) for _ in range(8)))
    assert len({b.content for b in bodies}) == 1 and "errors" not in bodies[0].json()
    with count_statements(app.state.engine) as one:
        app.state.response_cache._observe(10**12)  # a newer version: everything is dropped
        app.state.read_model.advance(10**12, None)  # and the page's values computed again too
        await post(client, WORKLOAD_PAGE_QUERY, RESNET18)
    assert len(statements) <= len(one)  # eight requests, one execution
    assert app.state.response_cache.shared + app.state.response_cache.hits >= 7


async def test_a_failed_execution_lets_the_waiting_requests_run_their_own():
    cache = ResponseCache(max_entries=10, max_bytes=10_000, ttl_s=60)
    key = cache_key("{ a }", None, None)
    release = asyncio.Event()
    calls = []

    async def failing():
        calls.append("leader")
        await release.wait()
        raise RuntimeError("boom")

    async def working():
        calls.append("follower")
        return "body", EVERYTHING, None

    leader = asyncio.create_task(cache.get_or_compute(key, 1, FIXED_NOW, failing))
    await asyncio.sleep(0)
    follower = asyncio.create_task(cache.get_or_compute(key, 1, FIXED_NOW, working))
    await asyncio.sleep(0)
    release.set()
    with pytest.raises(RuntimeError):
        await leader
    answer = await follower
    assert (answer.body, answer.hit) == ("body", False)  # executed for itself
    assert calls == ["leader", "follower"]


def test_lifetimes_are_spread_over_the_last_tenth_of_the_ttl_per_key():
    from kernelindex.web.response_cache import CacheKey, ResponseCache

    cache = ResponseCache(max_entries=1000, max_bytes=10_000_000, ttl_s=100)
    keys = [CacheKey(f"{{ q{i} }}", None, "{}") for i in range(200)]
    for key in keys:
        cache.put(key, 1, FIXED_NOW, "body")

    def alive(seconds: float) -> int:
        return sum(cache.get(key, 1, FIXED_NOW + timedelta(seconds=seconds)) is not None for key in keys)

    assert alive(89.9) == 200 and alive(100.1) == 0
    assert 50 < alive(95) < 150  # spread, not all at one instant
    # The same key always gets the same lifetime.
    again = ResponseCache(max_entries=1000, max_bytes=10_000_000, ttl_s=100)
    for key in keys:
        again.put(key, 1, FIXED_NOW, "body")
    assert [again.get(k, 1, FIXED_NOW + timedelta(seconds=95)) for k in keys] == \
        [cache.get(k, 1, FIXED_NOW + timedelta(seconds=95)) for k in keys]
