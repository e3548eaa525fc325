"""Bounded responses: the query cost limit, capped lists and text, and errors that name no schema
field in production."""

from __future__ import annotations

import time

import httpx
import pytest

from kernelindex.graphql.text import CUT_MARKER, SHORT_TEXT_BYTES, short_text, text_piece, text_size
from kernelindex.settings import Settings
from kernelindex.web.app import create_app
from tests.conftest import FIXED_NOW

RESNET18 = "kernelbench-l3-p9-resnet18"
LIMIT = Settings().max_query_cost
LONG_TEXT_KIB = Settings().max_text_bytes // 1024


async def post(client, query, variables=None) -> dict:
    response = await client.post("/graphql", json={"query": query, "variables": variables or {}})
    assert response.status_code == 200, response.text[:300]
    return response.json()


def cost_of(body: dict) -> int:
    assert "errors" not in body, body["errors"]
    assert body["extensions"]["cost"]["limit"] == LIMIT
    return body["extensions"]["cost"]["requested"]


@pytest.fixture
async def app_with(db_url):
    """An app with other settings, entered and left by the test."""
    apps = []

    async def make(**settings):
        app = create_app(Settings(**settings), database_url=db_url, clock=lambda: FIXED_NOW)
        context = app.router.lifespan_context(app)
        await context.__aenter__()
        apps.append(context)
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=app, raise_app_exceptions=False),
                                 base_url="http://testserver")

    yield make
    for context in reversed(apps):
        await context.__aexit__(None, None, None)


# -- the cost ------------------------------------------------------------------------------------

COSTS = {
    "no list": ("{ policy { version } }", None, 0),
    "a connection's default page": ("{ runs { totalCount } }", None, 20),
    "a page given": ("{ runs(first: 7) { nodes { id } } }", None, 7),
    "a page from a variable": ("query($n: Int!) { runs(first: $n) { nodes { id } } }", {"n": 9}, 9),
    "a variable's default": ("query($n: Int! = 4) { runs(first: $n) { nodes { id } } }", None, 4),
    "nested connections multiply": ("{ workloads(first: 10) { nodes { runs(first: 5) { totalCount } } } }", None, 10 + 10 * 5),
    "capped lists count like connections": (
        f'{{ workload(slug: "{RESNET18}") {{ records(first: 3) {{ run {{ id }} }} comparison {{ rows(first: 4) {{ rank }} }} }} }}',
        None, 3 + 4,
    ),
    "long text counts its limit in KiB": (f'{{ workload(slug: "{RESNET18}") {{ referenceSource }} }}', None, LONG_TEXT_KIB),
    "short text counts 2 KiB, every alias": (
        "{ runs(first: 10) { nodes { failureReason again: failureReason } } }", None, 10 + 10 * (2 + 2),
    ),
    "a fragment counts at every spread": (
        "fragment R on Query { runs(first: 3) { totalCount } } { ...R ...R a: workloads(first: 2) { nodes { slug } } }",
        None, 3 + 3 + 2,
    ),
}


@pytest.mark.parametrize("name", list(COSTS))
async def test_the_cost_is_reported_with_the_answer(client, name):
    query, variables, expected = COSTS[name]
    assert cost_of(await post(client, query, variables)) == expected


async def test_the_page_query_is_well_inside_the_limit(client):
    from kernelindex.web.twins import WORKLOAD_PAGE_QUERY

    cost = cost_of(await post(client, WORKLOAD_PAGE_QUERY, {"slug": RESNET18}))
    assert 0 < cost < LIMIT / 10


OVER = " ".join(f"a{i}: workloads(first: 100) {{ nodes {{ runs(first: 100) {{ nodes {{ id }} }} }} }}" for i in range(2))


async def test_a_query_over_the_limit_is_refused_before_it_runs(app, client, count_statements):
    with count_statements(app.state.engine) as statements:
        body = await post(client, "{ " + OVER + " }")
    assert body["data"] is None
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "QUERY_TOO_COSTLY"
    assert error["extensions"]["cost"] == {"requested": 2 * (100 + 100 * 100), "limit": LIMIT}
    assert "20,200" in error["message"] and f"{LIMIT:,}" in error["message"]
    assert not [s for s in statements if "runs" in s or "workloads" in s], statements


async def test_a_page_too_large_counts_as_the_largest_allowed(client):
    """first: 1000 is refused by the resolver with its own message, not by the cost."""
    body = await post(client, "{ runs(first: 1000) { totalCount } }")
    assert "first must be at most 100" in body["errors"][0]["message"]
    assert body["extensions"]["cost"]["requested"] == 100


