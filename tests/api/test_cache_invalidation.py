"""Invalidation follows the data: a write to one workload drops only the cached responses that read it
(and whatever depends on everything), a new catalogue row only what reads its table whole (and the
pages of the workloads whose new runs name it), an edit of a catalogue row what read catalogue rows,
and no response is ever served after a committed write it does not show, whichever process wrote."""

from __future__ import annotations

import asyncio
import copy
from datetime import timedelta

import asyncpg
import httpx
import pytest

from kernelindex.db import changes
from kernelindex.db.changes import EVERYTHING, Change, Dependencies, changes_between
from kernelindex.db.urls import to_libpq_url
from kernelindex.services.workload_page import page_dependencies
from kernelindex.settings import Settings
from kernelindex.web.app import create_app
from kernelindex.web.response_cache import ResponseCache, cache_key, root_fields
from kernelindex.web.twins import WORKLOAD_PAGE_QUERY, twin_key
from tests.api.helpers import make_token, synthetic_records
from tests.api.other_process import run_elsewhere
from tests.api.test_tokens import SUBMIT
from tests.conftest import FIXED_NOW

A = "kernelbench-l3-p9-resnet18"
B = "kernelbench-l3-p12-vgg19"
RUNS = "query ($slug: String!) { workload(slug: $slug) { eligibleRunCount runs(first: 50) { totalCount edges { node { meanMs } } } } }"
DESCRIPTION = "query ($slug: String!) { workload(slug: $slug) { description } }"
LIST = "{ workloads(first: 5) { totalCount edges { node { slug } } } }"


async def post(client, query, variables=None, headers=None) -> httpx.Response:
    return await client.post("/graphql", json={"query": query, "variables": variables or {}}, headers=headers or {})


async def page(client, query: str, slug: str) -> tuple[dict, str]:
    response = await post(client, query, {"slug": slug})
    body = response.json()
    assert response.status_code == 200 and "errors" not in body, body
    return body["data"]["workload"], response.headers["x-cache"]


async def write_runs(db_url: str, records: list[dict]):
    """The ingest path on its own engine: the writer refreshes the cohorts it touched, nothing else."""
    from kernelindex.db.engine import in_own_transaction
    from kernelindex.ingest.records import RunRecord
    from kernelindex.ingest.writer import RunWriter

    async def work(session):
        return await RunWriter().write(session, [RunRecord(r, "test", f"line {i + 1}") for i, r in enumerate(records)])

    return await in_own_transaction(db_url, work)


def slower(records: list[dict], by_ms: float) -> list[dict]:
    """The same runs (same natural keys, so the same environments and sources) with other figures."""
    out = copy.deepcopy(records)
    for rec in out:
        stats = rec["statistics"]
        for name in ("mean", "min", "max"):
            stats[name] += by_ms
    return out


async def sql(db_url: str, statement: str, *args):
    conn = await asyncpg.connect(to_libpq_url(db_url))
    try:
        return await conn.execute(statement, *args)
    finally:
        await conn.close()


async def version_and_log(db_url: str) -> tuple[int, list[dict]]:
    conn = await asyncpg.connect(to_libpq_url(db_url))
    try:
        version = await conn.fetchval("SELECT version FROM data_version WHERE id = 1")
        rows = await conn.fetch("SELECT version, workload_ids, catalogue_tables, everything FROM change_log ORDER BY version")
        return version, [dict(r) for r in rows]
    finally:
        await conn.close()


async def workload_id(db_url: str, slug: str) -> int:
    conn = await asyncpg.connect(to_libpq_url(db_url))
    try:
        return await conn.fetchval("SELECT id FROM workloads WHERE slug = $1", slug)
    finally:
        await conn.close()


# -- one workload's write ---------------------------------------------------------------------------


