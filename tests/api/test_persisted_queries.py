"""Persisted queries (kernelindex.web.persisted): APQ over POST and GET, the allow-list of
KERNELINDEX_PERSISTED_ONLY, and the caching headers of GET answers."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import httpx
import pytest

from kernelindex.settings import Settings
from kernelindex.web.app import KernelIndexGraphQL, create_app
from kernelindex.web.persisted import (
    DocumentStore,
    PersistedQueryFileError,
    load_documents,
    persisted_queries,
    sha256_hex,
)
from tests.conftest import FIXED_NOW

PAGE = '{ workload(slug: "kernelbench-l3-p9-resnet18") { slug eligibleRunCountDisplay } }'
OTHER = '{ workload(slug: "kernelbench-l3-p12-vgg19") { slug } }'
MUTATION = 'mutation { retractRun(id: "1", reason: "test") { ok } }'
NEW = {"accept": "application/graphql-response+json"}
APOLLO_ACCEPT = {"accept": "application/graphql-response+json,application/json;q=0.9"}


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def apq(text: str, digest: str | None = None) -> dict:
    return {"persistedQuery": {"version": 1, "sha256Hash": digest or sha(text)}}


def get_params(extensions: dict, query: str | None = None, variables: dict | None = None) -> dict:
    params = {"extensions": json.dumps(extensions)}
    if query is not None:
        params["query"] = query
    if variables is not None:
        params["variables"] = json.dumps(variables)
    return params


def view_of(app) -> KernelIndexGraphQL:
    # The HTTP route (the websocket route of the same path serves subscriptions with the same view).
    (route,) = [r for r in app.routes if getattr(r, "path", None) == "/graphql" and getattr(r, "methods", None)]
    view = route.endpoint
    assert isinstance(view, KernelIndexGraphQL)
    return view


async def _client_for(settings: Settings, db_url: str):
    app = create_app(settings, database_url=db_url, clock=lambda: FIXED_NOW)
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver") as client:
            yield app, client


@pytest.fixture
def operations(tmp_path) -> Path:
    """A folder of registered operations: one .graphql file and one Apollo manifest."""
    folder = tmp_path / "operations"
    folder.mkdir()
    (folder / "page.graphql").write_text(PAGE)
    manifest = {"format": "apollo-persisted-query-manifest", "version": 1,
                "operations": [{"id": sha(OTHER), "name": "Other", "type": "query", "body": OTHER}]}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return folder


@pytest.fixture
async def locked(db_url, operations):
    """A server in persisted-only mode with `operations` registered."""
    async for pair in _client_for(Settings(persisted_only=True, persisted_query_files=[operations]), db_url):
        yield pair


# -- APQ over POST -----------------------------------------------------------------------------------

async def test_post_a_miss_then_the_full_query_registers_it_then_the_hash_alone_runs_it(app, client):
    miss = await client.post("/graphql", json={"extensions": apq(PAGE)})
    assert miss.status_code == 200
    (error,) = miss.json()["errors"]
    assert error["message"] == "PersistedQueryNotFound"  # what Apollo's persisted-query link matches on
    assert error["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"

    full = await client.post("/graphql", json={"query": PAGE, "extensions": apq(PAGE)})
    assert full.status_code == 200 and "errors" not in full.json()
    assert full.json()["data"]["workload"]["slug"] == "kernelbench-l3-p9-resnet18"

    hit = await client.post("/graphql", json={"extensions": apq(PAGE)})
    assert hit.status_code == 200 and hit.json()["data"] == full.json()["data"]
    assert len(view_of(app).persisted.store) == 1


async def test_a_miss_is_200_for_graphql_response_json_clients_too(client):
    # Apollo Client sends this Accept header; its persisted-query link gives up on APQ for good on a 400 or 500.
    miss = await client.post("/graphql", json={"extensions": apq(PAGE)}, headers=APOLLO_ACCEPT)
    assert miss.status_code == 200
    assert miss.headers["content-type"].startswith("application/graphql-response+json")
    assert miss.json() == {"errors": [{"message": "PersistedQueryNotFound",
                                       "extensions": {"code": "PERSISTED_QUERY_NOT_FOUND"}}]}


async def test_variables_and_operation_name_travel_with_the_hash(client):
    document = "query One($slug: String!) { workload(slug: $slug) { slug } } query Two { policy { version } }"
    body = {"query": document, "extensions": apq(document), "operationName": "One",
            "variables": {"slug": "kernelbench-l3-p12-vgg19"}}
    assert (await client.post("/graphql", json=body)).json()["data"]["workload"]["slug"] == "kernelbench-l3-p12-vgg19"
    again = await client.post("/graphql", json={"extensions": apq(document), "operationName": "One",
                                                "variables": {"slug": "kernelbench-l3-p9-resnet18"}})
    assert again.json()["data"]["workload"]["slug"] == "kernelbench-l3-p9-resnet18"


async def test_a_hash_that_is_not_the_sha256_of_the_query_is_refused_and_nothing_is_stored(app, client):
    wrong = sha(OTHER)
    legacy = await client.post("/graphql", json={"query": PAGE, "extensions": apq(PAGE, wrong)})
    assert legacy.status_code == 200
    (error,) = legacy.json()["errors"]
    assert error["extensions"]["code"] == "PERSISTED_QUERY_HASH_MISMATCH"
    assert sha(PAGE) in error["message"] and wrong in error["message"]
    assert legacy.json()["data"] is None

    spec = await client.post("/graphql", json={"query": PAGE, "extensions": apq(PAGE, wrong)}, headers=NEW)
    assert spec.status_code == 400 and "data" not in spec.json()
    assert spec.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_HASH_MISMATCH"

    for digest in (wrong, sha(PAGE)):  # stored under neither hash
        miss = await client.post("/graphql", json={"extensions": apq(PAGE, digest)})
        assert miss.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"
    assert len(view_of(app).persisted.store) == 0


@pytest.mark.parametrize(
    "extensions, says",
    [({"persistedQuery": {"version": 2, "sha256Hash": sha(PAGE)}}, "version must be 1"),
     ({"persistedQuery": {"version": 1, "sha256Hash": "abc"}}, "64 hexadecimal digits"),
     ({"persistedQuery": "abc"}, "must be an object")],
)
async def test_a_malformed_persisted_query_extension_is_a_bad_request(client, extensions, says):
    response = await client.post("/graphql", json={"extensions": extensions})
    assert response.status_code == 400
    (error,) = response.json()["errors"]
    assert error["extensions"]["code"] == "BAD_REQUEST" and says in error["message"]


async def test_a_document_that_does_not_run_is_not_stored(app, client):
    broken = "{ workload(slug: 1) { nope } }"
    response = await client.post("/graphql", json={"query": broken, "extensions": apq(broken)})
    assert response.json()["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    assert len(view_of(app).persisted.store) == 0


# -- APQ over GET, and its caching headers -----------------------------------------------------------

async def test_get_a_miss_is_not_cacheable_then_a_hit_has_an_etag_and_answers_304(client):
    miss = await client.get("/graphql", params=get_params(apq(PAGE)), headers={"accept": "*/*"})
    assert miss.status_code == 200  # not GraphiQL's page: a GET naming a persisted query is a request
    assert miss.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"
    assert miss.headers["cache-control"] == "no-store" and "etag" not in miss.headers

    registered = await client.get("/graphql", params=get_params(apq(PAGE), query=PAGE))
    assert registered.status_code == 200 and registered.json()["data"]["workload"]["slug"] == "kernelbench-l3-p9-resnet18"

    hit = await client.get("/graphql", params=get_params(apq(PAGE)))
    assert hit.status_code == 200 and hit.json() == registered.json()
    assert hit.headers["cache-control"] == f"public, max-age={Settings().cache_max_age_s}"
    etag = hit.headers["etag"]
    assert etag.startswith('"') and not etag.startswith("W/")  # a strong validator
    assert etag == '"' + hashlib.sha256(hit.content + b"application/json").hexdigest()[:32] + '"'

    again = await client.get("/graphql", params=get_params(apq(PAGE)), headers={"if-none-match": etag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag
    other = await client.get("/graphql", params=get_params(apq(PAGE)), headers={"if-none-match": '"stale"'})
    assert other.status_code == 200 and other.content == hit.content


async def test_get_with_variables_by_hash(client):
    document = "query($slug: String!) { workload(slug: $slug) { slug } }"
    await client.post("/graphql", json={"query": document, "extensions": apq(document), "variables": {"slug": "x"}})
    response = await client.get("/graphql", params=get_params(apq(document), variables={"slug": "kernelbench-l3-p12-vgg19"}))
    assert response.json()["data"]["workload"]["slug"] == "kernelbench-l3-p12-vgg19"
    assert "etag" in response.headers


async def test_a_mutation_is_never_run_over_get_even_by_hash(app, client):
    # Registering it over GET is refused (strawberry: no mutation over GET), and it is not stored.
    refused = await client.get("/graphql", params=get_params(apq(MUTATION), query=MUTATION))
    assert refused.status_code == 400 and refused.headers["cache-control"] == "no-store"
    assert len(view_of(app).persisted.store) == 0
    # Stored some other way (a POST that ran), its hash over GET is still refused, 405 for the spec's clients.
    view_of(app).persisted.store.put(sha(MUTATION), MUTATION)
    by_hash = await client.get("/graphql", params=get_params(apq(MUTATION)), headers=NEW)
    assert by_hash.status_code == 405 and by_hash.headers["allow"] == "POST"
    assert by_hash.json()["errors"][0]["extensions"]["code"] == "METHOD_NOT_ALLOWED"
    legacy = await client.get("/graphql", params=get_params(apq(MUTATION)))
    assert legacy.status_code == 400 and "mutation" in legacy.json()["errors"][0]["message"].lower()


async def test_get_answers_with_errors_or_fleet_reads_are_no_store(client):
    invalid = await client.get("/graphql", params={"query": "{ workload(slug: 1) { nope } }"})
    assert invalid.status_code == 200 and invalid.json()["errors"]
    assert invalid.headers["cache-control"] == "no-store" and "etag" not in invalid.headers
    jobs = await client.get("/graphql", params={"query": "{ jobs(first: 1) { nodes { state } } }"})
    assert jobs.status_code == 200 and "errors" not in jobs.json(), jobs.json()
    assert jobs.headers["cache-control"] == "no-store" and "etag" not in jobs.headers
    plain = await client.get("/graphql", params={"query": PAGE})
    assert plain.headers["cache-control"].startswith("public, max-age=") and "etag" in plain.headers


# -- the allow-list: KERNELINDEX_PERSISTED_ONLY ------------------------------------------------------

async def test_persisted_only_runs_registered_documents_by_hash_or_in_full(locked):
    _, client = locked
    by_hash = await client.get("/graphql", params=get_params(apq(PAGE)))
    assert by_hash.json()["data"]["workload"]["slug"] == "kernelbench-l3-p9-resnet18" and "etag" in by_hash.headers
    from_manifest = await client.post("/graphql", json={"extensions": apq(OTHER)})
    assert from_manifest.json()["data"]["workload"]["slug"] == "kernelbench-l3-p12-vgg19"
    in_full = await client.post("/graphql", json={"query": PAGE})
    assert in_full.json()["data"] == by_hash.json()["data"]
    both = await client.post("/graphql", json={"query": OTHER, "extensions": apq(OTHER)})
    assert both.json()["data"] == from_manifest.json()["data"]


async def test_persisted_only_refuses_anything_else_and_learns_nothing(locked):
    app, client = locked
    stranger = "{ policy { version } }"
    for body in ({"query": stranger}, {"query": stranger, "extensions": apq(stranger)}, {"extensions": apq(stranger)}):
        legacy = await client.post("/graphql", json=body)
        assert legacy.status_code == 200
        (error,) = legacy.json()["errors"]
        assert error["extensions"]["code"] == "PERSISTED_QUERY_NOT_ALLOWED"
        assert "KERNELINDEX_PERSISTED_ONLY" in error["message"]
        spec = await client.post("/graphql", json=body, headers=NEW)
        assert spec.status_code == 400 and "data" not in spec.json()
    refused_get = await client.get("/graphql", params={"query": stranger})
    assert refused_get.headers["cache-control"] == "no-store"
    assert len(view_of(app).persisted.store) == 0


async def test_persisted_only_without_files_does_not_start(db_url):
    with pytest.raises(PersistedQueryFileError, match="KERNELINDEX_PERSISTED_QUERY_FILES"):
        create_app(Settings(persisted_only=True), database_url=db_url)


async def test_registered_documents_hit_in_the_default_mode_too(db_url, operations):
    async for _, client in _client_for(Settings(persisted_query_files=[operations]), db_url):
        hit = await client.post("/graphql", json={"extensions": apq(OTHER)})
        assert hit.json()["data"]["workload"]["slug"] == "kernelbench-l3-p12-vgg19"
        anything = await client.post("/graphql", json={"query": "{ policy { version } }"})
        assert "errors" not in anything.json()


async def test_apq_off_says_not_supported(db_url):
    async for _, client in _client_for(Settings(persisted_query_entries=0), db_url):
        full = await client.post("/graphql", json={"query": PAGE, "extensions": apq(PAGE)})
        assert "errors" not in full.json()
        miss = await client.post("/graphql", json={"extensions": apq(PAGE)}, headers=APOLLO_ACCEPT)
        assert miss.status_code == 200
        assert miss.json()["errors"] == [{"message": "PersistedQueryNotSupported",
                                          "extensions": {"code": "PERSISTED_QUERY_NOT_SUPPORTED"}}]


# -- registered files: every problem named by file, line and key -------------------------------------

def _schema_validate():
    from graphql import validate

    from kernelindex.graphql.schema import build_schema

    schema = build_schema(Settings())
    return lambda document: validate(schema._schema, document)


def test_load_documents_reads_graphql_files_manifests_and_hash_maps(operations, tmp_path):
    flat = tmp_path / "codegen.json"
    stranger = "query Policy { policy { version } }"
    flat.write_text(json.dumps({sha(stranger): stranger}))
    documents = load_documents([operations, flat], _schema_validate())
    assert documents == {sha(PAGE): PAGE, sha(OTHER): OTHER, sha(stranger): stranger}


def test_a_manifest_hash_that_is_not_the_documents_names_file_line_and_key(tmp_path):
    path = tmp_path / "manifest.json"
    wrong = "0" * 64
    manifest = {"format": "apollo-persisted-query-manifest", "version": 1,
                "operations": [{"id": sha(PAGE), "body": PAGE}, {"id": wrong, "body": OTHER}]}
    path.write_text(json.dumps(manifest, indent=2))
    with pytest.raises(PersistedQueryFileError) as caught:
        load_documents([path])
    text = str(caught.value)
    line = path.read_text().splitlines().index(f'      "id": "{wrong}",') + 1
    assert text.startswith(f"{path}:{line}: operations[1].id: {wrong} is not the SHA-256 of its document")
    assert sha(OTHER) in text


def test_a_registered_document_that_does_not_fit_the_schema_stops_start_up(tmp_path):
    path = tmp_path / "stale.graphql"
    path.write_text("query Stale {\n  workload(slug: \"x\") {\n    nope\n  }\n}\n")
    with pytest.raises(PersistedQueryFileError, match=r"stale\.graphql: line 3 column 5: does not fit the schema: "
                                                      r"Cannot query field 'nope'"):
        load_documents([path], _schema_validate())
    path.write_text("query {\n  workload(")
    with pytest.raises(PersistedQueryFileError, match=r"stale\.graphql: line 2 column 12: not GraphQL"):
        load_documents([path])


@pytest.mark.parametrize(
    "content, says",
    [("[1]", ":1: an apollo-persisted-query-manifest or an object"),
     ('{"abc": "{ policy { version } }"}', ':1: abc: "abc" is not a SHA-256'),
     ("{\n  nope", ":2: invalid JSON"),
     ('{"format": "apollo-persisted-query-manifest", "version": 2, "operations": []}', ":1: version:")],
)
def test_bad_json_files_are_named(tmp_path, content, says):
    path = tmp_path / "ops.json"
    path.write_text(content)
    with pytest.raises(PersistedQueryFileError, match=f"^{path}{says}".replace("(", r"\(").replace("[", r"\[")):
        load_documents([path])


def test_a_missing_path_is_named(tmp_path):
    with pytest.raises(PersistedQueryFileError, match="no such file or folder"):
        persisted_queries(Settings(persisted_query_files=[tmp_path / "absent"]))


# -- the per-process store ---------------------------------------------------------------------------

def test_the_apq_store_is_a_bounded_lru_and_registered_documents_stay():
    store = DocumentStore({sha(PAGE): PAGE}, max_entries=2, max_bytes=10_000)
    for text in ("{ a }", "{ b }", "{ c }"):
        store.put(sha256_hex(text), text)
    assert store.get(sha("{ a }")) is None and store.get(sha("{ c }")) == "{ c }" and len(store) == 2
    store.get(sha("{ b }"))  # used: now the most recent
    store.put(sha("{ d }"), "{ d }")
    assert store.get(sha("{ b }")) == "{ b }" and store.get(sha("{ c }")) is None
    assert store.get(sha(PAGE)) == PAGE  # registered: never evicted, never counted

    by_bytes = DocumentStore({}, max_entries=100, max_bytes=12)
    by_bytes.put(sha("{ aaaa }"), "{ aaaa }")  # 8 bytes
    by_bytes.put(sha("{ bbbb }"), "{ bbbb }")  # 16 in all: the oldest goes
    assert by_bytes.get(sha("{ aaaa }")) is None and by_bytes.get(sha("{ bbbb }")) == "{ bbbb }"
    by_bytes.put(sha("{ " + "x" * 20 + " }"), "{ " + "x" * 20 + " }")  # larger than the whole store: not kept
    assert len(by_bytes) == 1


def test_serve_refuses_a_bad_persisted_query_file_in_one_line(cli, monkeypatch, tmp_path, capsys):
    from kernelindex.settings import get_settings

    bad = tmp_path / "ops.graphql"
    bad.write_text("query { nope(\n", encoding="utf-8")
    monkeypatch.setenv("KERNELINDEX_PERSISTED_QUERY_FILES", json.dumps([str(bad)]))
    get_settings.cache_clear()
    assert cli("serve", "--port", "0") == 2
    err = capsys.readouterr().err
    assert "error: cannot serve:" in err and "ops.graphql" in err and "unexpected" not in err
