"""The `kernelindex` command: serve, migrate, seed, export-schema, and the ingest, bench, fleet and token commands.

Progress and errors go to stderr in plain words; exit status 0 means everything landed (the exit
statuses: kernelindex.cli.exits). An operational error is one line, never a traceback.

This module loads the parser and nothing else of the commands: what a command runs is imported once its
arguments are parsed (kernelindex.cli.parser's handlers, kernelindex.cli.common), so `--help` answers at once.
"""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Sequence

from kernelindex.cli.exits import EXIT_INTERRUPTED, EXIT_TERMINATED, TRACEBACK_VARIABLE, sigterm_raises
from kernelindex.cli.parser import build_parser

__all__ = ["build_parser", "entry", "main"]


def entry() -> None:
    """The `kernelindex` command (console script and `python -m kernelindex.cli`): main(), then its status.

    Interrupted (Ctrl+C) or terminated, the command has already stopped what it started (its finally blocks
    ran), and what is left is the interpreter's teardown of every loaded module, which with torch loaded
    takes seconds on a busy machine: the exit handlers run (the embedded PostgreSQL's among them, which
    stop a server no other process uses), the streams are flushed, and the process ends at once."""
    status = main()
    if status in (EXIT_INTERRUPTED, EXIT_TERMINATED):
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass  # a reader that went away, a closed stream: nothing more to say to it
        os._exit(status)
    sys.exit(status)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.debug:
        os.environ[TRACEBACK_VARIABLE] = "1"  # the commands that catch errors themselves read it too
    # What every command shares when it runs (the database's errors, the settings, rich): only now, after the
    # arguments are parsed, so that --help, --version and a usage error never load it.
    from kernelindex.cli.common import run_command

    with sigterm_raises():
        return run_command(args)


if __name__ == "__main__":
    entry()