async def test_a_write_to_one_workload_leaves_the_other_a_hit_and_makes_its_own_a_miss(app, client, db_url):
    first = synthetic_records(3, slug=A)
    await write_runs(db_url, first)  # new environments and a new source: a catalogue change, before we look
    before_a, x_a = await page(client, RUNS, A)
    before_b, x_b = await page(client, RUNS, B)
    assert (x_a, x_b) == ("miss", "miss")
    assert [x for _, x in [await page(client, RUNS, A), await page(client, RUNS, B)]] == ["hit", "hit"]

    version, _ = await version_and_log(db_url)
    summary = await write_runs(db_url, slower(first, 0.5))  # supersedes A's three runs: A alone changes
    assert summary.superseded == 3
    after_version, log = await version_and_log(db_url)
    assert after_version == version + 1
    assert log[-1]["workload_ids"] == [await workload_id(db_url, A)] and log[-1]["catalogue_tables"] == []

    after_b, x_b = await page(client, RUNS, B)
    after_a, x_a = await page(client, RUNS, A)
    assert (x_a, x_b) == ("miss", "hit")
    assert after_b == before_b
    means_before = {round(e["node"]["meanMs"], 6) for e in before_a["runs"]["edges"]}
    means = {round(e["node"]["meanMs"], 6) for e in after_a["runs"]["edges"]}
    written = {round(r["statistics"]["mean"], 6) for r in first}
    assert written <= means_before and not written & means  # the superseded runs are gone from the page
    assert {round(m + 0.5, 6) for m in written} <= means  # and their successors are on it
    assert app.state.response_cache.invalidated >= 1


async def test_the_json_twin_is_keyed_on_its_workload(app, client, db_url):
    first = synthetic_records(2, slug=A)
    await write_runs(db_url, first)
    for slug in (A, B):
        assert (await client.get(f"/workloads/{slug}.json")).headers["x-cache"] == "miss"
        assert (await client.get(f"/workloads/{slug}.json")).headers["x-cache"] == "hit"
    cache: ResponseCache = app.state.response_cache
    assert cache.dependencies(twin_key(A)) == page_dependencies({await workload_id(db_url, A)})
    await write_runs(db_url, slower(first, 0.25))
    assert (await client.get(f"/workloads/{B}.json")).headers["x-cache"] == "hit"
    a = await client.get(f"/workloads/{A}.json")
    assert a.headers["x-cache"] == "miss" and a.status_code == 200


async def test_a_catalogue_write_invalidates_what_read_the_catalogue(app, client, db_url):
    for slug in (A, B):
        await page(client, RUNS, slug)
    await post(client, LIST)
    assert [x for _, x in [await page(client, RUNS, A), await page(client, RUNS, B)]] == ["hit", "hit"]
    await sql(db_url, "UPDATE hardware SET memory_gb = memory_gb + 1 WHERE id = (SELECT min(id) FROM hardware)")
    assert [x for _, x in [await page(client, RUNS, A), await page(client, RUNS, B)]] == ["miss", "miss"]
    assert (await post(client, LIST)).headers["x-cache"] == "miss"


async def test_a_workload_write_invalidates_lists_and_unscoped_queries(app, client, db_url):
    query = "{ runs(first: 3) { totalCount } }"
    assert (await post(client, LIST)).headers["x-cache"] == "miss"
    assert (await post(client, query)).headers["x-cache"] == "miss"
    assert (await post(client, LIST)).headers["x-cache"] == "hit"
    await sql(db_url, "UPDATE workloads SET description = coalesce(description, '') || '.' WHERE slug = $1", B)
    assert (await post(client, LIST)).headers["x-cache"] == "miss"
    assert (await post(client, query)).headers["x-cache"] == "miss"


async def test_a_no_op_write_moves_no_version_and_keeps_every_entry(app, client, db_url):
    records = synthetic_records(2, slug=A)
    await write_runs(db_url, records)
    await page(client, RUNS, A)
    version, _ = await version_and_log(db_url)
    summary = await write_runs(db_url, records)  # every record "unchanged"
    assert summary.unchanged == 2 and summary.inserted == 0
    assert (await version_and_log(db_url))[0] == version
    assert (await page(client, RUNS, A))[1] == "hit"


async def count_bests(db_url: str) -> int:
    conn = await asyncpg.connect(to_libpq_url(db_url))
    try:
        return await conn.fetchval("SELECT count(*) FROM cohort_bests")
    finally:
        await conn.close()


