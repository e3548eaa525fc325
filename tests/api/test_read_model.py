"""The read model (kernelindex.services.read_model): a workload's page values are computed once per
version of that workload and served from memory, and never after a committed write they do not show,
whichever process wrote, in either order of reads and writes. The response cache is off in these
tests, so every request executes: what they see is the read model alone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from kernelindex.db.changes import Change
from kernelindex.services.read_model import MISSING, ReadModel
from kernelindex.web.twins import WORKLOAD_PAGE_QUERY
from tests.api.helpers import serving_uncached, synthetic_records, write_records
from tests.api.test_cache_invalidation import A, B, slower, sql, workload_id, write_runs

LIST = "{ workloads(first: 20) { nodes { slug eligibleRunCount headline { latencyMs } records { latencyMs runCount } } } }"


async def answer(client: httpx.AsyncClient, query: str, variables: dict | None = None) -> dict:
    response = await client.post("/graphql", json={"query": query, "variables": variables or {}})
    body = response.json()
    assert response.status_code == 200 and "errors" not in body, body
    assert "x-cache" not in response.headers  # the response cache is off: nothing says hit or miss
    return body["data"]


async def page(client: httpx.AsyncClient, slug: str) -> dict:
    return (await answer(client, WORKLOAD_PAGE_QUERY, {"slug": slug}))["workload"]


async def computed_afresh(db_url: str, slug: str) -> dict:
    """The page as a server without a read model computes it now: the definition."""
    async with serving_uncached(db_url, read_model_workloads=0) as (_, client):
        return await page(client, slug)


# -- what is kept, and what a write evicts ------------------------------------------------------------


async def test_a_page_read_again_reads_none_of_its_values_again(db_url, count_statements):
    async with serving_uncached(db_url) as (app, client):
        first = await page(client, A)
        with count_statements(app.state.engine) as again:
            second = await page(client, A)
        model: ReadModel = app.state.read_model
    assert second == first
    # The workload's row and the catalogue still (what the resolvers start from); no cohort bests,
    # runs, comparisons, measurements or revisions.
    assert not [s for s in again if "cohort_bests" in s or "FROM runs" in s or "workload_revisions" in s], again
    assert model.hits >= 1 and model.value_hits >= 1 and len(model) == 1


async def test_a_write_to_one_workload_recomputes_its_page_and_leaves_the_others_kept(db_url, count_statements):
    records = synthetic_records(3, slug=A)
    await write_records(db_url, records)  # their environments exist from here on: the next write is A's alone
    async with serving_uncached(db_url) as (app, client):
        model: ReadModel = app.state.read_model
        before_a, before_b = await page(client, A), await page(client, B)
        await write_records(db_url, slower(records, by_ms=-0.5) + synthetic_records(1, slug=A, start=1))
        invalidated, flushes = model.invalidated, model.flushes
        with count_statements(app.state.engine) as b_statements:
            after_b = await page(client, B)
        after_a = await page(client, A)
        assert model.invalidated == invalidated + 1 and model.flushes == flushes  # A only
    assert after_b == before_b
    assert not [s for s in b_statements if "cohort_bests" in s], b_statements  # B still kept
    assert after_a != before_a
    assert after_a == await computed_afresh(db_url, A)


@pytest.mark.parametrize("order", ["read first", "write first"])
async def test_every_answer_equals_a_fresh_computation_whatever_the_order(db_url, order):
    """Reads and writes in both orders, the writes from another process (their own engine): each
    answer equals what a server without a read model computes at that moment."""
    records = synthetic_records(2, slug=A)
    async with serving_uncached(db_url) as (_, client):
        if order == "read first":
            await page(client, A)
            await answer(client, LIST)
        await write_runs(db_url, records)
        assert await page(client, A) == await computed_afresh(db_url, A)
        await write_runs(db_url, slower(records, by_ms=50.0))  # a changed figure supersedes the run
        assert await page(client, A) == await computed_afresh(db_url, A)
        listed = await answer(client, LIST)
    async with serving_uncached(db_url, read_model_workloads=0) as (_, fresh):
        assert listed == await answer(fresh, LIST)


async def test_a_catalogue_write_recomputes_every_page(db_url):
    async with serving_uncached(db_url) as (app, client):
        await page(client, A)
        await page(client, B)
        await sql(db_url, "UPDATE hardware SET short_name = short_name || ' (renamed)' WHERE sku = 'NVIDIA H100 SXM5 80GB'")
        renamed = await page(client, A)
        assert app.state.read_model.flushes >= 1
    assert renamed == await computed_afresh(db_url, A)
    assert "(renamed)" in str(renamed)


async def test_a_write_to_the_workload_row_itself_is_shown_at_once(db_url):
    async with serving_uncached(db_url) as (_, client):
        await page(client, A)
        await sql(db_url, "UPDATE workloads SET description = 'written by another process' WHERE slug = $1", A)
        assert (await page(client, A))["description"] == "written by another process"


async def test_a_mutation_never_reads_the_read_model(db_url):
    """What a mutation reads after its own writes must show them, and versions move only at commit:
    the view reads no version for it, so its loaders compute everything."""
    async with serving_uncached(db_url) as (app, client):
        await page(client, A)
        reads = app.state.data_version.reads
        response = await client.post("/graphql", json={"query": "mutation { __typename }"})
        assert response.status_code == 200
        assert app.state.data_version.reads == reads


async def test_the_json_twin_uses_the_read_model_too(db_url):
    async with serving_uncached(db_url) as (app, client):
        first = (await client.get(f"/workloads/{A}.json")).json()
        hits = app.state.read_model.hits
        second = (await client.get(f"/workloads/{A}.json")).json()
        assert second == first and app.state.read_model.hits > hits


async def test_the_read_model_can_be_turned_off(db_url):
    async with serving_uncached(db_url, read_model_workloads=0) as (app, client):
        await page(client, A)
        await page(client, A)
        assert len(app.state.read_model) == 0 and app.state.data_version.reads == 0


async def test_metrics_show_the_read_model(db_url):
    async with serving_uncached(db_url) as (_, client):
        await page(client, A)
        await page(client, A)
        text = (await client.get("/metrics")).text
    assert 'kernelindex_read_model_hits_total{pid="' in text
    hits = next(line for line in text.splitlines() if line.startswith("kernelindex_read_model_hits_total"))
    assert int(hits.rsplit(" ", 1)[1]) >= 1


# -- the store itself ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Row:
    id: int
    current_revision_id: int | None


@dataclass(frozen=True)
class _Page:
    """What ReadModel reads of a page: its workload's id and current revision."""

    workload: _Row


