"""The house's shape, checked: one room per concept, doors that open one way.

Every import in kernelindex/, benchmarks/ and perf/ is read from the source (module level and inside
functions alike: an import moved into a function to dodge a circle is still a circle), apart from
imports under `if TYPE_CHECKING:`, which never run.

- kernelindex/ is a stack of rooms. A module may import its own room and the rooms below it, never a
  room above: cli → web → mcp → graphql → fleet → ingest → services → db → rules / settings.
- No import circle between modules, inside a room or across rooms.
- An import inside a function is for a module that is heavy to load and not always needed (torch,
  the web stack): only the modules named in LAZY may be imported that way.
- rules/ is pure: the standard library and its own modules only.
- benchmarks/ (the runners) imports the standard library, torch and itself: never the service, perf
  or the tests. perf/ may use both; nothing in kernelindex/ or benchmarks/ imports perf/ or tests/.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# Bottom first. A room may import the rooms at its own rank or below; settings and rules share the floor
# but not each other (rules import nothing of ours but rules).
RANKS = {
    "kernelindex.settings": 0,
    "kernelindex.gc_tuning": 0,
    "kernelindex.rules": 0,
    "kernelindex.db": 1,
    "kernelindex.services": 2,
    "kernelindex.ingest": 3,
    "kernelindex.fleet": 4,
    "kernelindex.graphql": 5,
    "kernelindex.mcp": 6,
    "kernelindex.web": 7,
    "kernelindex.cli": 8,
}

# Modules that are imported inside functions on purpose, and why.
LAZY = {
    "kernelindex.ingest.problem_trace": "imports torch; only `ingest kernelbench` needs it",
    "kernelindex.ingest.seed": "the seed is loaded only by `seed` and `serve --seed`",
    "kernelindex.web.app": "the web stack; only `serve` needs it",
    "kernelindex.web.persisted": "the web stack (its persisted-query files are checked by `serve` before it serves)",
    "kernelindex.web.bounded_http": "uvicorn's HTTP protocol, bounded; only `serve` needs it",
    "kernelindex.graphql.schema": "builds the whole schema; only `serve` and `export-schema` need it",
    "kernelindex.fleet.worker": "procrastinate's worker and the sandbox; only `worker` needs them",
    "kernelindex.db.migrate": "Alembic; only `migrate` and `--migrate` apply migrations",
    # Each command's module, imported by its handler in kernelindex.cli.parser when the command runs, so that
    # building the parser (`--help`) loads none of them.
    "kernelindex.cli.common": "the database's errors, the settings and rich: once a command runs, never for --help",
    "kernelindex.cli.server": "`serve`, `migrate`, `seed`, `export-schema`: the database (the web stack inside `serve`)",
    "kernelindex.cli.ingest": "the ingest pipelines; only `ingest runs|kernelbench` need them",
    "kernelindex.cli.bench": "`bench`: the database, and torch's sweep when it measures",
    "kernelindex.cli.fleet": "`submit`, `worker`, `jobs`: the fleet's jobs and the database",
    "kernelindex.cli.tokens": "`token create|list|revoke`: the database",
    "kernelindex.cli.mcp": "`mcp`: the MCP SDK, the GraphQL schema and the database",
    "kernelindex.cli.snapshots": "`snapshot list|retract`: the database",
    "kernelindex.cli.sources": "`ingest kernelindex-export|liger`: the source import and the database",
    "kernelindex.ingest.kernelbench": "`ingest kernelbench` alone (its trace cache loads psycopg): not `ingest runs`",
    # Each source's adapter, imported by its own command only (cli.sources): zstandard, the CSV reader.
    "kernelindex.ingest.sources.kernelindex_export": "`ingest kernelindex-export`: zstandard and the export's reader",
    "kernelindex.ingest.sources.liger": "`ingest liger`: the Liger-Kernel CSV reader",
}

BENCHMARKS_MAY_IMPORT = {"torch", "numpy", "benchmarks"}


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module (ours resolved to the module, others their top-level package)
    line: int
    in_function: bool


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(path: Path, known: set[str]) -> list[Import]:
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[Import] = []

    def resolve(candidate: str) -> str:
        while candidate not in known and "." in candidate:
            candidate = candidate.rpartition(".")[0]
        return candidate

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for sub in child.orelse:
                    visit(sub, in_function)
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    found.append(Import(name, resolve(alias.name), child.lineno, in_function))
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                for alias in child.names:
                    full = f"{base}.{alias.name}"
                    found.append(Import(name, resolve(full if full in known else base), child.lineno, in_function))
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            visit(child, inner)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), False)
    return [i for i in found if i.target != name]


def graph(*packages: str) -> tuple[set[str], list[Import]]:
    files = [p for pkg in packages for p in sorted((REPO / pkg).rglob("*.py"))]
    known = {module_name(p) for p in files}
    edges = [i for p in files for i in imports_of(p, known)]
    return known, edges


def room(module: str) -> str:
    return ".".join(module.split(".")[:2])


def cycles(modules: set[str], edges: list[Import]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    out: dict[str, set[str]] = {m: set() for m in modules}
    for e in edges:
        if e.target in modules:
            out[e.source].add(e.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(modules):
        if root in index:
            continue
        work = [(root, iter(sorted(out[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(out[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


@pytest.fixture(scope="module")
def service() -> tuple[set[str], list[Import]]:
    return graph("kernelindex")


def test_every_module_is_in_a_room(service):
    modules, _ = service
    homeless = sorted(m for m in modules if m != "kernelindex" and room(m) not in RANKS)
    assert not homeless, f"modules outside the rooms of RANKS: {homeless}"


def test_no_import_circles(service):
    modules, edges = service
    assert cycles(modules, edges) == []


def test_cycle_finder_finds_a_circle():
    edges = [Import("a", "b", 1, False), Import("b", "c", 1, True), Import("c", "a", 1, False), Import("c", "d", 1, False)]
    assert cycles({"a", "b", "c", "d"}, edges) == [["a", "b", "c"]]


def test_doors_open_downward_only(service):
    modules, edges = service
    upward = [
        f"{e.source}:{e.line} imports {e.target}"
        for e in edges
        if e.target in modules and room(e.source) in RANKS and room(e.target) in RANKS
        and room(e.source) != room(e.target)
        and (RANKS[room(e.target)] > RANKS[room(e.source)] or RANKS[room(e.target)] == RANKS[room(e.source)])
    ]
    assert upward == []


def test_the_package_root_imports_nothing(service):
    _, edges = service
    assert [e for e in edges if e.source == "kernelindex"] == []


def test_function_level_imports_only_for_heavy_modules(service):
    modules, edges = service
    hidden = sorted(
        f"{e.source}:{e.line} imports {e.target}"
        for e in edges
        if e.in_function and e.target in modules and e.target not in LAZY
    )
    assert hidden == [], "import these at module level (an import inside a function must not hide a circle)"


def test_rules_are_pure(service):
    _, edges = service
    stdlib = sys.stdlib_module_names
    impure = sorted(
        f"{e.source}:{e.line} imports {e.target}"
        for e in edges
        if room(e.source) == "kernelindex.rules"
        and not (room(e.target) == "kernelindex.rules" or e.target.split(".")[0] in stdlib or e.target == "__future__")
    )
    assert impure == []


def test_benchmarks_import_torch_and_themselves_only():
    _, edges = graph("benchmarks")
    stdlib = sys.stdlib_module_names
    foreign = sorted(
        f"{e.source}:{e.line} imports {e.target}"
        for e in edges
        if e.target.split(".")[0] not in BENCHMARKS_MAY_IMPORT | stdlib and e.target != "__future__"
    )
    assert foreign == []


@pytest.mark.parametrize("package", ["kernelindex", "benchmarks", "perf"])
def test_nothing_imports_the_tests_or_dev_tools(package):
    _, edges = graph(package)
    forbidden = {"tests"} | ({"perf"} if package != "perf" else set())
    bad = sorted(f"{e.source}:{e.line} imports {e.target}" for e in edges if e.target.split(".")[0] in forbidden)
    assert bad == []


def test_the_run_format_is_one_string():
    """benchmarks/ writes run records without importing the service, so it names the format itself:
    the two names must be the same string."""
    from benchmarks.records import FORMAT, HARDWARE_FORMAT
    from kernelindex.ingest.records import HARDWARE_FORMAT as CATALOGUE_HARDWARE_FORMAT
    from kernelindex.ingest.records import RECORD_FORMAT

    assert FORMAT == RECORD_FORMAT
    assert HARDWARE_FORMAT == CATALOGUE_HARDWARE_FORMAT