async def test_a_refresh_that_changes_nothing_moves_no_version(app, client, db_url):
    """Rebuilding the records of workloads whose records are already right (a no-op seed, an
    unchanged KernelBench re-import) writes no row, so every cached entry stays."""
    from kernelindex.db.engine import in_own_transaction
    from kernelindex.services.records import refresh_all_records, refresh_workloads

    await write_runs(db_url, synthetic_records(3, slug=A))
    await in_own_transaction(db_url, refresh_all_records)  # the records as a rebuild makes them
    await page(client, RUNS, A)
    version, _ = await version_and_log(db_url)
    bests = await count_bests(db_url)
    for _ in range(2):
        await in_own_transaction(db_url, refresh_all_records)
        await in_own_transaction(db_url, lambda session: refresh_workloads(session, [1, 2, 3]))
    assert (await version_and_log(db_url))[0] == version
    assert await count_bests(db_url) == bests
    assert (await page(client, RUNS, A))[1] == "hit"
    # And a refresh that does change a best still moves it (the write is not lost).
    await sql(db_url, "UPDATE cohort_bests SET run_count = run_count + 1 WHERE workload_id = $1", await workload_id(db_url, A))
    moved, _ = await version_and_log(db_url)
    await in_own_transaction(db_url, refresh_all_records)
    assert (await version_and_log(db_url))[0] == moved + 1
    assert await count_bests(db_url) == bests


# -- what each response depends on ------------------------------------------------------------------


async def test_dependencies_recorded_per_response(app, client, db_url):
    cache: ResponseCache = app.state.response_cache
    a, b = await workload_id(db_url, A), await workload_id(db_url, B)
    both = f'query {{ a: workload(slug: "{A}") {{ name }} b: workload(slug: "{B}") {{ name }} }}'
    fragment = "query Q($slug: String!) { ...Page } fragment Page on Query { workload(slug: $slug) { name } }"
    mixed = "query ($slug: String!) { workload(slug: $slug) { name } workloads(first: 1) { totalCount } }"
    missing = "query { workload(slug: \"no-such-workload\") { name } }"
    cases = [
        (RUNS, {"slug": A}, None, Dependencies(frozenset({a}), catalogue=True, catalogue_lists=frozenset({"hardware"}))),
        (both, {}, None, page_dependencies({a, b})),
        (fragment, {"slug": B}, "Q", page_dependencies({b})),
        (mixed, {"slug": A}, None, EVERYTHING),
        (missing, {}, None, EVERYTHING),  # a workload created later would answer it
        (LIST, {}, None, EVERYTHING),
        ("{ node(id: \"V29ya2xvYWQ6MQ==\") { id } }", {}, None, EVERYTHING),
    ]
    for query, variables, operation, expected in cases:
        response = await client.post("/graphql", json={"query": query, "variables": variables, "operationName": operation})
        assert response.status_code == 200 and "errors" not in response.json(), response.json()
        key = cache_key(query, operation, variables)
        assert key is not None and cache.dependencies(key) == expected, query


def test_root_fields_are_read_through_fragments():
    assert root_fields("{ a: workload(slug: \"x\") { name } __typename }", None) == {"workload", "__typename"}
    assert root_fields("query { ... on Query { workloads { totalCount } } }", None) == {"workloads"}
    assert root_fields("query { ...F } fragment F on Query { ...G } fragment G on Query { runs { totalCount } }", None) == {"runs"}
    assert root_fields("query { ...Missing }", None) == {"#unknown-fragment:Missing"}
    assert root_fields("mutation { retractRun(id: 1, reason: \"x\") { ok } }", None) is None


# Every field reachable from `Workload` whose resolver takes `info` (so it can reach the session, the
# loaders or the clock), each reviewed: it reads only rows of the workload it hangs under (its runs,
# revisions, cohort bests, record events, flags and reviews of its runs, suite snapshot members) and
# the catalogue. A response rooted at `workload(slug:)` is cached per workload on that promise
# (kernelindex.web.response_cache.WORKLOAD_ROOT_FIELDS). A new field here that reads anything else
# (another workload's runs, an implementation's runs across workloads) would serve stale pages: make
# the root field unscoped instead, or leave the field out of Workload's subtree.
REVIEWED_WORKLOAD_FIELDS = {
    "Workload": {
        "referenceSource", "referenceSourceSizeBytes", "referenceSourceTruncated", "sourceSha256", "revisions",
        "canonicalConfiguration", "semantics", "semanticsError", "identity", "eligibleRunCount",
        "eligibleRunCountDisplay", "heldRunCount", "heldSummary", "headline", "records", "comparison", "comparisons", "implementations",
        "notMeasured", "headroom", "roofline", "floors", "recordHistory", "sources", "lastObserved",
        "lastObservedDisplay", "runs",
        # its cohort bests at another configuration or metric, and their cohorts' runs (eligibility-v3)
        "configurations", "recordsAt", "comparisonsAt",
    },
    # trustLevel: the measurements of its own subject (same workload revision) and their holds. suite, level,
    # problemNumber, workloadName: the run's own workload row, which under workload(slug:) is that very workload.
    "Run": {"workloadSlug", "suite", "level", "problemNumber", "workloadName", "revision", "stale", "flags", "reviewStatus",
            "reviewState", "trustLevel"},
    "WorkloadRevision": {"snapshots"},
    "Comparison": {"rows"},
    "ComparisonRow": {"stale"},
}