def fake_page(workload: int, revision: int) -> Any:
    return _Page(_Row(workload, revision))


def change(version: int, workloads=(), catalogue=(), everything=False, added=()) -> Change:
    """Catalogue tables `catalogue` edited, `added` given new rows only."""
    return Change(version, frozenset(workloads), frozenset(catalogue) | frozenset(added), everything, frozenset(catalogue))


def test_a_change_evicts_exactly_the_workloads_it_names():
    model = ReadModel(10)
    model.advance(5, None)
    for w in (1, 2, 3):
        assert model.put_page(w, 5, fake_page(w, 10 + w))
        assert model.put_value(w, ("k", w), 5, f"value {w}")
    model.advance(6, [change(6, workloads={2})])
    assert model.page(1, 6) is not None and model.page(3, 6) is not None
    assert model.page(2, 6) is None
    assert model.value(2, ("k", 2), 6) is MISSING and model.value(1, ("k", 1), 6) == "value 1"
    assert model.workload_of_revision(12) is None and model.workload_of_revision(11) == 1
    # A new source, environment or implementation row: only the workloads whose runs name it.
    model.advance(7, [change(7, workloads={3}, added={"sources", "source_snapshots", "environments", "implementations"})])
    assert model.page(1, 7) is not None and model.page(3, 7) is None and model.flushes == 0
    model.advance(8, [change(8, added={"hardware"})])  # every page holds every hardware row
    assert len(model) == 0
    model.put_page(1, 8, fake_page(1, 11))
    model.advance(9, [change(9, catalogue={"sources"})])  # an edit: every page holds catalogue rows
    assert len(model) == 0
    model.put_page(1, 9, fake_page(1, 11))
    model.advance(10, [change(10, everything=True)])
    assert len(model) == 0


@pytest.mark.parametrize("order", ["change learnt before the put", "change learnt after the put"])
def test_a_value_computed_before_a_change_to_its_workload_is_never_served(order):
    """A page computed by a request that read version 5, while a write to its workload committed as
    version 6: whichever the process learns of first, the page is not served at version 6."""
    model = ReadModel(10)
    model.advance(5, None)
    if order == "change learnt before the put":
        model.advance(6, [change(6, workloads={1})])
        assert model.put_page(1, 5, fake_page(1, 11)) is False
        assert model.not_stored == 1
    else:
        assert model.put_page(1, 5, fake_page(1, 11)) is True
        model.advance(6, [change(6, workloads={1})])
    assert model.page(1, 6) is None
    # A change to another workload does not stop it being kept.
    model.advance(7, [change(7, workloads={2})])
    assert model.put_page(1, 6, fake_page(1, 11)) is True and model.page(1, 7) is not None


def test_a_version_newer_than_any_told_drops_everything():
    model = ReadModel(10)
    model.advance(5, None)
    model.put_page(1, 5, fake_page(1, 11))
    assert model.page(1, 9) is None  # changes 6..9 never told: anything may have changed
    assert model.flushes == 1


def test_values_live_only_beside_their_page_and_the_bound_holds():
    model = ReadModel(2)
    model.advance(1, None)
    assert model.put_value(1, ("k", 1), 1, "orphan") is False  # no page: nothing a write would evict
    for w in (1, 2, 3):
        model.put_page(w, 1, fake_page(w, 10 + w))
    assert len(model) == 2 and model.page(1, 1) is None and model.lru_evictions == 1
    assert model.workload_of_revision(11) is None


async def test_the_ids_the_store_reads_are_the_workloads(db_url):
    """ReadModel keys pages by workload id and maps current revisions: the real page has both."""
    async with serving_uncached(db_url) as (app, client):
        await page(client, A)
        model: ReadModel = app.state.read_model
        a = await workload_id(db_url, A)
        kept = model.page(a, model._history.version)
        assert kept is not None and kept.workload.id == a
        assert model.workload_of_revision(kept.workload.current_revision_id) == a


async def test_a_query_that_reads_no_page_reads_no_version(db_url):
    """The version is read when a loader first needs it: a runs list never does (it would cost it a
    round trip a request for nothing); a page does, once for all its loaders."""
    async with serving_uncached(db_url) as (app, client):
        await answer(client, "{ runs(first: 3) { edges { node { meanMs implementation { slug } } } } }")
        assert app.state.data_version.reads == 0
        await page(client, A)
        assert app.state.data_version.reads == 1
