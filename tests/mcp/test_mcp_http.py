"""The MCP server at /mcp (streamable HTTP), through the SDK's own client against a live server: the
tools and their input schemas, each tool's answer on the seed and that it is the GraphQL API's answer,
the API's error codes, the tools' bounds, and the token a write needs."""

from __future__ import annotations

import json

import httpx

from kernelindex.mcp.tools import MAX_RECORDS, MAX_SOURCE_CHARS
from tests.api.helpers import make_token
from tests.mcp.clients import TOOLS, call, http_session, refused

RESNET = "kernelbench-l3-p9-resnet18"
H100 = "NVIDIA H100"  # the family: every H100 SKU's records


async def test_the_tools_are_listed_with_descriptions_and_typed_bounded_inputs(live_server):
    async with http_session(live_server) as session:
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(listed) == TOOLS
    assert all(tool.description and len(tool.description) > 80 for tool in listed.values())
    fastest = listed["fastest_implementation"].input_schema
    assert fastest["required"] == ["workload", "hardware"]
    assert fastest["properties"]["first"]["maximum"] == MAX_RECORDS and fastest["properties"]["first"]["minimum"] == 1
    assert fastest["properties"]["workload"]["type"] == "string" and fastest["properties"]["workload"]["description"]
    runs = listed["compare_runs"].input_schema["properties"]["run_ids"]
    assert (runs["type"], runs["minItems"], runs["maxItems"]) == ("array", 2, 8)
    submit = listed["submit_kernel"].input_schema
    assert set(submit["required"]) == {"workload", "source", "title", "hardware"}
    assert submit["properties"]["source"]["maxLength"] == MAX_SOURCE_CHARS
    assert "ctx" not in submit["properties"]  # the SDK's context is injected, never asked of the agent
    kinds = listed["find_workloads"].input_schema["properties"]["kind"]["anyOf"][0]["enum"]
    assert kinds == ["MODEL", "OPERATOR", "FUSION"]
    assert listed["submit_kernel"].annotations.read_only_hint is False
    assert listed["fastest_implementation"].annotations.read_only_hint is True

    # Typed answers, read off the GraphQL schema (kernelindex.mcp.answers): the SDK's client checks every
    # answer of these tests against them.
    answer = listed["fastest_implementation"].output_schema
    assert answer["required"] == ["workload", "hardware", "measured", "records"]
    record = answer["$defs"][answer["properties"]["records"]["items"]["$ref"].rsplit("/", 1)[1]]
    run = answer["$defs"][record["properties"]["run"]["$ref"].rsplit("/", 1)[1]]
    assert run["properties"]["trustLevel"]["enum"] == ["REPORTED", "REPRODUCIBLE", "VERIFIED", "REPLICATED"]
    assert "REPLICATED" in run["properties"]["trustLevel"]["description"]  # the schema's own words
    assert run["properties"]["ciHalfWidthMs"]["type"] == ["number", "null"]  # compact(): `number | null`
    assert record["properties"]["latencyMs"]["type"] == ["number", "null"]
    assert record["properties"]["figure"]["type"] == "number" and record["properties"]["metric"]["enum"] == [
        "LATENCY", "MEMORY", "SCORE"]
    assert fastest["properties"]["metric"]["enum"] == ["LATENCY", "MEMORY", "SCORE"]
    assert "configurations" in fastest["properties"]["configuration"]["description"]
    assert all(tool.output_schema and tool.output_schema["type"] == "object" for tool in listed.values())


# What tools/list weighs, as the SDK's client receives it (its result serialised as the SDK sends it):
# 78,734 bytes before the output schemas were compacted (kernelindex.mcp.answers.compact), 60,736 after
# (measured 2026-12-02). The bound leaves about 8% for fields the documents come to select; past it, look
# at what the tools answer (every tool's whole schema is read by every agent that lists them).
TOOLS_LIST_MAX_BYTES = 66_000