def test_every_field_under_a_workload_that_can_read_is_reviewed():
    from graphql import GraphQLInterfaceType, GraphQLObjectType, get_named_type

    from kernelindex.graphql.schema import build_schema

    schema = build_schema(Settings())
    types = schema._schema.type_map
    found: dict[str, set[str]] = {}
    seen: set[str] = set()
    stack = [types["Query"].fields["workload"].type]
    while stack:
        named = get_named_type(stack.pop())
        if named.name in seen or not isinstance(named, (GraphQLObjectType, GraphQLInterfaceType)):
            continue
        seen.add(named.name)
        definition = schema.get_type_by_name(named.name)
        by_name = {schema.config.name_converter.get_graphql_name(f): f for f in definition.fields}
        for name, field in named.fields.items():
            stack.append(field.type)
            resolver = by_name[name].base_resolver
            if resolver is not None and resolver.info_parameter is not None:
                found.setdefault(named.name, set()).add(name)
    assert found == REVIEWED_WORKLOAD_FIELDS


# -- no stale read, whoever wrote ---------------------------------------------------------------------


async def test_the_writer_reads_its_own_write_at_once(app, client, db_url):
    token = await make_token(db_url)
    before, _ = await page(client, RUNS, A)
    await page(client, RUNS, B)
    response = await post(client, SUBMIT, {"records": synthetic_records(1, slug=A, start=40)}, {"Authorization": f"Bearer {token}"})
    assert response.json()["data"]["submitRuns"]["inserted"] == 1
    assert "x-cache" not in response.headers  # mutations are never cached
    after, x = await page(client, RUNS, A)
    assert x == "miss" and after["eligibleRunCount"] == before["eligibleRunCount"] + 1
    # The new run's environment is new to the catalogue, and no page but A's names it: B's stays.
    assert (await page(client, RUNS, B))[1] == "hit"


async def test_two_processes_each_see_the_others_writes(db_url):
    token = await make_token(db_url)
    apps = [create_app(Settings(), database_url=db_url, clock=lambda: FIXED_NOW) for _ in range(2)]
    async with apps[0].router.lifespan_context(apps[0]), apps[1].router.lifespan_context(apps[1]):
        clients = [httpx.AsyncClient(transport=httpx.ASGITransport(app=a), base_url="http://testserver") for a in apps]
        one, two = clients
        try:
            first = synthetic_records(2, slug=A, start=60)
            response = await post(one, SUBMIT, {"records": first}, {"Authorization": f"Bearer {token}"})
            assert response.json()["data"]["submitRuns"]["inserted"] == 2
            for client in clients:
                for slug in (A, B):
                    await page(client, RUNS, slug)
            before, x = await page(two, RUNS, A)
            assert x == "hit"
            # Process one supersedes A's two runs; process two drops A's entry, keeps B's.
            response = await post(one, SUBMIT, {"records": slower(first, 1.0)}, {"Authorization": f"Bearer {token}"})
            assert response.json()["data"]["submitRuns"]["superseded"] == 2
            after, x = await page(two, RUNS, A)
            assert x == "miss" and after != before
            assert (await page(two, RUNS, B))[1] == "hit"
            assert (await page(one, RUNS, B))[1] == "hit"
            assert await page(one, RUNS, A) == (after, "miss")
        finally:
            for client in clients:
                await client.aclose()


