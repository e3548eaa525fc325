"""Planned execution answers byte for byte as graphql-core does (issue 27, point 2).

Two servers on one database, one answering queries by their plans (kernelindex.graphql.plan) and one
by graphql-core alone (KERNELINDEX_PLANNED_EXECUTION=false), are sent the same requests: every
operation under examples/operations/ (with the fragments it spreads), the JSON twins' page query, the
README's query, and generated documents (random selections over the schema's query fields with
aliases, named and inline fragments, variables, @include/@skip, __typename and nested connections,
forward and backward, some with arguments that make field errors). Status and body must be the same
bytes (the request id of an error aside: each request has its own). The database holds a second
suite beside KernelBench, hostile stored values (figures at the ends of the double range, text with
quotes, escapes, line separators and astral characters) and a run whose stored numbers are past
every check, as tests/ingest/test_hostile_pages.py writes them.
"""

from __future__ import annotations

import base64
import dataclasses
import os
import random
import re
from datetime import date
from pathlib import Path

import httpx
import pytest
from graphql import (
    FragmentDefinitionNode,
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    GraphQLUnionType,
    OperationDefinitionNode,
    get_named_type,
    is_leaf_type,
    print_ast,
)

from kernelindex.db.engine import in_own_transaction
from kernelindex.graphql import plan
from kernelindex.graphql.schema import build_schema
from kernelindex.ingest.source_import import Snapshot, import_source
from kernelindex.settings import Settings
from kernelindex.web.twins import WORKLOAD_PAGE_QUERY
from tests.api.test_catalog_every_suite import ROUTE, _synthetic_read
from tests.api.test_frontend_tooling import documents, with_fragments
from tests.conftest import FIXED_NOW
from tests.ingest.conftest import execute

ROOT = Path(__file__).resolve().parents[2]
# More documents or another seed: PLAN_DIFF_DOCS=5000 PLAN_DIFF_SEED=3 pytest tests/api/test_planned_execution.py -s
GENERATED = int(os.environ.get("PLAN_DIFF_DOCS", "1000"))
SEED = int(os.environ.get("PLAN_DIFF_SEED", "27"))
HOSTILE_TEXT = "quote \" backslash \\ tab \t newline \n line-sep \u2028 astral \U0001d518 </script> ü"
_REQUEST_ID = re.compile(rb'"request_id":"[^"]*"')


def readme_queries() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```graphql\n(.*?)```", text, flags=re.S)


def example_documents() -> list[tuple[str, str]]:
    parsed = documents()
    fragments = {d.name.value: d for doc in parsed.values() for d in doc.definitions
                 if isinstance(d, FragmentDefinitionNode)}
    out = []
    for document in parsed.values():
        sent = with_fragments(document, fragments)
        for definition in document.definitions:
            if isinstance(definition, OperationDefinitionNode) and definition.name is not None:
                out.append((print_ast(sent), definition.name.value))
    return out


# -- the database ----------------------------------------------------------------------------------

async def _hostile_database(db_url: str) -> None:
    read, source = _synthetic_read()
    read.workloads = [dataclasses.replace(read.workloads[0], title=HOSTILE_TEXT, description=HOSTILE_TEXT * 3)]
    summary = await in_own_transaction(db_url, lambda s: import_source(s, read, [source], Snapshot("r1", date(2026, 8, 1), ROUTE)))
    assert summary.rejected == 0, summary.problems
    await execute(
        db_url,
        # One live KernelBench run with numbers past every check (the ends of the double range).
        """DO $$ DECLARE c record; BEGIN
          FOR c IN SELECT conname FROM pg_constraint WHERE conrelid = 'runs'::regclass AND contype = 'c' LOOP
            EXECUTE format('ALTER TABLE runs DROP CONSTRAINT %I', c.conname);
          END LOOP; END $$""",
        """UPDATE runs SET mean_ms = 1e-300, min_ms = 1e-300, max_ms = 1e308, std_ms = 1e300, figure = 1e-300
           WHERE id = (SELECT max(id) FROM runs WHERE superseded_at IS NULL AND retracted_at IS NULL)""",
        f"UPDATE implementations SET title = {_sql_text(HOSTILE_TEXT)} WHERE id = (SELECT min(id) FROM implementations)",
    )