async def test_tools_list_is_bounded_and_its_output_schemas_compact(live_server):
    async with http_session(live_server) as session:
        listed = await session.list_tools()
    size = len(listed.model_dump_json(by_alias=True, exclude_none=True).encode())
    assert size <= TOOLS_LIST_MAX_BYTES, f"tools/list is {size} bytes"
    for tool in listed.tools:
        schema = tool.output_schema
        assert schema is not None and "title" not in schema
        # One definition per way an object is selected, named by its GraphQL type, without a title.
        assert all("title" not in d and "_" not in name for name, d in schema.get("$defs", {}).items()), tool.name
        assert '"anyOf":[{"type":"string"},{"type":"null"}]' not in json.dumps(schema, separators=(",", ":"))
    fastest = next(tool.output_schema for tool in listed.tools if tool.name == "fastest_implementation")
    assert fastest is not None
    assert set(fastest["$defs"]) == {"EnvironmentRecord", "Implementation", "Implementation2", "Run", "Configuration",
                                     "AxisBinding", "Environment", "Hardware", "Protocol", "Source", "Workload"}
    # The workload's canonical configuration and a run's configuration are selected alike: one definition.
    assert (fastest["$defs"]["Workload"]["properties"]["canonicalConfiguration"]["$ref"]
            == fastest["$defs"]["Run"]["properties"]["configuration"]["$ref"] == "#/$defs/Configuration")


async def test_fastest_on_a_hardware_is_the_records_answer_with_its_interval_trust_source_and_licence(live_server):
    async with http_session(live_server) as session:
        answer = await call(session, "fastest_implementation", {"workload": RESNET, "hardware": H100, "first": 5})
        not_there = await call(session, "fastest_implementation", {"workload": RESNET, "hardware": "NVIDIA B200"})
        semantics = await call(session, "workload_semantics", {"workload": RESNET})
        (canonical,) = [c for c in semantics["configurations"] if c["canonical"] and c["metric"] == "LATENCY"]
        at_key = await call(session, "fastest_implementation", {"workload": RESNET, "hardware": H100, "first": 5,
                                                                "configuration": canonical["key"]})
    assert answer["measured"] is True and answer["workload"]["slug"] == RESNET
    assert answer["workload"]["canonicalConfiguration"]["display"] == "batch_size = 2 · fp32"
    best = answer["records"][0]
    assert (best["implementation"]["slug"], best["latencyMs"]) == ("torch_eager", 1.39)
    run = best["run"]
    assert run["ciHalfWidthMs"] > 0 and run["trustLevel"] == "REPORTED" and run["evidence"] == "REPORTED"
    assert run["source"]["name"] == "KernelBench baseline timings" and run["source"]["licence"] == "MIT"
    assert best["implementation"]["licence"] == "MIT"
    assert run["configuration"]["display"] == answer["workload"]["canonicalConfiguration"]["display"]
    assert run["environment"]["hardware"]["family"] == H100
    latencies = [r["latencyMs"] for r in answer["records"]]
    assert latencies == sorted(latencies)
    assert not_there == {"workload": not_there["workload"], "hardware": "NVIDIA B200", "measured": False, "records": []}
    # the canonical configuration asked for by its key is the default answer
    assert at_key == answer and canonical["configuration"]["display"] == "batch_size = 2 · fp32"
    assert all(r["metric"] == "LATENCY" and r["figure"] == r["latencyMs"] for r in answer["records"])

    # One truth: the same records, figures and runs as the GraphQL API's list of records on that hardware.
    query = """query ($h: String!) { records(hardware: $h) { nodes { workload { slug }
               records { latencyMs implementation { slug } run { id ciHalfWidthMs trustLevel } } } } }"""
    async with httpx.AsyncClient(base_url=live_server) as client:
        body = (await client.post("/graphql", json={"query": query, "variables": {"h": H100}})).json()
    (graphql_records,) = [n["records"] for n in body["data"]["records"]["nodes"] if n["workload"]["slug"] == RESNET]
    assert [(r["latencyMs"], r["implementation"]["slug"], r["run"]) for r in graphql_records] == [
        (r["latencyMs"], r["implementation"]["slug"],
         {"id": r["run"]["id"], "ciHalfWidthMs": r["run"]["ciHalfWidthMs"], "trustLevel": r["run"]["trustLevel"]})
        for r in answer["records"]]