async def test_no_stale_read_in_a_tight_write_read_loop(app, client, db_url):
    conn = await asyncpg.connect(to_libpq_url(db_url))
    try:
        await page(client, DESCRIPTION, B)
        for i in range(40):
            await conn.execute("UPDATE workloads SET description = $1 WHERE slug = $2", f"round {i}", A)
            seen, x = await page(client, DESCRIPTION, A)
            assert seen["description"] == f"round {i}" and x == "miss"
            again, x = await page(client, DESCRIPTION, A)
            assert again == seen and x == "hit"
            assert (await page(client, DESCRIPTION, B))[1] == "hit"
    finally:
        await conn.close()


async def test_no_stale_read_with_concurrent_writes_and_reads(app, client, db_url):
    """Reads started after a commit show it, while other reads and writes are in flight."""
    committed = -1
    stop = asyncio.Event()
    problems: list[str] = []

    async def writer():
        nonlocal committed
        conn = await asyncpg.connect(to_libpq_url(db_url))
        try:
            for i in range(60):
                await conn.execute("UPDATE workloads SET description = $1 WHERE slug = $2", str(i), A)
                committed = i
                await asyncio.sleep(0.002)
        finally:
            stop.set()
            await conn.close()

    async def reader():
        while not stop.is_set():
            floor = committed
            seen, _ = await page(client, DESCRIPTION, A)
            value = int(seen["description"]) if (seen["description"] or "").isdigit() else -1
            if value < floor:
                problems.append(f"read {value} after {floor} had committed")

    await asyncio.gather(writer(), *(reader() for _ in range(4)))
    assert problems == []


# -- a new catalogue row ------------------------------------------------------------------------------

SOURCES = ("query ($slug: String!) { workload(slug: $slug) { eligibleRunCount "
           "runs(first: 100) { totalCount edges { node { source { name revision } } } } } }")
SOURCE_LIST = "{ sources { name } }"
NEW_SOURCE = "Synthetic source of its own"


def on_a_new_source(records: list[dict], revision: str) -> list[dict]:
    """The records, each from a source revision no row names yet: new sources and source_snapshots rows
    (and new environments: synthetic_records' pools), written with the runs in one transaction."""
    for rec in records:
        rec["source"] = {"name": NEW_SOURCE, "revision": revision}
    return records


def revisions(workload: dict) -> set[tuple[str, str]]:
    """The sources (name, revision) of the workload's runs."""
    return {(e["node"]["source"]["name"], e["node"]["source"]["revision"]) for e in workload["runs"]["edges"]}


async def log_of_last_version(db_url: str) -> dict:
    conn = await asyncpg.connect(to_libpq_url(db_url))
    try:
        row = await conn.fetchrow("SELECT workload_ids, catalogue_tables, catalogue_edited, everything FROM change_log "
                                  "ORDER BY version DESC LIMIT 1")
        return {"workloads": sorted(row[0]), "tables": sorted(row[1]), "edited": sorted(row[2]), "everything": row[3]}
    finally:
        await conn.close()


@pytest.mark.parametrize("order", ["read, then write", "write, then read"])
async def test_a_new_catalogue_row_evicts_only_what_reads_it(app, client, db_url, order):
    """One new run of B on a source revision of its own, committed by another process: B's page (which
    names the new rows) and the lists go; A's page, which nothing new is shown on, is still a hit."""
    a, b = await workload_id(db_url, A), await workload_id(db_url, B)
    if order == "write, then read":
        await run_elsewhere(db_url, records=on_a_new_source(synthetic_records(1, slug=B, start=70), "r1"))
    before_a, _ = await page(client, SOURCES, A)
    before_b, _ = await page(client, SOURCES, B)
    assert (await post(client, SOURCE_LIST)).headers["x-cache"] == "miss"
    assert [x for _, x in [await page(client, SOURCES, A), await page(client, SOURCES, B)]] == ["hit", "hit"]
    assert (await post(client, SOURCE_LIST)).headers["x-cache"] == "hit"

    revision = "r2" if order == "write, then read" else "r1"
    await run_elsewhere(db_url, records=on_a_new_source(synthetic_records(1, slug=B, start=80), revision))
    log = await log_of_last_version(db_url)
    assert log["workloads"] == [b] and log["edited"] == [] and not log["everything"], log
    assert {"source_snapshots", "environments"} <= set(log["tables"]), log

    after_a, x_a = await page(client, SOURCES, A)
    after_b, x_b = await page(client, SOURCES, B)
    assert (x_a, x_b) == ("hit", "miss")
    assert after_a == before_a and a != b
    assert revisions(after_b) == revisions(before_b) | {(NEW_SOURCE, revision)}
    assert after_b["runs"]["totalCount"] == before_b["runs"]["totalCount"] + 1
    # The list of sources reads the table whole: it goes.
    listed = await post(client, SOURCE_LIST)
    assert listed.headers["x-cache"] == "miss" and NEW_SOURCE in listed.text
    # The read model kept A's page too: nothing every page reads changed.
    assert app.state.read_model.flushes == 0


