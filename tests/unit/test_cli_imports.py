"""`kernelindex --help` answers at once because answering it loads nothing heavy: held here by what is
imported, not by a timing (perf/cli_speed.py times it). The parser is built, and every command's `--help`,
`--version` and a usage error are answered, in a fresh interpreter that then lists what it loaded."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kernelindex.cli import parser as cli_parser
from tests.unit.test_cli_help import COMMANDS

# Each costs tens to hundreds of milliseconds to import, and none is needed to say what the commands are.
HEAVY = {"sqlalchemy", "asyncpg", "psycopg", "alembic", "strawberry", "graphql", "starlette", "uvicorn", "torch",
         "numpy", "procrastinate", "rich", "pydantic", "pydantic_settings", "httpx", "mako"}
# All of ours that answering needs: the entry point, the parser, the exit statuses, and parse_binding (--set).
PARSER_MODULES = {"kernelindex", "kernelindex.cli", "kernelindex.cli.main", "kernelindex.cli.parser",
                  "kernelindex.cli.exits", "benchmarks", "benchmarks.bindings"}

PROBE = """
import contextlib, io, json, sys
from kernelindex.cli.main import main
answered = {}
for words in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(words)
        except SystemExit as stop:
            answered[" ".join(words)] = [stop.code, len(out.getvalue())]
for name in sys.argv[2:]:
    __import__(name)
print(json.dumps({"answered": answered, "modules": sorted(sys.modules)}))
"""


def probe(argvs: list[list[str]], then_import: tuple[str, ...] = ()) -> tuple[dict[str, list[int]], set[str]]:
    """In a fresh interpreter: main(argv) for each argv (each must end in SystemExit), then the imports named;
    (exit code and length of stdout per argv, the modules loaded)."""
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argvs), *then_import], capture_output=True, text=True,
                          timeout=120, check=True)
    found = json.loads(done.stdout)
    return found["answered"], set(found["modules"])


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


def ours(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in {"kernelindex", "benchmarks"})


def test_every_help_loads_only_the_parser():
    argvs = [["--help"], ["--version"]] + [[*path, "--help"] for path, _ in COMMANDS if path]
    answered, modules = probe(argvs)
    assert len(answered) == len(argvs), "every --help and --version exits"
    assert all(code == 0 and length > 0 for code, length in answered.values()), answered
    assert heavy(modules) == []
    assert ours(modules) == sorted(PARSER_MODULES)


def test_a_usage_error_loads_only_the_parser():
    answered, modules = probe([["jobs", "--state", "nonsense"], ["ingest"], ["no-such-command"]])
    assert {code for code, _ in answered.values()} == {2}
    assert heavy(modules) == [] and ours(modules) == sorted(PARSER_MODULES)


def test_the_probe_sees_what_a_command_loads():
    """What the tests above look for is there once a command's module is: they would see it come back."""
    # rich is not among them: every module loads it only where it draws (kernelindex.ingest.progress).
    _, modules = probe([["--help"]], then_import=("kernelindex.cli.fleet",))
    assert {"sqlalchemy", "asyncpg", "pydantic"} <= {m.split(".")[0] for m in heavy(modules)}
    assert "kernelindex.cli.common" in ours(modules)


@pytest.mark.parametrize(("path", "parser"), [(p, c) for p, c in COMMANDS if not c._subparsers],
                         ids=[" ".join(p) for p, c in COMMANDS if not c._subparsers])
def test_every_command_runs_a_handler_of_the_parser(path, parser):
    func = parser.get_default("func")
    assert callable(func) and func.__module__ == cli_parser.__name__, f"kernelindex {' '.join(path)}"


def test_the_parsers_copies_equal_their_sources():
    """The parser names these itself (their homes load SQLAlchemy): each equal to its source, in its order."""
    from kernelindex.db.models import FLEET_JOB_STATES
    from kernelindex.fleet.jobs import DEFAULT_MAX_ATTEMPTS
    from kernelindex.services.tokens import KNOWN_SCOPES

    assert cli_parser.FLEET_JOB_STATES == FLEET_JOB_STATES
    assert cli_parser.DEFAULT_MAX_ATTEMPTS == DEFAULT_MAX_ATTEMPTS
    assert list(cli_parser.KNOWN_SCOPES.items()) == list(KNOWN_SCOPES.items())