async def test_a_query_is_served_from_the_response_cache_and_a_job_never_is(live_server, db_url):
    """A tool's query is one entry of the response cache with the same operation on /graphql: the second
    call is a hit and answers the same; a write moves the data version and the answer with it. A job's
    answer is never kept: its state shows at once."""
    import asyncpg

    from kernelindex.db.urls import to_libpq_url
    from tests.fleet.conftest import candidate

    arguments = {"workload": RESNET, "hardware": H100}

    async def hits(client: httpx.AsyncClient) -> int:
        text = (await client.get("/metrics")).text
        return int(next(line.split()[-1] for line in text.splitlines()
                        if line.startswith("kernelindex_response_cache_hits")))

    token = await make_token(db_url, "implementations:submit")
    async with httpx.AsyncClient(base_url=live_server) as client, http_session(live_server, token) as session:
        first = await call(session, "fastest_implementation", arguments)
        before = await hits(client)
        assert await call(session, "fastest_implementation", arguments) == first
        assert await hits(client) == before + 1
        retracted = first["records"][0]["run"]["id"]
        retract = "mutation ($id: ID!) { retractRun(id: $id, reason: \"test\") { ok } }"
        body = (await client.post("/graphql", json={"query": retract, "variables": {"id": retracted}},
                                  headers={"Authorization": f"Bearer {await make_token(db_url, 'runs:retract')}"})).json()
        assert body["data"]["retractRun"]["ok"], body
        moved = await call(session, "fastest_implementation", arguments)
        assert retracted not in [r["run"]["id"] for r in moved["records"]]

        submitted = await call(session, "submit_kernel", {"workload": RESNET, "source": candidate("honest"),
                                                          "title": "fair", "hardware": "cpu"})
        job = submitted["jobs"][0]
        assert (await call(session, "follow_job", {"job_id": job["id"]}))["state"] == "QUEUED"
        conn = await asyncpg.connect(to_libpq_url(db_url))
        try:
            await conn.execute("UPDATE fleet_jobs SET state = 'running', worker = 'w1' WHERE id = $1", job["databaseId"])
        finally:
            await conn.close()
        running = await call(session, "follow_job", {"job_id": job["id"]})
    assert (running["state"], running["worker"]) == ("RUNNING", "w1")


async def test_errors_are_the_apis_with_their_codes_and_arguments_out_of_bounds_are_refused(live_server):
    async with http_session(live_server) as session:
        unknown_workload = await refused(session, "fastest_implementation", {"workload": "no-such-thing", "hardware": H100})
        unknown_hardware = await refused(session, "fastest_implementation", {"workload": RESNET, "hardware": "H1000"})
        too_many = await refused(session, "fastest_implementation", {"workload": RESNET, "hardware": H100,
                                                                    "first": MAX_RECORDS + 1})
        one_run = await refused(session, "compare_runs", {"run_ids": ["UnVuOjE="]})
        not_a_run = await refused(session, "compare_runs", {"run_ids": ["UnVuOjE=", "Sm9iOjE="]})
        no_job = await refused(session, "follow_job", {"job_id": "424242"})
        no_semantics = await refused(session, "workload_semantics", {"workload": "no-such-thing"})
        missing = await refused(session, "fastest_implementation", {"workload": RESNET})
        no_configuration = await refused(session, "fastest_implementation", {"workload": RESNET, "hardware": H100,
                                                                           "configuration": "{}"})
        no_memory = await refused(session, "fastest_implementation", {"workload": RESNET, "hardware": H100,
                                                                    "configuration": "{}", "metric": "MEMORY"})
    assert "BAD_USER_INPUT" in unknown_workload and "no workload with slug 'no-such-thing'" in unknown_workload
    assert "BAD_USER_INPUT" in unknown_hardware and "did you mean" in unknown_hardware and "H200" in unknown_hardware
    assert "less than or equal to 10" in too_many
    assert "at least 2" in one_run
    assert "BAD_USER_INPUT" in not_a_run and "Job ID" in not_a_run
    assert "BAD_USER_INPUT" in no_job and "BAD_USER_INPUT" in no_semantics
    assert "hardware" in missing and "required" in missing.lower()
    assert "BAD_USER_INPUT" in no_configuration and "holds no latency records at configuration '{}'" in no_configuration
    assert "BAD_USER_INPUT" in no_memory and "holds no memory records" in no_memory


async def test_find_workloads_filters_and_pages(live_server):
    async with http_session(live_server) as session:
        everything = await call(session, "find_workloads", {"suite": "kernelbench"})
        first = await call(session, "find_workloads", {"suite": "kernelbench", "first": 1})
        second = await call(session, "find_workloads", {"suite": "kernelbench", "first": 1, "after": first["next_cursor"]})
        resnet = await call(session, "find_workloads", {"name": "resnet"})
        measured = await call(session, "find_workloads", {"measured_on": H100, "kind": "MODEL", "level": 3})
        unmeasured = await call(session, "find_workloads", {"not_measured_on": "NVIDIA B200"})
        nowhere = await call(session, "find_workloads", {"measured_on": "NVIDIA B200"})
    slugs = [w["slug"] for w in everything["workloads"]]
    assert everything["total_count"] == 2 and len(slugs) == 2 and everything["next_cursor"] is None
    assert first["next_cursor"] and [w["slug"] for w in first["workloads"] + second["workloads"]] == slugs
    assert second["next_cursor"] is None
    assert [w["slug"] for w in resnet["workloads"]] == [RESNET]
    assert measured["total_count"] == 2 and unmeasured["total_count"] == 2 and nowhere["total_count"] == 0
    assert {"slug", "title", "suite", "level", "family", "kind", "eligibleRunCount"} <= set(everything["workloads"][0])