async def test_a_fragment_bomb_of_lists_is_refused_quickly(client):
    fragments = ["fragment F0 on Query { runs(first: 100) { totalCount } }"]
    fragments += [f"fragment F{i} on Query {{ ...F{i - 1} ...F{i - 1} }}" for i in range(1, 61)]
    started = time.perf_counter()
    body = await post(client, " ".join(fragments) + " { ...F60 }")
    assert time.perf_counter() - started < 2.0
    error = body["errors"][0]
    assert error["extensions"]["code"] == "QUERY_TOO_COSTLY"
    assert "more than 1,000,000,000" in error["message"]
    assert error["extensions"]["cost"]["requested"] == 10**9


async def test_the_limit_is_a_setting(app_with):
    client = await app_with(max_query_cost=10)
    body = await post(client, "{ runs(first: 10) { totalCount } }")
    assert "errors" not in body and body["extensions"]["cost"] == {"requested": 10, "limit": 10}
    body = await post(client, "{ runs(first: 11) { totalCount } }")
    assert body["errors"][0]["extensions"] == {"code": "QUERY_TOO_COSTLY", "cost": {"requested": 11, "limit": 10}}


async def test_a_cached_answer_carries_its_cost(app, client):
    query = "{ runs(first: 3) { nodes { id } } }"
    first = await client.post("/graphql", json={"query": query})
    second = await client.post("/graphql", json={"query": query})
    assert app.state.response_cache.hits == 1
    assert second.content == first.content
    assert second.json()["extensions"]["cost"] == {"requested": 3, "limit": LIMIT}


# -- capped lists ----------------------------------------------------------------------------------

async def test_workload_runs_is_a_connection_of_every_live_run_fastest_first(graphql):
    everything = await graphql(f'{{ runs(workload: "{RESNET18}", first: 100) {{ totalCount }} }}')
    first = await graphql(f'{{ workload(slug: "{RESNET18}") {{ runs(first: 2) {{ totalCount pageInfo {{ hasNextPage endCursor }} nodes {{ id meanMs }} }} }} }}')
    runs = first["workload"]["runs"]
    assert runs["totalCount"] == everything["runs"]["totalCount"] > 2
    assert runs["pageInfo"]["hasNextPage"]
    after = runs["pageInfo"]["endCursor"]
    rest = await graphql(f'{{ workload(slug: "{RESNET18}") {{ runs(first: 100, after: "{after}") {{ nodes {{ id meanMs }} }} }} }}')
    nodes = runs["nodes"] + rest["workload"]["runs"]["nodes"]
    assert len(nodes) == runs["totalCount"] and len({n["id"] for n in nodes}) == len(nodes)
    means = [n["meanMs"] for n in nodes if n["meanMs"] is not None]
    assert means == sorted(means)


async def test_workload_runs_refuses_a_page_over_100(graphql):
    body = await graphql(f'{{ workload(slug: "{RESNET18}") {{ runs(first: 101) {{ totalCount }} }} }}', expect_errors=True)
    assert "first must be at most 100, got 101" in body["errors"][0]["message"]


CAPPED = ("records", "comparisons", "implementations", "floors", "sources", "revisions")


@pytest.mark.parametrize("field", CAPPED)
async def test_a_capped_list_returns_at_most_first(graphql, field):
    whole = (await graphql(f'{{ workload(slug: "{RESNET18}") {{ {field} {{ __typename }} }} }}'))["workload"][field]
    one = (await graphql(f'{{ workload(slug: "{RESNET18}") {{ {field}(first: 1) {{ __typename }} }} }}'))["workload"][field]
    assert len(one) == min(1, len(whole))
    body = await graphql(f'{{ workload(slug: "{RESNET18}") {{ {field}(first: 101) {{ __typename }} }} }}', expect_errors=True)
    assert "first must be at most 100, got 101" in body["errors"][0]["message"]


# -- capped text -----------------------------------------------------------------------------------

