"""A list of workloads loads its workloads' pages before their fields are resolved
(queries.workloads, Workload._page_loaded), and an Implementation is made once per facts object
(catalogue.implementation_of): the answers, their bytes, their errors and the statements sent are
those of the fields loading the pages themselves. The response cache is off: every request executes."""

from __future__ import annotations

import httpx
import pytest

from kernelindex.graphql.queries import workloads as workloads_query
from kernelindex.graphql.types.catalogue import implementation_of
from kernelindex.graphql.types.workload import Workload
from kernelindex.rules.facts import ImplementationFacts
from tests.api.helpers import serving_uncached

LIST = """{ workloads(first: 20) { totalCount nodes { slug name level eligibleRunCount
  headline { label latencyMs latencyDisplay implementation { slug title } }
  records { label latencyMs latencyDisplay figure figureUnit figureDisplay metric runCount implementation { slug id } } } } }"""
# The same fields through fragments and aliases, and records with an argument.
LIST_FRAGMENTS = """query { w: workloads(first: 20) { edges { node { ...Shown } } } }
fragment Shown on Workload { slug n: eligibleRunCount ... on Workload { headline { label } } few: records(first: 1) { label } }"""


async def post(client: httpx.AsyncClient, query: str) -> httpx.Response:
    response = await client.post("/graphql", json={"query": query})
    assert response.status_code == 200
    return response


@pytest.mark.parametrize("query", [LIST, LIST_FRAGMENTS])
@pytest.mark.parametrize("read_model_workloads", [None, 0])
async def test_loaded_before_or_by_each_field_the_same_bytes_and_statements(db_url, count_statements, monkeypatch,
                                                                            query, read_model_workloads):
    settings = {} if read_model_workloads is None else {"read_model_workloads": read_model_workloads}
    awaited: list[int] = []
    page_of = Workload._page

    async def counted(self, info):
        awaited.append(self.row.id)
        return await page_of(self, info)

    monkeypatch.setattr(Workload, "_page", counted)
    async with serving_uncached(db_url, **settings) as (app, client):
        with count_statements(app.state.engine) as statements:
            loaded_first = await post(client, query)
        assert awaited == []  # every field answered from the page the list loaded
        assert b'"eligibleRunCount"' in loaded_first.content or b'"n":' in loaded_first.content
        assert b"errors" not in loaded_first.content
        preloaded = list(statements)
    async with serving_uncached(db_url, **settings) as (app, client):
        monkeypatch.setattr(workloads_query, "PAGE_LIST_FIELDS", frozenset())  # each field loads its page
        with count_statements(app.state.engine) as statements:
            by_fields = await post(client, query)
        assert len(statements) == len(preloaded)
        assert len(awaited) >= 3 * 2  # each field of each workload (the seed has two) awaited its page
    assert loaded_first.content == by_fields.content


async def test_a_failing_page_batch_gives_the_same_errors_either_way(db_url, monkeypatch):
    from kernelindex.graphql import loaders

    async def failing(self, keys):
        raise RuntimeError("the page batch failed")

    monkeypatch.setattr(loaders.PageByWorkloadIdLoader, "compute", failing)
    async with serving_uncached(db_url, read_model_workloads=0) as (_, client):
        preloaded = (await post(client, LIST)).json()
    async with serving_uncached(db_url, read_model_workloads=0) as (_, client):
        monkeypatch.setattr(workloads_query, "PAGE_LIST_FIELDS", frozenset())
        by_fields = (await post(client, LIST)).json()
    assert preloaded["errors"], preloaded
    assert without_request_ids(preloaded) == without_request_ids(by_fields)


def without_request_ids(body: dict) -> dict:
    """The body, its errors without their request ids (each request has its own)."""
    errors = [{**e, "extensions": {k: v for k, v in e.get("extensions", {}).items() if k != "request_id"}}
              for e in body["errors"]]
    return {**body, "errors": errors}


def test_one_implementation_per_facts_object():
    facts = ImplementationFacts(id=7, slug="torch_eager", title="PyTorch eager", authors=["a"])
    twin = ImplementationFacts(id=7, slug="torch_eager", title="PyTorch eager", authors=["a"])
    assert implementation_of(facts) is implementation_of(facts)
    assert implementation_of(twin) is not implementation_of(facts)  # equal facts, another object: its own
    assert implementation_of(twin).facts is twin
    assert implementation_of(facts).authors == ["a"] and implementation_of(facts).slug == "torch_eager"


def test_values_kept_by_identity_are_made_once_per_object_and_bounded():
    from kernelindex.graphql.identity import KeptByIdentity

    made: list[tuple] = []

    def make(obj, *args):
        made.append((obj, *args))
        return [obj, *args]

    kept = KeptByIdentity(make, size=2)
    a, twin = (1, 2), tuple([1, 2])  # equal, two objects
    assert a == twin and a is not twin
    assert kept(a) is kept(a) and len(made) == 1
    assert kept(twin) is not kept(a) and len(made) == 2  # equal, another object: its own value
    assert kept(a, "x") == [a, "x"] and len(made) == 3  # the other arguments are part of the key
    assert len(kept) == 2  # the oldest (a alone) dropped past the size
    kept(a)
    assert len(made) == 4


def test_a_document_is_validated_once_per_document_object(monkeypatch):
    from graphql import parse

    from kernelindex.graphql import validation
    from kernelindex.graphql.schema import build_schema
    from kernelindex.settings import Settings

    calls: list[object] = []
    real = validation.validate

    def counted(schema, document, *args, **kwargs):
        calls.append(document)
        return real(schema, document, *args, **kwargs)

    monkeypatch.setattr(validation, "validate", counted)
    schema = build_schema(Settings())._schema
    document, reparsed = parse("{ workloads(first: 1) { totalCount } }"), parse("{ workloads(first: 1) { totalCount } }")
    assert validation._validate(schema, document, (), False) == []
    assert validation._validate(schema, document, (), False) == []
    assert calls == [document]
    validation._validate(schema, reparsed, (), False)  # an equal document parsed anew: validated anew
    assert calls == [document, reparsed]