async def test_a_catalogue_row_added_alone_evicts_no_page_and_its_first_run_evicts_its_workload(app, client, db_url):
    """The row first, in a transaction of its own, then (later) the run that names it: neither evicts
    A's page; the run evicts B's, which then shows the row."""
    for slug in (A, B):
        await page(client, SOURCES, slug)
    await run_elsewhere(db_url, statements=(
        f"INSERT INTO sources (name) VALUES ('{NEW_SOURCE}')",
        f"INSERT INTO source_snapshots (source_id, revision) SELECT id, 'r1' FROM sources WHERE name = '{NEW_SOURCE}'",
    ))
    assert (await log_of_last_version(db_url))["tables"] == ["source_snapshots"]
    assert [x for _, x in [await page(client, SOURCES, A), await page(client, SOURCES, B)]] == ["hit", "hit"]
    await run_elsewhere(db_url, records=on_a_new_source(synthetic_records(1, slug=B, start=90), "r1"))
    after_b, x_b = await page(client, SOURCES, B)
    assert x_b == "miss" and (NEW_SOURCE, "r1") in revisions(after_b)
    assert (await page(client, SOURCES, A))[1] == "hit"


async def test_a_new_hardware_row_evicts_every_page(app, client, db_url):
    """Every page reads the whole hardware catalogue (notMeasured, floors, headroom): a new hardware
    row, committed by another process, is on every page."""
    gaps = "query ($slug: String!) { workload(slug: $slug) { notMeasured(first: 100) { hardware { sku } } } }"
    before, _ = await page(client, gaps, A)
    await page(client, gaps, B)
    conn = await asyncpg.connect(to_libpq_url(db_url))
    try:
        columns = [r[0] for r in await conn.fetch(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'hardware' AND column_name NOT IN "
            "('id', 'sku', 'priority') ORDER BY ordinal_position")]
    finally:
        await conn.close()
    names = ", ".join(columns)
    await run_elsewhere(db_url, statements=(
        f"INSERT INTO hardware (sku, priority, {names}) SELECT 'TEST GPU 1', true, {names} FROM hardware "
        "WHERE sku = 'NVIDIA H100 SXM5 80GB'",
    ))
    log = await log_of_last_version(db_url)
    assert (log["tables"], log["edited"]) == (["hardware"], []), log
    after, x_a = await page(client, gaps, A)
    assert x_a == "miss" and (await page(client, gaps, B))[1] == "miss"
    assert {"sku": "TEST GPU 1"} in [g["hardware"] for g in after["notMeasured"]]
    assert len(after["notMeasured"]) == len(before["notMeasured"]) + 1


async def test_an_edit_of_a_catalogue_row_evicts_the_pages_that_read_it(app, client, db_url):
    """A new source revision named by B's run, then an edit of that row by another process: B's page
    shows the edit at once (every page that reads catalogue rows goes, A's too: not bounded further)."""
    await run_elsewhere(db_url, records=on_a_new_source(synthetic_records(1, slug=B, start=70), "r1"))
    for slug in (A, B):
        await page(client, SOURCES, slug)
    assert [x for _, x in [await page(client, SOURCES, A), await page(client, SOURCES, B)]] == ["hit", "hit"]
    await run_elsewhere(db_url, statements=(
        "UPDATE source_snapshots SET revision = 'r1-renamed' WHERE revision = 'r1' AND source_id = "
        f"(SELECT id FROM sources WHERE name = '{NEW_SOURCE}')",
    ))
    log = await log_of_last_version(db_url)
    assert (log["tables"], log["edited"]) == (["source_snapshots"], ["source_snapshots"]), log
    after_b, x_b = await page(client, SOURCES, B)
    assert x_b == "miss" and (NEW_SOURCE, "r1-renamed") in revisions(after_b)
    assert (await page(client, SOURCES, A))[1] == "miss"


