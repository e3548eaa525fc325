"""The request's state travels as one typed object (kernelindex.graphql.request_state): the ASGI scope's
state holds it under one key and nothing else, so a cache key, data version, dependency, read-only flag,
status or session carried as a string key of its own fails here (issue 27, point 3)."""

from __future__ import annotations

import httpx
import pytest

from kernelindex.graphql.request_state import SCOPE_KEY, RequestState
from kernelindex.web.twins import WORKLOAD_PAGE_QUERY
from tests.api.helpers import make_token, synthetic_records
from tests.api.test_tokens import SUBMIT

RESNET18 = {"slug": "kernelbench-l3-p9-resnet18"}
COUNT = "query ($slug: String!) { workload(slug: $slug) { eligibleRunCount } }"
JOBS = "{ jobs(first: 1) { nodes { state } } }"


class Recording:
    """The application, keeping the scope of each request it served."""

    def __init__(self, app):
        self.app = app
        self.scopes: list[dict] = []

    async def __call__(self, scope, receive, send):
        self.scopes.append(scope)
        await self.app(scope, receive, send)


@pytest.fixture
async def recorded(app):
    recording = Recording(app)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=recording), base_url="http://testserver") as client:
        yield recording, client


def state_of(recording: Recording, response: httpx.Response, extra: frozenset[str] = frozenset()) -> RequestState:
    """The request's state, after checking that the scope's state holds it and nothing else (bar `extra`),
    and that the id the response names is the state's."""
    scope = recording.scopes[-1]
    assert set(scope["state"]) == {SCOPE_KEY, *extra}, scope["state"].keys()
    state = scope["state"][SCOPE_KEY]
    assert isinstance(state, RequestState)
    assert state.request_id and response.headers["x-request-id"] == state.request_id
    return state


async def test_a_cached_query_keeps_its_key_version_dependencies_and_read_only_flag_on_the_request_state(recorded):
    recording, client = recorded
    miss = await client.post("/graphql", json={"query": WORKLOAD_PAGE_QUERY, "variables": RESNET18})
    assert miss.status_code == 200 and miss.headers["x-cache"] == "miss" and "errors" not in miss.json()
    state = state_of(recording, miss)
    assert state.cache_key is not None and state.data_version is not None
    assert len(state.reads.workloads) == 1 and not state.reads.unscoped and not state.reads.volatile
    assert state.read_only and state.session is not None and state.status is None and not state.no_store

    hit = await client.post("/graphql", json={"query": WORKLOAD_PAGE_QUERY, "variables": RESNET18})
    assert hit.headers["x-cache"] == "hit" and hit.content == miss.content
    again = state_of(recording, hit)
    assert again is not state and again.cache_key == state.cache_key and again.read_only
    assert again.reads.workloads == set()  # answered from the cache: no loader read anything


async def test_a_lookup_that_finds_nothing_is_unscoped_and_a_fleet_read_is_volatile_and_not_stored(recorded):
    recording, client = recorded
    missing = await client.post("/graphql", json={"query": COUNT, "variables": {"slug": "no-such-workload"}})
    assert missing.json()["data"]["workload"] is None
    assert state_of(recording, missing).reads.unscoped

    jobs = await client.get("/graphql", params={"query": JOBS})
    assert jobs.status_code == 200 and "errors" not in jobs.json()
    state = state_of(recording, jobs)
    assert state.reads.volatile and state.no_store and jobs.headers["cache-control"] == "no-store"


async def test_a_mutation_is_not_read_only_and_its_write_is_committed(recorded, db_url, graphql):
    recording, client = recorded
    token = await make_token(db_url)
    before = (await graphql(COUNT, RESNET18))["workload"]["eligibleRunCount"]
    wrote = await client.post("/graphql", json={"query": SUBMIT, "variables": {"records": synthetic_records(1)}},
                              headers={"authorization": f"Bearer {token}"})
    assert wrote.json()["data"]["submitRuns"]["ok"] is True
    state = state_of(recording, wrote)
    assert not state.read_only and state.cache_key is None and state.session is not None
    assert (await graphql(COUNT, RESNET18))["workload"]["eligibleRunCount"] == before + 1


async def test_the_status_and_media_type_of_a_graphql_response_are_on_the_request_state(recorded):
    recording, client = recorded
    refused = await client.post("/graphql", json={"query": "{ workload(slug: 1) { slug } }"},
                                headers={"accept": "application/graphql-response+json"})
    assert refused.status_code == 400
    state = state_of(recording, refused)
    assert state.status == 400 and state.media_type == "application/graphql-response+json"


async def test_the_twin_the_exports_and_the_rest_keep_one_state(recorded):
    recording, client = recorded
    twin = await client.get("/workloads/kernelbench-l3-p9-resnet18.json")
    assert twin.status_code == 200 and twin.headers["x-cache"] == "miss"
    state = state_of(recording, twin)
    assert state.cache_key is not None and state.data_version is not None and state.reads.workloads
    export = await client.get("/exports/runs.csv")
    assert export.status_code == 200
    assert state_of(recording, export).session is not None
    catalogue = await client.get("/exports/catalog.jsonl")
    assert catalogue.status_code == 200 and catalogue.text
    assert state_of(recording, catalogue).session is not None
    for path in ("/metrics", "/policy", "/healthz"):
        answer = await client.get(path)
        assert answer.status_code == 200
        state = state_of(recording, answer)
    assert state.session is None  # /healthz opens no session


def test_the_request_state_takes_no_field_it_does_not_declare():
    state = RequestState(request_id="r")
    with pytest.raises(AttributeError):
        state.graphql_status = 200  # type: ignore[attr-defined]
