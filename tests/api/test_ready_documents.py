"""Documents kept ready (kernelindex.web.app.KernelIndexGraphQL._ready_response, issue 27): a POST of a
document whose operation, without variables, was answered by its plan before is answered again without
strawberry's view and extension hooks. The answer must be the one strawberry's path gives: the same bytes,
status and headers as graphql-core's (the unplanned server), field errors included, in both media types."""

from __future__ import annotations

import random

import httpx

from kernelindex.graphql import plan
from kernelindex.graphql.schema import build_schema
from kernelindex.settings import Settings
from perf.runs_connection import graphql_query
from tests.api import test_planned_execution as differential
from tests.api.test_planned_execution import _REQUEST_ID, SEED, Generator, _known_values, readme_queries

servers = differential.servers  # the fixture: a planned server and a graphql-core one on one hostile database

MEDIA = ({}, {"accept": "application/graphql-response+json"})
_SAME_HEADERS = ("content-type", "content-length", "cache-control", "x-cache")


async def _answer(client: httpx.AsyncClient, query: str, headers: dict) -> tuple:
    response = await client.post("/graphql", json={"query": query}, headers=headers)
    return (response.status_code, _REQUEST_ID.sub(b'"request_id":""', response.content),
            tuple(response.headers.get(name) for name in _SAME_HEADERS))


async def test_ready_documents_answer_as_strawberry_and_graphql_core_do(servers):
    planned, plain = servers
    values = await _known_values(plain)
    slug = values["workload"][0]
    documents = [graphql_query(first).replace('"kernelbench-l1-p100-synthetic-0"', f'"{slug}"') for first in (16, 100)]
    documents += readme_queries()
    # Field errors (a page size over the limit, an unknown workload): answered by the plan, never kept ready.
    documents += ["{ runs(first: 100000) { edges { cursor } } }", '{ runs(workload: "no-such") { edges { cursor } } }']
    generator = Generator(build_schema(Settings())._schema, random.Random(SEED + 1), values)
    while len(documents) < 150:
        query, variables = generator.document()
        if not variables:
            documents.append(query)
    ready = plan.STATS.ready
    kept = with_errors = 0
    for query in documents:
        for headers in MEDIA:
            first = await _answer(planned, query, headers)
            before = plan.STATS.ready
            second = await _answer(planned, query, headers)
            again = plan.STATS.ready > before
            expected = await _answer(plain, query, headers)
            assert first == second == expected, (query, headers, first[:2], second[:2], expected[:2])
            kept += again
            with_errors += b'"errors"' in first[1]
            if again:
                assert b'"errors"' not in first[1], query  # only answers without errors are kept ready
    print(f"\nready documents: {len(documents)} documents, {kept} answers from documents kept ready, "
          f"{with_errors} answers with errors")
    assert plan.STATS.ready - ready >= kept  # (and the second media type's first request, of a document kept already)
    assert kept >= len(documents)  # the benchmark's, the README's and most generated ones, in both media types


async def test_a_body_with_variables_or_extensions_is_strawberrys(servers):
    planned, _plain = servers
    query = "{ runs(first: 2) { edges { cursor } } }"
    await planned.post("/graphql", json={"query": query})
    before = plan.STATS.ready
    for body in ({"query": query, "variables": {"x": 1}}, {"query": query, "extensions": {}},
                 {"query": query, "operationName": 3}):
        response = await planned.post("/graphql", json=body)
        assert response.status_code in (200, 400)
    response = await planned.post("/graphql", content=b'{"query": "' + query.encode() + b'"}',
                                  headers={"content-type": "text/plain"})
    assert response.status_code == 400
    assert plan.STATS.ready == before
    assert (await planned.post("/graphql", json={"query": query})).status_code == 200
    assert plan.STATS.ready == before + 1


def test_the_hand_written_cursor_is_encode_cursors():
    """pagination.cursor_encoder (every keyset page's cursors) writes encode_cursor's very text, for the
    keys it writes itself (ints, finite floats, strings) and those it leaves to encode_cursor (±inf, NaN,
    others)."""
    from kernelindex.graphql.pagination import cursor_encoder, encode_cursor

    rng = random.Random(SEED)
    special = [0, 1, -1, 2**63 - 1, -(2**63), 0.0, -0.0, 1e-300, 1e300, 5e-324, float("inf"), float("-inf"),
               float("nan"), 1.5, -1700000000.123456, 123456789.0, 0.1 + 0.2, True, "text", None, "",
               'quote " backslash \\ tab \t newline \n \u2028 astral \U0001d518 ü', "\ud800 lone", "kernelbench"]
    compared = 0
    for kind in ("run:fastest", "run:newest", "run:recently_observed", "workload:suite_level_problem",
                 'a "kind" \\ with ü'):
        encode = cursor_encoder(kind)
        for _ in range(5000):
            key = tuple(rng.choice(special) if rng.random() < 0.3 else
                        rng.uniform(-1e9, 1e9) if rng.random() < 0.5 else rng.randint(-10**15, 10**15)
                        for _ in range(rng.randint(0, 3)))
            assert encode(key) == encode_cursor(kind, key), (kind, key)
            compared += 1
    assert compared == 25000