def _sql_text(value: str) -> str:
    return "E'" + value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n").replace("\t", "\\t") + "'"


@pytest.fixture
async def servers(db_url):
    from kernelindex.web.app import create_app

    await _hostile_database(db_url)
    clients = []
    apps = []
    for planned in (True, False):
        # No response cache: every request executes.
        app = create_app(Settings(planned_execution=planned, response_cache_entries=0), database_url=db_url,
                         clock=lambda: FIXED_NOW)
        apps.append(app)
    async with apps[0].router.lifespan_context(apps[0]), apps[1].router.lifespan_context(apps[1]):
        for app in apps:
            clients.append(httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver"))
        try:
            yield clients[0], clients[1]
        finally:
            for client in clients:
                await client.aclose()


class Comparison:
    def __init__(self, planned: httpx.AsyncClient, plain: httpx.AsyncClient) -> None:
        self.planned = planned
        self.plain = plain
        self.documents = 0
        self.fields = 0
        self.with_errors = 0
        self.planned_with_errors = 0
        self.races = 0

    async def same(self, query: str, variables: dict | None = None, operation: str | None = None) -> dict:
        payload = {"query": query, "variables": variables or {}}
        if operation:
            payload["operationName"] = operation
        planned_before = plan.STATS.planned
        a = await self.planned.post("/graphql", json=payload)
        was_planned = plan.STATS.planned > planned_before
        b = await self.plain.post("/graphql", json=payload)
        body_a = _REQUEST_ID.sub(b'"request_id":""', a.content)
        body_b = _REQUEST_ID.sub(b'"request_id":""', b.content)
        if (a.status_code, body_a) != (b.status_code, body_b) and b'"errors"' in body_b:
            # Errors in concurrent fields race (which fails first decides what the others' cancellation
            # leaves): graphql-core's own answer then depends on timing. The planned answer must be one
            # graphql-core gives for the same request.
            seen = {(b.status_code, body_b)}
            for _ in range(8):
                again = await self.plain.post("/graphql", json=payload)
                seen.add((again.status_code, _REQUEST_ID.sub(b'"request_id":""', again.content)))
                if (a.status_code, body_a) in seen:
                    self.races += 1
                    body_b = body_a
                    break
        assert (a.status_code, body_a) == (b.status_code, body_b), (query, variables, body_a[:2000], body_b[:2000])
        self.documents += 1
        body = a.json()
        self.fields += _count_fields(body.get("data"))
        self.with_errors += bool(body.get("errors"))
        self.planned_with_errors += bool(body.get("errors")) and was_planned
        return body


def _count_fields(value) -> int:
    if isinstance(value, dict):
        return sum(1 + _count_fields(v) for v in value.values())
    if isinstance(value, list):
        return sum(_count_fields(v) for v in value)
    return 0


# -- generated documents ---------------------------------------------------------------------------

class Generator:
    """Random query documents over the schema, within the server's depth, alias and token limits."""

    def __init__(self, schema: GraphQLSchema, rng: random.Random, values: dict[str, list]) -> None:
        self.schema = schema
        self.rng = rng
        self.values = values

    def document(self) -> tuple[str, dict]:
        self.variables: dict[str, tuple[str, object]] = {}
        self.fragments: dict[str, str] = {}
        self.aliases = 0
        query_type = self.schema.query_type
        assert query_type is not None
        roots = [name for name, f in query_type.fields.items() if self._arguments_possible(f)]
        selections = []
        for index in range(self.rng.randint(1, 2)):
            name = self.rng.choice(roots)
            selections.append(self._field(query_type, name, depth=1, alias=f"r{index}"))
        declared = "".join(f" ${n}: {t}" for n, (t, _v) in self.variables.items())
        head = f"query Generated({declared})" if declared else "query Generated"
        text = head + " { " + " ".join(selections) + " }" + "".join(f" {f}" for f in self.fragments.values())
        return text, {n: v for n, (_t, v) in self.variables.items()}

    def _arguments_possible(self, field) -> bool:
        return all(self._value(a.type, n, probe=True) is not None
                   for n, a in field.args.items() if isinstance(a.type, GraphQLNonNull))

    def _value(self, type_, name: str, probe: bool = False):
        """A literal for an argument (as GraphQL text and as a Python value), or None."""
        named = get_named_type(type_)
        candidates = self.values.get(name)
        if isinstance(type_, GraphQLNonNull):
            type_ = type_.of_type
        if isinstance(type_, GraphQLList):
            inner = self._value(type_.of_type, name, probe)
            if inner is None:
                return None
            second = self._value(type_.of_type, name, probe)
            assert second is not None
            return ("[" + inner[0] + ", " + second[0] + "]", [inner[1], second[1]])
        if candidates and not isinstance(named, (GraphQLInputObjectType, GraphQLEnumType)):
            value = self.rng.choice(candidates)
        elif isinstance(named, GraphQLEnumType):
            value = self.rng.choice(list(named.values))
            return (value, value)
        elif named.name == "Int":
            wrong = self.rng.random() < 0.08  # a page size the server refuses: a field error
            value = (self.rng.choice([0, 101, -1]) if wrong else self.rng.randint(1, 3)) if name in ("first", "last") \
                else self.rng.randint(0, 3)
        elif named.name == "Boolean":
            value = self.rng.random() < 0.5
        elif named.name in ("String", "ID") and not probe:
            value = self.rng.choice(["", "nope", HOSTILE_TEXT])
        elif named.name in ("String", "ID"):
            value = "x"
        else:
            return None
        if isinstance(value, bool):
            return ("true" if value else "false", value)
        if isinstance(value, str):
            return ('"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
                    .replace("\u2028", "\\u2028") + '"', value)
        return (str(value), value)

    def _arguments(self, field) -> str:
        parts = []
        # Mostly one direction of paging (both, or a cursor the other way, is a field error: some are wanted).
        direction = self.rng.choice(["first", "first", "last"]) if self.rng.random() < 0.9 else None
        for name, argument in field.args.items():
            required = isinstance(argument.type, GraphQLNonNull)
            if direction is not None and name in ("first", "last", "after", "before") and name not in (direction,):
                continue
            if not required and (name not in ("first", "last", "slug") or self.rng.random() < 0.5):
                if self.rng.random() < 0.85:
                    continue
            value = self._value(argument.type, name)
            if value is None:
                if required:
                    return "!"
                continue
            if self.rng.random() < 0.4:
                variable = f"v{len(self.variables)}"
                self.variables[variable] = (str(argument.type), value[1])
                parts.append(f"{name}: ${variable}")
            else:
                parts.append(f"{name}: {value[0]}")
        if "first" in field.args and "last" in field.args and not any(p.startswith(("first", "last")) for p in parts):
            parts.append("first: 2")
        return "(" + ", ".join(parts) + ")" if parts else ""

    def _directive(self) -> str:
        roll = self.rng.random()
        if roll > 0.15:
            return ""
        which = self.rng.choice(["include", "skip"])
        if self.rng.random() < 0.5:
            return f" @{which}(if: {self.rng.choice(['true', 'false'])})"
        variable = f"v{len(self.variables)}"
        self.variables[variable] = ("Boolean!", self.rng.random() < 0.5)
        return f" @{which}(if: ${variable})"

    def _field(self, parent, name: str, depth: int, alias: str | None = None) -> str:
        field = parent.fields[name]
        arguments = self._arguments(field)
        if arguments == "!":
            return "__typename"
        if arguments and alias is None and self.aliases < 10:
            self.aliases += 1
            alias = f"a{self.aliases}"
        head = (f"{alias}: " if alias else "") + name + arguments + self._directive()
        named = get_named_type(field.type)
        if is_leaf_type(named):
            return head
        return head + " " + self._selection(named, depth + 1)

    def _selection(self, type_, depth: int) -> str:
        if isinstance(type_, (GraphQLInterfaceType, GraphQLUnionType)):
            possible = self.schema.get_possible_types(type_)
            parts = ["__typename"]
            for object_type in self.rng.sample(possible, min(len(possible), 2)):
                parts.append(f"... on {object_type.name} {self._selection(object_type, depth)}")
            if isinstance(type_, GraphQLInterfaceType):
                parts.append("id")
            return "{ " + " ".join(parts) + " }"
        assert isinstance(type_, GraphQLObjectType)
        fields = list(type_.fields)
        leaves = [n for n in fields if is_leaf_type(get_named_type(type_.fields[n].type)) and not type_.fields[n].args]
        objects = [n for n in fields if not is_leaf_type(get_named_type(type_.fields[n].type))]
        chosen = self.rng.sample(leaves, min(len(leaves), self.rng.randint(2, 7))) if leaves else []
        if depth < 6 and objects:
            chosen += self.rng.sample(objects, min(len(objects), self.rng.randint(0, 2 if depth < 4 else 1)))
        if not chosen:
            chosen = ["__typename"]
        parts = [self._field(type_, n, depth) if n != "__typename" else n for n in chosen]
        roll = self.rng.random()
        if roll < 0.15:
            parts.append("__typename")
        elif roll < 0.3 and leaves:
            parts.append(f"... on {type_.name}{self._directive()} {{ {self.rng.choice(leaves)} }}")
        elif roll < 0.45 and leaves:
            fragment = f"F{len(self.fragments)}"
            self.fragments[fragment] = f"fragment {fragment} on {type_.name} {{ {' '.join(self.rng.sample(leaves, min(2, len(leaves))))} }}"
            parts.append(f"...{fragment}{self._directive()}")
        elif roll < 0.5:
            parts.append(f"...{self._directive() or ' @include(if: true)'} {{ __typename }}")
        return "{ " + " ".join(parts) + " }"


async def _known_values(client: httpx.AsyncClient) -> dict[str, list]:
    body = (await client.post("/graphql", json={"query": """{
      workloads(first: 20) { nodes { id slug } }
      runs(first: 8) { nodes { id } }
      hardware(first: 5) { nodes { sku shortName } }
      implementations(first: 5) { nodes { slug } }
    }"""})).json()
    data = body.get("data") or {}
    assert "errors" not in body, body
    slugs = [w["slug"] for w in data["workloads"]["nodes"]]
    ids = [w["id"] for w in data["workloads"]["nodes"]] + [r["id"] for r in data["runs"]["nodes"]]
    runs = [r["id"] for r in data["runs"]["nodes"]]
    hardware = [h["sku"] for h in data["hardware"]["nodes"]] + [h["shortName"] for h in data["hardware"]["nodes"]]
    return {"slug": [*slugs, "no-such-workload"], "workload": slugs, "id": [*ids, "bm9wZQ=="], "ids": runs,
            "hardware": [*hardware, "H100"], "sku": hardware, "measuredOn": hardware, "runId": ids,
            "implementation": [i["slug"] for i in data["implementations"]["nodes"]], "after": [], "before": []}


async def test_planned_and_graphql_core_answer_alike(servers):
    planned, plain = servers
    compare = Comparison(planned, plain)
    before = (plan.STATS.planned, plan.STATS.unplanned)
    values = await _known_values(plain)

    fixed = 0
    for query, operation in example_documents():
        variables = {"slug": values["workload"][0], "workload": values["workload"][0], "hardware": "H100", "id": values["id"][0], "ids": values["ids"][:2],
                     "decision": "ACCEPT", "reason": "x", "input": {}}
        await compare.same(query, variables, operation)
        fixed += 1
    built = plan.STATS.plans_built
    for slug in values["workload"]:
        body = await compare.same(WORKLOAD_PAGE_QUERY, {"slug": slug})
        assert body["data"]["workload"]["slug"] == slug
        fixed += 1
    assert plan.STATS.plans_built - built <= 1  # one plan for the page, whatever the slug
    for query in readme_queries():
        await compare.same(query)
        fixed += 1
    planned_fixed = plan.STATS.planned - before[0]
    assert plan.STATS.unplanned == before[1]  # every query of the examples, the twins and the README was planned

    schema = build_schema(Settings())._schema
    generator = Generator(schema, random.Random(SEED), values)
    for _ in range(GENERATED):
        query, variables = generator.document()
        await compare.same(query, variables)
    after = (plan.STATS.planned, plan.STATS.unplanned)
    planned_count, unplanned = (a - b for a, b in zip(after, before, strict=True))
    print(f"\ndifferential: {compare.documents} documents ({fixed} fixed, {GENERATED} generated), "
          f"{compare.fields} fields compared, {compare.with_errors} with errors ({compare.planned_with_errors} of them "
          f"planned, {compare.races} racing); queries planned {planned_count}, queries left to graphql-core {unplanned}")
    assert compare.documents >= GENERATED + fixed
    # The fixed queries' reads are planned (the twins' page and the README's among them).
    assert planned_fixed >= len(values["workload"]) + len(readme_queries())
    # Most generated documents run by their plan: the comparison is not graphql-core against itself.
    assert planned_count >= GENERATED * 3 // 4, (planned_count, unplanned)
    # Field errors (bad arguments, cursors, IDs) were planned too, and answered as graphql-core answers them.
    assert compare.planned_with_errors >= GENERATED // 20, compare.planned_with_errors


def test_no_extension_wraps_resolvers():
    """A plan calls resolvers without strawberry's middleware: it holds only while no extension has a
    `resolve` hook (graphql-core's middleware) of its own."""
    from strawberry.extensions import SchemaExtension

    extensions = build_schema(Settings()).get_extensions()
    assert any(isinstance(e, plan.PlannedExecution) for e in extensions)
    assert [type(e).__name__ for e in extensions if type(e).resolve is not SchemaExtension.resolve] == []
    assert not any(isinstance(e, plan.PlannedExecution) for e in build_schema(Settings(planned_execution=False)).get_extensions())


def test_the_plan_cache_keeps_the_most_recently_used():
    cache = plan.PlanCache(size=2)
    for index in range(3):
        cache.put(("query", index), None)
        cache.get(("query", 0))  # 0 used after each put: 1 is the least recently used when 2 comes
    assert len(cache) == 2
    assert cache.get(("query", 0)) is None
    assert cache.get(("query", 1)) is plan._MISSING


# -- `runs` written from its rows (kernelindex.graphql.runs_page) -------------------------------------

RUN_ORDERS = ("NEWEST", "FASTEST", "RECENTLY_OBSERVED")
# Fields of the connection, edge and run the writer does not know: a document selecting one is left to
# the general plan (compared all the same).
UNWRITTEN = {"connection": ["totalCount", "nodes { id }"], "run": ["trustLevel", "workloadSlug", "latencyDisplay",
                                                                   "protocol { name }", "configuration { display }"]}


async def _hostile_runs(db_url: str) -> None:
    """Stored values past every check on runs the pages show (the check constraints are gone: see
    _hostile_database): NaN and whole-number figures, a negative std, a std one trial cannot have, an
    instant at infinity, an empty upstream id, and (on superseded runs, so only includeSuperseded pages
    meet them) a status and an evidence no enum has, which fail the page on both paths."""
    live = "(SELECT id FROM runs WHERE superseded_at IS NULL AND retracted_at IS NULL ORDER BY id LIMIT 1 OFFSET {})"
    gone = "(SELECT id FROM runs WHERE superseded_at IS NOT NULL ORDER BY id LIMIT 1 OFFSET {})"
    await execute(
        db_url,
        f"UPDATE runs SET mean_ms = 'NaN', figure = 'NaN', std_ms = 'NaN' WHERE id = {live.format(0)}",
        f"UPDATE runs SET mean_ms = 2.0, figure = 2.0, min_ms = 1.0, max_ms = 3.0, std_ms = 1.0 WHERE id = {live.format(1)}",
        f"UPDATE runs SET std_ms = -1, upstream_id = '' WHERE id = {live.format(2)}",
        f"UPDATE runs SET num_trials = 1, std_ms = 0.5, compile_time_ms = 1e12 WHERE id = {live.format(3)}",
        f"UPDATE runs SET observed_at = 'infinity', p5_ms = 'Infinity', p95_ms = '-Infinity' WHERE id = {live.format(4)}",
        f"UPDATE runs SET mean_ms = 123456789.123456789, figure = 1e-7, median_ms = 0.1 + 0.2 WHERE id = {live.format(5)}",
        f"UPDATE runs SET status = 'weird' WHERE id = {gone.format(0)}",
        f"UPDATE runs SET evidence = 'odd' WHERE id = {gone.format(1)}",
        f"UPDATE environments SET label = NULL, provider = {_sql_text(HOSTILE_TEXT)} WHERE id = (SELECT min(id) FROM environments)",
        f"UPDATE hardware SET family = {_sql_text(HOSTILE_TEXT)} WHERE id = (SELECT max(id) FROM hardware)",
    )


class RunsDocuments:
    """Random `runs` documents within what the writer knows (and some beyond it): every run field it
    writes, its objects, pageInfo, cursors, at aliases, in fragments and inline fragments, under
    @include/@skip, with arguments as literals or variables, cursors of real pages or not ours."""

    def __init__(self, rng: random.Random, values: dict[str, list], cursors: dict[str, list[str]]) -> None:
        from kernelindex.graphql import runs_page

        self.rng = rng
        self.values = values
        self.cursors = cursors
        self.run_fields = list(runs_page.RUN_FIELDS)
        self.objects = {"implementation": list(runs_page.IMPLEMENTATION_FIELDS),
                        "environment": list(runs_page.ENVIRONMENT_FIELDS), "hardware": list(runs_page.HARDWARE_FIELDS)}

    def document(self) -> tuple[str, dict]:
        rng = self.rng
        self.variables: dict[str, tuple[str, object]] = {}
        self.fragments: list[str] = []
        roots = [self._root(f"r{index}") for index in range(rng.choice([1, 1, 1, 2]))]
        declared = "".join(f" ${n}: {t}" for n, (t, _v) in self.variables.items())
        head = f"query Runs({declared})" if declared else "query Runs"
        return head + " { " + " ".join(roots) + " }" + "".join(" " + f for f in self.fragments), \
            {n: v for n, (_t, v) in self.variables.items()}

    def _argument(self, name: str, type_: str, literal: str, value: object) -> str:
        if self.rng.random() < 0.4:
            variable = f"v{len(self.variables)}"
            self.variables[variable] = (type_, value)
            return f"{name}: ${variable}"
        return f"{name}: {literal}"

    def _string(self, name: str, value: str) -> str:
        literal = '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'
        return self._argument(name, "String", literal, value)

    def _root(self, alias: str) -> str:
        rng = self.rng
        order = rng.choice(RUN_ORDERS)
        size = rng.choice([1, 2, 3, 5, 20, 100] + ([0, 101] if rng.random() < 0.1 else []))
        backward = rng.random() < 0.3
        args = [self._argument("orderBy", "RunOrder", order, order),
                self._argument("last" if backward else "first", "Int", str(size), size)]
        if rng.random() < 0.5 and self.cursors[order]:
            cursor = rng.choice(self.cursors[order]) if rng.random() < 0.9 else rng.choice(["bm9wZQ==", "", "W10="])
            args.append(self._string("before" if backward else "after", cursor))
        if rng.random() < 0.4:
            args.append(self._string("workload", rng.choice(self.values["workload"] + ["no-such-workload"])))
        if rng.random() < 0.2:
            args.append(self._string("implementation", rng.choice(self.values["implementation"])))
        if rng.random() < 0.15:
            args.append(self._string("hardware", rng.choice(self.values["hardware"])))
        for flag in ("eligibleOnly", "includeSuperseded"):
            if rng.random() < 0.3:
                value = rng.random() < 0.6
                args.append(self._argument(flag, "Boolean", "true" if value else "false", value))
        if rng.random() < 0.15:
            status = rng.choice(["PASSED", "FAILED"])
            args.append(self._argument("status", "RunStatus", status, status))
        if rng.random() < 0.1:
            evidence = rng.choice(["REPORTED", "MEASURED"])
            args.append(self._argument("evidence", "Evidence", evidence, evidence))
        if rng.random() < 0.05:  # on the clock: left to the general plan
            args.append(self._argument("stale", "Boolean", "false", False))
        parts = []
        if rng.random() < 0.9:
            parts.append(self._directed(f"{self._alias()}edges {{ {self._edge()} }}"))
        if rng.random() < 0.6:
            chosen = rng.sample(["hasNextPage", "hasPreviousPage", "startCursor", "endCursor", "__typename"], rng.randint(1, 4))
            parts.append(f"{self._alias()}pageInfo {{ {' '.join(self._alias() + c for c in chosen)} }}")
        if rng.random() < 0.15:
            parts.append("__typename")
        if rng.random() < 0.07:
            parts.append(rng.choice(UNWRITTEN["connection"]))
        if not parts:
            parts.append("pageInfo { hasNextPage }")
        return f"{alias}: runs({', '.join(args)}) {{ {' '.join(parts)} }}"

    def _alias(self) -> str:
        return f"x{self.rng.randint(0, 99)}: " if self.rng.random() < 0.15 else ""

    def _directed(self, selection: str) -> str:
        roll = self.rng.random()
        if roll < 0.1:
            variable = f"v{len(self.variables)}"
            self.variables[variable] = ("Boolean!", self.rng.random() < 0.5)
            return selection.replace(" {", f" @{self.rng.choice(['include', 'skip'])}(if: ${variable}) {{", 1)
        if roll < 0.15:
            return selection.replace(" {", f" @include(if: {self.rng.choice(['true', 'false'])}) {{", 1)
        return selection

    def _edge(self) -> str:
        rng = self.rng
        parts = []
        if rng.random() < 0.7:
            parts.append(self._alias() + "cursor")
        if rng.random() < 0.9:
            parts.append(f"{self._alias()}node {{ {self._run()} }}")
        if rng.random() < 0.1:
            parts.append("__typename")
        return " ".join(parts) or "cursor"

    def _run(self) -> str:
        rng = self.rng
        chosen = rng.sample(self.run_fields, rng.randint(1, 8))
        parts = [self._alias() + name for name in chosen]
        if rng.random() < 0.5:
            parts.append(f"implementation {{ {self._object('implementation')} }}")
        if rng.random() < 0.5:
            hardware = f" hardware {{ {self._object('hardware')} }}" if rng.random() < 0.7 else ""
            parts.append(f"environment {{ {self._object('environment')}{hardware} }}")
        roll = rng.random()
        if roll < 0.15:
            name = f"R{len(self.fragments)}"
            self.fragments.append(f"fragment {name} on Run {{ {' '.join(rng.sample(self.run_fields, 2))} }}")
            parts.append(self._directed(f"...{name} {{").removesuffix(" {"))
        elif roll < 0.3:
            parts.append(self._directed(f"... on Run {{ {rng.choice(self.run_fields)} }}"))
        elif roll < 0.35:
            parts.append("__typename")
        elif roll < 0.4:
            parts.append(rng.choice(UNWRITTEN["run"]))
        return " ".join(parts)

    def _object(self, kind: str) -> str:
        fields = self.rng.sample(self.objects[kind], self.rng.randint(1, len(self.objects[kind])))
        if self.rng.random() < 0.1:
            fields.append("__typename")
        return " ".join(self._alias() + f for f in fields)


async def test_runs_pages_written_from_rows_answer_alike(servers, db_url):
    """Query.runs as the writer answers it (one statement, no object per run) and as graphql-core does:
    the same bytes, errors included, over hostile stored values; most pages are written, and the
    requests it leaves to the general plan (unknown fields, the clock, empty pages, failures) too."""
    from kernelindex.graphql import runs_page

    await _hostile_runs(db_url)
    planned, plain = servers
    compare = Comparison(planned, plain)
    values = await _known_values(plain)
    cursors: dict[str, list[str]] = {}
    for order in RUN_ORDERS:
        body = (await plain.post("/graphql", json={"query": f"{{ runs(first: 40, orderBy: {order}, includeSuperseded: true) "
                                                            "{ edges { cursor } } }"})).json()
        cursors[order] = [edge["cursor"] for edge in (body.get("data") or {"runs": {"edges": []}})["runs"]["edges"]]
    assert any(cursors.values())
    written, fallbacks = runs_page.STATS.written, runs_page.STATS.fallbacks
    documents = RunsDocuments(random.Random(SEED), values, cursors)
    count = max(GENERATED, 300)
    for _ in range(count):
        query, variables = documents.document()
        await compare.same(query, variables)
    written, fallbacks = runs_page.STATS.written - written, runs_page.STATS.fallbacks - fallbacks
    print(f"\nruns written from rows: {compare.documents} documents, {compare.fields} fields compared, "
          f"{compare.with_errors} with errors; pages written {written}, left to the general plan {fallbacks}")
    assert compare.documents == count
    assert written >= count // 2, (written, fallbacks)
    assert fallbacks >= count // 20, (written, fallbacks)
    assert compare.with_errors >= count // 50, compare.with_errors


async def test_the_benchmark_pages_are_written_from_rows(servers):
    """perf/postgraphile_compare.py's two questions are answered by the writer, as graphql-core answers them."""
    from kernelindex.graphql import runs_page
    from perf.runs_connection import graphql_query

    planned, plain = servers
    compare = Comparison(planned, plain)
    slug = (await _known_values(plain))["workload"][0]
    for first in (16, 100):
        written = runs_page.STATS.written
        query = graphql_query(first).replace('"kernelbench-l1-p100-synthetic-0"', f'"{slug}"')
        body = await compare.same(query)
        assert body["data"]["runs"]["edges"], body
        assert runs_page.STATS.written == written + 1


async def test_a_run_whose_stored_figure_is_nan_is_paged_past(servers, db_url):
    """A NaN figure (stored only by writing the database past its checks) sorts after every other figure
    in PostgreSQL, Infinity included; its run's cursor holds NaN, and the API takes that cursor back, so
    a client pages from it either way, on both paths."""
    await _hostile_runs(db_url)
    for client in servers:
        every = (await client.post("/graphql", json={"query": "{ runs(first: 100, orderBy: FASTEST) { edges { cursor node { id figure } } } }"})).json()
        assert "errors" not in every, every
        edges = every["data"]["runs"]["edges"]
        ids = [edge["node"]["id"] for edge in edges]
        assert edges[-1]["node"]["figure"] is None  # the NaN run, written as null, last
        assert b"NaN" in base64.urlsafe_b64decode(edges[-1]["cursor"])
        for index, edge in enumerate(edges):
            for direction, expected in (("after", ids[index + 1:][:3]), ("before", ids[:index][-3:])):
                first = "first" if direction == "after" else "last"
                body = (await client.post("/graphql", json={"query": f'{{ runs({first}: 3, orderBy: FASTEST, {direction}: '
                                                                     f'"{edge["cursor"]}") {{ edges {{ node {{ id }} }} }} }}'})).json()
                assert "errors" not in body, (direction, index, body)
                assert [e["node"]["id"] for e in body["data"]["runs"]["edges"]] == expected


async def test_page_values_kept_per_page_answer_alike(servers):
    """A list's headline and records, completed once per page and kept with it (plan.PAGE_VALUE), answer
    as graphql-core does on every later request too, at other aliases and arguments, beside fields
    resolved per request; a selection that reads the request (a resolver given info) is not kept."""
    from perf.dataset import LIST_QUERY

    planned, plain = servers
    compare = Comparison(planned, plain)
    variants = [
        LIST_QUERY,
        """{ workloads(first: 30, orderBy: NAME) { nodes { slug __typename
             h: headline { __typename label latencyMs latencyDisplay kind implementation { slug title } }
             r2: records(first: 2) { label latencyMs runCount implementation { slug } }
             records { ... on EnvironmentRecord { label latencyDisplay figure figureUnit metric } } } } }""",
        """{ workloads(first: 5) { nodes { slug records(first: 101) { label } headline { label } } } }""",
        """{ workloads(first: 5) { nodes { slug headline { comparison: label run { id } } } } }""",
    ]
    for _ in range(3):
        for query in variants:
            body = await compare.same(query)
            assert ("errors" in body) == ("101" in query), body
    assert compare.documents == 3 * len(variants)
    assert plan._PAGE_VALUES, "no page value was kept"
