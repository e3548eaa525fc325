"""`kernelindex --version`, and every option of every command with help that says its default."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator
from importlib import metadata

import pytest

from kernelindex.cli.main import build_parser
from kernelindex.cli.parser import HelpFormatter


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every parser under `kernelindex`, with the words that reach it."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from commands(child, (*path, name))


COMMANDS = list(commands(build_parser()))


def test_every_command_is_walked():
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"serve", "migrate", "seed", "export-schema", "bench", "token create", "token list", "token revoke",
            "ingest runs", "ingest kernelbench"} <= names


def test_version_is_the_installed_distributions(capsys):
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"kernelindex {metadata.version('kernelindex')}"


def test_the_installed_command_answers_version():
    done = subprocess.run([sys.executable, "-m", "kernelindex.cli.main", "--version"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == f"kernelindex {metadata.version('kernelindex')}"


@pytest.mark.parametrize(("path", "parser"), COMMANDS, ids=[" ".join(p) or "kernelindex" for p, _ in COMMANDS])
def test_every_option_has_help_and_says_its_default(path, parser):
    assert parser.formatter_class is HelpFormatter, "a subcommand made outside kernelindex.cli.parser.Parser"
    formatter = HelpFormatter(parser.prog)
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)):
            continue
        name = "/".join(action.option_strings) or action.dest
        assert action.help and action.help.strip(), f"kernelindex {' '.join(path)} {name}: no help"
        meaningful = action.default not in (None, False, [], "", argparse.SUPPRESS)
        if meaningful:
            shown = formatter._get_help_string(action) or ""
            assert "default" in shown.lower(), f"kernelindex {' '.join(path)} {name}: help does not say its default"


def _help_of(*words: str) -> str:
    parser = build_parser()
    for path, command in commands(parser):
        if path == words:
            return " ".join(command.format_help().split())  # one line: argparse wraps at the terminal's width
    raise AssertionError(words)


def test_serve_and_bench_state_their_defaults():
    serve = _help_of("serve")
    for text in ("address to listen on (0.0.0.0: every interface) (default: 127.0.0.1)",
                 "TCP port to listen on (default: 8000)", "uvicorn's log level (default: info)",
                 "response cache (default: 1)", "KERNELINDEX_GRAPHIQL=true"):
        assert text in serve
    bench = _help_of("bench")
    for text in ("timed trials per implementation (default: 100)", "cold caches (default: 3)",
                 "else cpu (default: auto)"):
        assert text in bench
    assert "(default: False)" not in serve + bench and "(default: None)" not in serve + bench


def test_a_bad_log_level_is_refused_by_name(capsys):
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(["serve", "--log-level", "loud"])
    assert stop.value.code == 2
    assert "invalid choice: 'loud'" in capsys.readouterr().err