async def test_comparisons_semantics_floors_and_sources(live_server):
    async with http_session(live_server) as session:
        fastest = await call(session, "fastest_implementation", {"workload": RESNET, "hardware": H100, "first": 2})
        ids = [r["run"]["id"] for r in fastest["records"]]
        runs = await call(session, "compare_runs", {"run_ids": ids})
        same = await call(session, "compare_runs", {"run_ids": [ids[0], ids[0]]})
        implementations = await call(session, "compare_implementations", {"workload": RESNET, "first": 1})
        semantics = await call(session, "workload_semantics", {"workload": RESNET, "floors": 2})
        sources = await call(session, "list_sources")
    assert [r["id"] for r in runs["runs"]] == ids
    # Two environments: not one cohort, so no winner, and the reason is said.
    assert runs["comparable"] is False and runs["winner"] is None
    assert runs["incomparable_because"].startswith("different hardware")
    hardware = [d for d in runs["differences"] if d["field"] == "HARDWARE"]
    assert hardware and hardware[0]["values"] == [r["run"]["environment"]["hardware"]["sku"] for r in fastest["records"]]
    assert same["comparable"] is True and same["winner"] == ids[0]
    assert len(implementations["implementations"]) == 1 and implementations["implementations"][0]["vsBest"] == 1.0
    assert len(implementations["comparison"]["rows"]) == 1
    assert implementations["comparison"]["rows"][0]["intervalMs"][0] <= implementations["comparison"]["rows"][0]["latencyMs"]
    assert semantics["semantics"]["inputs"] and semantics["semantics"]["outputs"]
    assert semantics["canonicalConfiguration"]["bindings"] == [{"axis": "batch_size", "value": 2}]
    assert 1 <= len(semantics["floors"]) <= 2 and all("floorNs" in f and "bound" in f for f in semantics["floors"])
    assert [(s["name"], s["licence"]) for s in sources["sources"]][0] == ("KernelBench baseline timings", "MIT")
    assert {"terms", "attribution", "runCount", "latestRevision"} <= set(sources["sources"][0])


async def test_every_answer_is_bounded_by_its_arguments(live_server):
    """At each tool's largest arguments, its answer stays small enough for an agent's context."""
    async with http_session(live_server) as session:
        answers = [
            await call(session, "find_workloads", {"first": 50}),
            await call(session, "fastest_implementation", {"workload": RESNET, "hardware": H100, "first": MAX_RECORDS}),
            await call(session, "compare_implementations", {"workload": RESNET, "first": 25}),
            await call(session, "workload_semantics", {"workload": RESNET, "floors": 25}),
            await call(session, "list_sources"),
        ]
    sizes = [len(json.dumps(answer)) for answer in answers]
    assert max(sizes) < 64 * 1024, sizes
    assert len(answers[3]["floors"]) <= 25 and len(answers[1]["records"]) <= MAX_RECORDS


async def test_submitting_needs_a_token_with_the_implementations_submit_scope(live_server, db_url):
    arguments = {"workload": RESNET, "source": "class ModelNew:\n    pass\n", "title": "t", "hardware": "cpu"}
    async with http_session(live_server) as session:
        anonymous = await refused(session, "submit_kernel", arguments)
        too_big = await refused(session, "submit_kernel", arguments | {"source": "#" * (MAX_SOURCE_CHARS + 1)})
    assert "UNAUTHENTICATED" in anonymous
    assert "at most" in too_big  # refused by the input schema, before any token or database is asked
    async with http_session(live_server, await make_token(db_url, "runs:write")) as session:
        forbidden = await refused(session, "submit_kernel", arguments)
    assert "FORBIDDEN" in forbidden and "implementations:submit" in forbidden
    async with http_session(live_server, await make_token(db_url, "implementations:submit")) as session:
        problems = await call(session, "submit_kernel", arguments | {"replicas": 1, "source": "def f(:\n"})
    # Accepted by the token, refused by the submission's own checks: reported as problems, nothing queued.
    assert problems["ok"] is False and problems["jobs"] == [] and problems["problems"][0]["key"] == "FILE"
