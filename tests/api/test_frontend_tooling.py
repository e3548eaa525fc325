"""The operations a frontend writes (examples/operations/*.graphql) hold against the schema, for this server
and for a frontend team's own tools.

Here with graphql-core, against the schema the code builds and with the server's own depth, alias and token
limits: no Node needed. Then through the npm driver (tooling/check_operations.mjs: graphql-eslint with the
Relay rules on the schema, graphql-inspector validate, graphql-codegen + tsc), which `make test` installs
with `npm ci` in tooling/; without Node or those packages the driver's tests fail saying what to install:
they are never skipped.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from graphql import (
    DocumentNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLSyntaxError,
    OperationDefinitionNode,
    parse,
    print_ast,
    specified_rules,
    validate,
    visit,
)
from graphql.language import Visitor

from kernelindex.graphql.schema import build_schema, validation_rules
from kernelindex.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
OPERATIONS = ROOT / "examples" / "operations"
TOOLING = ROOT / "tooling"
DRIVER = TOOLING / "check_operations.mjs"
INSTALL = "run `make frontend` (it runs `npm ci` in tooling/; needs Node.js 18+ with npm: apt-get install nodejs npm)"
# What a frontend of this API pages, follows and submits: each must stay among the examples.
EXPECTED_OPERATIONS = {
    "WorkloadPage", "WorkloadList", "WorkloadRuns", "RecordFeed", "WorkloadRecordHistory", "HardwareRecords",
    "CompareRuns", "HardwareCatalogue", "ImplementationList", "NodeById", "JobFollow", "JobList",
    "SubmitImplementation", "ReviewRun", "RetractRun", "WorkloadRunsBackward", "JobLive", "WorkloadRecordEventsLive",
}


def operation_files() -> list[Path]:
    files = sorted(OPERATIONS.glob("*.graphql"))
    assert files, f"no operations in {OPERATIONS}"
    return files


def documents() -> dict[Path, DocumentNode]:
    parsed = {}
    for path in operation_files():
        try:
            parsed[path] = parse(path.read_text(encoding="utf-8"))
        except GraphQLSyntaxError as error:
            pytest.fail(f"{path.relative_to(ROOT)}: {error}")
    return parsed


def spreads(node) -> set[str]:
    names: set[str] = set()

    class Spreads(Visitor):
        def enter_fragment_spread(self, spread: FragmentSpreadNode, *_args) -> None:
            names.add(spread.name.value)

    visit(node, Spreads())
    return names


def with_fragments(document: DocumentNode, fragments: dict[str, FragmentDefinitionNode]) -> DocumentNode:
    """The file's definitions and the fragments of other files they spread (transitively): the document a
    client sends for it, as codegen and graphql-inspector assemble it."""
    own = {d.name.value for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
    wanted, added = spreads(document) - own, []
    while wanted:
        name = wanted.pop()
        if name in own or name not in fragments:
            continue  # an unknown fragment is left for the validation to name
        own.add(name)
        added.append(fragments[name])
        wanted |= spreads(fragments[name]) - own
    return DocumentNode(definitions=(*document.definitions, *added))


def test_every_operation_is_named_once_and_every_fragment_is_used():
    operations: dict[str, Path] = {}
    fragments: dict[str, Path] = {}
    used: set[str] = set()
    for path, document in documents().items():
        for definition in document.definitions:
            where = path.relative_to(ROOT)
            if isinstance(definition, OperationDefinitionNode):
                assert definition.name is not None, f"{where}: an anonymous {definition.operation.value}: name it"
                name = definition.name.value
                assert name not in operations, f"{where}: operation {name} is also in {operations[name]}"
                operations[name] = where
            elif isinstance(definition, FragmentDefinitionNode):
                name = definition.name.value
                assert name not in fragments, f"{where}: fragment {name} is also in {fragments[name]}"
                fragments[name] = where
        used |= spreads(document)
    assert set(fragments) - used == set(), "fragments no operation spreads"
    assert EXPECTED_OPERATIONS - set(operations) == set(), "operations missing from examples/operations"


def test_every_operation_validates_against_the_schema_with_the_servers_limits():
    """graphql-core's rules and the server's own (depth, aliases, tokens) on each file, with the
    fragments it spreads from the other files."""
    settings = Settings()
    schema = build_schema(settings)._schema
    rules = [*specified_rules, *validation_rules(settings)]
    parsed = documents()
    fragments = {d.name.value: d for doc in parsed.values() for d in doc.definitions
                 if isinstance(d, FragmentDefinitionNode)}
    problems = []
    for path, document in parsed.items():
        if not any(isinstance(d, OperationDefinitionNode) for d in document.definitions):
            continue  # a file of shared fragments: validated inside each operation that spreads them
        sent = with_fragments(document, fragments)
        errors = validate(schema, sent, rules)
        problems += [f"{path.relative_to(ROOT)}: {error.message}" for error in errors]
        # The token limit is the parser's (strawberry's MaxTokensLimiter parses with max_tokens).
        try:
            parse(print_ast(sent), max_tokens=settings.max_query_tokens)
        except GraphQLSyntaxError as error:
            problems.append(f"{path.relative_to(ROOT)}: {error.message}")
    assert problems == []


# -- the npm tools ----------------------------------------------------------------------------------

def driver(*arguments: str | Path) -> subprocess.CompletedProcess[str]:
    node = shutil.which("node")
    if node is None:
        pytest.fail(f"no Node.js found: the frontend check runs graphql-codegen, graphql-inspector and graphql-eslint; {INSTALL}")
    if not (TOOLING / "node_modules" / ".bin" / "graphql-codegen").exists():
        pytest.fail(f"the frontend tooling is not installed in tooling/node_modules: {INSTALL}")
    return subprocess.run([node, str(DRIVER), *map(str, arguments)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "FORCE_COLOR": "0"})


def test_the_frontend_tools_accept_the_schema_and_the_operations():
    done = driver()
    assert done.returncode == 0, done.stdout + done.stderr
    for tool in ("graphql-eslint", "graphql-inspector validate", "graphql-codegen", "tsc --noEmit"):
        assert f"== {tool}: ok" in done.stdout
    assert (TOOLING / "generated" / "graphql.ts").read_text(encoding="utf-8").count("Document = ") >= len(EXPECTED_OPERATIONS)


def test_a_broken_operation_fails_every_tool_naming_its_file(tmp_path):
    (tmp_path / "fine.graphql").write_text("query PolicyLine { policy { title version } }\n", encoding="utf-8")
    broken = tmp_path / "broken-page.graphql"
    broken.write_text('query BrokenPage { workload(slug: "x") { id nope } }\n', encoding="utf-8")
    before = set((TOOLING / "generated").glob("check-*"))
    done = driver(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    sections = dict(part.split("\n", 1) for part in done.stdout.split("\n== ")[1:])
    for tool in ("graphql-eslint", "graphql-inspector validate", "graphql-codegen"):
        [(heading, text)] = [(h, t) for h, t in sections.items() if h.startswith(f"{tool}:")]
        assert "FAILED" in heading and str(broken) in text and "nope" in text, f"{tool}:\n{text}"
        assert "fine.graphql" not in text
    assert "frontend check FAILED" in done.stdout
    assert set((TOOLING / "generated").glob("check-*")) == before  # its generated folder is removed