async def test_the_reference_source_comes_in_pieces_that_add_up(graphql, app_with):
    whole = (await graphql(f'{{ workload(slug: "{RESNET18}") {{ referenceSource referenceSourceSizeBytes referenceSourceTruncated }} }}'))["workload"]
    assert whole["referenceSourceSizeBytes"] == len(whole["referenceSource"].encode()) > 300
    assert whole["referenceSourceTruncated"] is False
    client = await app_with(max_text_bytes=100)
    query = f'query($o: Int!) {{ workload(slug: "{RESNET18}") {{ referenceSource(offset: $o) referenceSourceTruncated }} }}'
    pieces, offset = [], 0
    while offset < whole["referenceSourceSizeBytes"]:
        body = await post(client, query, {"o": offset})
        piece = body["data"]["workload"]["referenceSource"]
        assert body["data"]["workload"]["referenceSourceTruncated"] is True
        assert 0 < len(piece.encode()) <= 100
        pieces.append(piece)
        offset += len(piece.encode())
    assert "".join(pieces) == whole["referenceSource"]
    assert (await post(client, query, {"o": offset}))["data"]["workload"]["referenceSource"] == ""
    body = await post(client, query, {"o": -1})
    assert "offset must be at least 0, got -1" in body["errors"][0]["message"]


def test_pieces_of_text_end_on_character_boundaries():
    text = "aé€😀" * 50  # 1, 2, 3 and 4 bytes a character
    for limit in (1, 3, 5, 7, 64):
        pieces, offset = [], 0
        while offset < text_size(text):
            piece = text_piece(text, offset, limit)
            assert len(piece.encode()) <= limit
            if not piece:  # a character longer than the limit: the client must ask for more
                assert limit < 4
                break
            pieces.append(piece)
            offset += len(piece.encode())
        else:
            assert "".join(pieces) == text
    assert text_piece(text, 2, 100).startswith("€")  # an offset inside 'é' starts at the next character
    assert text_size(text) == len(text.encode())


def test_short_text_is_cut_with_a_marker():
    assert short_text("fine") == "fine"
    assert short_text(None) is None
    cut = short_text("é" * SHORT_TEXT_BYTES)
    assert cut is not None and cut.endswith(CUT_MARKER) and len(cut.encode()) <= SHORT_TEXT_BYTES


# -- production: no schema suggestions -----------------------------------------------------------

SUGGESTING = {
    "a misspelt field": (f'{{ workload(slug: "{RESNET18}") {{ referenceSourc }} }}', None, "referenceSourc"),
    "a misspelt argument": ("{ runs(frist: 1) { totalCount } }", None, "frist"),
    "a misspelt type": ("query($o: RunOrdr) { runs(orderBy: $o) { totalCount } }", None, "RunOrdr"),
    "a misspelt enum literal": ("{ runs(orderBy: NEWSET) { totalCount } }", None, "NEWSET"),
    "a misspelt enum variable": ("query($o: RunOrder!) { runs(orderBy: $o) { totalCount } }", {"o": "newest"}, "newest"),
}


@pytest.mark.parametrize("name", list(SUGGESTING))
async def test_development_suggests_names_and_production_does_not(client, app_with, name):
    query, variables, named = SUGGESTING[name]
    development = await post(client, query, variables)
    assert any("Did you mean" in e["message"] for e in development["errors"]), development["errors"]
    production = await post(await app_with(environment="production"), query, variables)
    assert production["errors"], production
    for error in production["errors"]:
        assert "Did you mean" not in error["message"], error
        assert "referenceSource'" not in error["message"] and "NEWEST" not in error["message"], error
    assert any(named in e["message"] for e in production["errors"]), production["errors"]  # still says what was wrong


@pytest.mark.parametrize("size", [5, 50, 0, -3, 10**9, None, True, False, "7", 7.0, [7], {"n": 7}])
def test_a_cost_kept_by_document_is_the_cost_computed_afresh(size):
    """query_cost keeps a document's cost by its identity and what its variables' values can change:
    the same cost as a walk of the document with the variables as given, whatever the value."""
    from graphql import parse

    from kernelindex.graphql import cost
    from kernelindex.graphql.schema import build_schema

    settings = Settings()
    schema = build_schema(settings)._schema
    model = cost.CostModel(limit=settings.max_query_cost, max_page_size=settings.max_page_size,
                           long_text_bytes=settings.max_text_bytes)
    document = parse("query($n: Int, $m: Int = 3, $slug: String) { workloads(first: $n) { nodes { slug "
                     "runs(first: $m) { totalCount } } } w: workload(slug: $slug) { slug } }")
    for variables in ({"n": size, "slug": "a"}, {"n": size, "m": size, "slug": "b"}, {"n": size}, {}):
        fresh = cost._query_cost(schema, document, None, variables, model)
        assert cost.query_cost(schema, document, None, variables, model) == fresh
        assert cost.query_cost(schema, document, None, variables, model) == fresh  # kept
    assert (cost.query_cost(schema, document, None, {"n": 5}, model)
            != cost.query_cost(schema, document, None, {"n": 6}, model))