# -- the cache and the log on their own -------------------------------------------------------------


def test_changes_evict_only_the_entries_that_read_them():
    cache = ResponseCache(max_entries=100, max_bytes=100_000, ttl_s=60)
    keys = {name: cache_key(f"{{ {name} }}", None, None) for name in ("a", "b", "ab", "plain", "all")}
    deps = {
        "a": page_dependencies({1}), "b": page_dependencies({2}), "ab": page_dependencies({1, 2}),
        "plain": Dependencies(frozenset({3})), "all": EVERYTHING,
    }
    cache.advance(10, None)

    def fill():
        for name, key in keys.items():
            cache.put(key, cache.version, FIXED_NOW, name, deps[name])

    def alive() -> set[str]:
        return {name for name, key in keys.items() if cache.get(key, cache.version, FIXED_NOW) is not None}

    fill()
    cache.advance(11, [Change(11, frozenset({1}), frozenset(), False)])
    assert alive() == {"b", "plain"}
    fill()
    cache.advance(12, [Change(12, frozenset(), frozenset({"hardware"}), False)])
    assert alive() == {"plain"}
    fill()
    cache.advance(14, [Change(13, frozenset({9}), frozenset(), False), Change(14, frozenset({3}), frozenset(), False)])
    assert alive() == {"a", "b", "ab"}
    fill()
    # New rows (nothing edited): only what reads that table whole goes (and what depends on everything).
    cache.advance(15, [Change(15, frozenset(), frozenset({"sources", "source_snapshots"}), False, frozenset())])
    assert alive() == {"a", "b", "ab", "plain"}
    cache.advance(16, [Change(16, frozenset({2}), frozenset({"environments"}), False, frozenset())])
    assert alive() == {"a", "plain"}
    fill()
    cache.advance(17, [Change(17, frozenset(), frozenset({"hardware"}), False, frozenset())])
    assert alive() == {"plain"}
    fill()
    # A new row and an edit in one transaction: the edit decides.
    cache.advance(18, [Change(18, frozenset(), frozenset({"sources", "environments"}), False, frozenset({"environments"}))])
    assert alive() == {"plain"}
    fill()
    cache.advance(19, [Change(19, frozenset(), frozenset(), True)])
    assert alive() == set()
    fill()
    cache.advance(25, None)  # changes not known
    assert alive() == set()


def test_a_late_result_is_stored_only_if_nothing_it_read_changed_since():
    cache = ResponseCache(max_entries=100, max_bytes=100_000, ttl_s=60)
    a, b = cache_key("{ a }", None, None), cache_key("{ b }", None, None)
    cache.advance(5, None)
    cache.advance(6, [Change(6, frozenset({1}), frozenset(), False)])
    # Both computed at version 5, finishing after version 6 (a write to workload 1) was seen.
    assert cache.put(a, 5, FIXED_NOW, "a", Dependencies(frozenset({1}), catalogue=True)) is False
    assert cache.put(b, 5, FIXED_NOW, "b", Dependencies(frozenset({2}), catalogue=True)) is True
    assert cache.put(b, 4, FIXED_NOW, "b", Dependencies(frozenset({2}))) is False  # before what is remembered
    assert cache.put(a, 5, FIXED_NOW, "a", EVERYTHING) is False
    assert cache.not_stored == 3


NEW_SOURCE_ROW = frozenset({"sources", "source_snapshots"})


@pytest.mark.parametrize("order", ["change learnt before the put", "change learnt after the put"])
@pytest.mark.parametrize(("change", "kept"), [
    (Change(6, frozenset({2}), NEW_SOURCE_ROW, False, frozenset()), True),  # another workload's run on a new source
    (Change(6, frozenset({1}), NEW_SOURCE_ROW, False, frozenset()), False),  # a run of its own on it
    (Change(6, frozenset(), frozenset({"hardware"}), False, frozenset()), False),  # every page lists hardware
    (Change(6, frozenset(), NEW_SOURCE_ROW, False, frozenset({"sources"})), False),  # an edit
    (Change(6, frozenset(), NEW_SOURCE_ROW, False), False),  # a log row before 0021: taken as an edit
])
def test_a_page_computed_before_a_new_catalogue_row_is_kept_unless_it_reads_it(order, change, kept):
    """Workload 1's page, computed by a request that read version 5, while version 6 committed: kept
    and served at version 6 exactly when version 6 changed nothing it read, whichever the cache learns
    of first."""
    cache = ResponseCache(max_entries=100, max_bytes=100_000, ttl_s=60)
    key = cache_key("{ a }", None, None)
    cache.advance(5, None)
    if order == "change learnt before the put":
        cache.advance(6, [change])
        assert cache.put(key, 5, FIXED_NOW, "a", page_dependencies({1})) is kept
    else:
        assert cache.put(key, 5, FIXED_NOW, "a", page_dependencies({1})) is True
        cache.advance(6, [change])
    assert (cache.get(key, 6, FIXED_NOW) is not None) is kept


def test_the_log_must_be_complete_to_be_used():
    def rows(*versions):
        return [{"version": max(versions, default=0), "logged": v, "workload_ids": [v], "catalogue_tables": [],
                 "everything": False} for v in versions] or [{"version": 7, "logged": None}]

    assert [c.version for c in changes_between(4, 7, rows(5, 6, 7))] == [5, 6, 7]
    assert changes_between(4, 7, rows(5, 7)) is None  # a version missing (pruned, or before the log)
    assert changes_between(None, 7, rows()) is None  # nothing known before
    assert changes_between(9, 7, rows()) is None  # the database went back in time


async def test_a_reader_far_behind_the_log_drops_everything(app, client, db_url, monkeypatch):
    monkeypatch.setattr(changes, "MAX_CHANGES_READ", 2)
    await page(client, RUNS, B)
    assert (await page(client, RUNS, B))[1] == "hit"
    for i in range(3):  # three versions, none of them B's
        await sql(db_url, "UPDATE workloads SET description = $1 WHERE slug = $2", f"far {i}", A)
    assert (await page(client, RUNS, B))[1] == "miss"
    assert app.state.response_cache.flushes >= 1


async def test_entries_still_expire_after_the_ttl(db_url):
    now = [FIXED_NOW]
    application = create_app(Settings(response_cache_ttl_s=60), database_url=db_url, clock=lambda: now[0])
    async with application.router.lifespan_context(application):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=application), base_url="http://testserver") as client:
            await page(client, RUNS, A)
            assert (await page(client, RUNS, A))[1] == "hit"
            now[0] = FIXED_NOW + timedelta(seconds=61)
            assert (await page(client, RUNS, A))[1] == "miss"


async def test_metrics_count_hits_misses_and_invalidations(app, client, db_url):
    await page(client, RUNS, A)
    await page(client, RUNS, A)
    await sql(db_url, "UPDATE workloads SET description = 'metrics' WHERE slug = $1", A)
    await page(client, RUNS, A)
    response = await client.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    values = {line.split("{")[0]: float(line.rsplit(" ", 1)[1])
              for line in response.text.splitlines() if line and not line.startswith("#")}
    cache: ResponseCache = app.state.response_cache
    assert values["kernelindex_response_cache_hits_total"] == cache.hits == 1
    assert values["kernelindex_response_cache_misses_total"] == cache.misses == 2
    assert values["kernelindex_response_cache_invalidated_total"] == cache.invalidated >= 1
    assert values["kernelindex_response_cache_entries"] == len(cache)
    assert values["kernelindex_response_cache_data_version"] == cache.version


@pytest.mark.parametrize("method", ["GET", "POST"])
async def test_x_cache_on_get_and_post_queries(client, method):
    params = {"query": RUNS, "variables": f'{{"slug": "{A}"}}'}
    for expected in ("miss", "hit"):
        if method == "GET":
            response = await client.get("/graphql", params=params)
        else:
            response = await post(client, RUNS, {"slug": A})
        assert response.status_code == 200 and response.headers["x-cache"] == expected


async def test_the_page_query_of_the_twin_is_scoped():
    assert root_fields(WORKLOAD_PAGE_QUERY, None) == {"workload"}
