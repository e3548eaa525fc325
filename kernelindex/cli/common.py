"""What every command shares once it runs: how it speaks, how it fails, and where the database is.

Progress and errors go to stderr as `kernelindex: …` lines; an operational error (no database, a
full disk, a file that cannot be read or written) is one `error:` line, never a traceback (`--debug`
or KERNELINDEX_TRACEBACK=1 shows it). The exit statuses are kernelindex.cli.exits' (named here too).

Loaded when a command runs, never for `--help`: it brings the database's errors (SQLAlchemy, asyncpg),
the settings (pydantic) and rich's console.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from kernelindex.cli.exits import EXIT_BROKEN_PIPE as EXIT_BROKEN_PIPE
from kernelindex.cli.exits import EXIT_FATAL as EXIT_FATAL
from kernelindex.cli.exits import EXIT_INTERRUPTED as EXIT_INTERRUPTED
from kernelindex.cli.exits import EXIT_NOTHING_WRITTEN as EXIT_NOTHING_WRITTEN
from kernelindex.cli.exits import EXIT_OK as EXIT_OK
from kernelindex.cli.exits import EXIT_SOME_REJECTED as EXIT_SOME_REJECTED
from kernelindex.cli.exits import EXIT_TERMINATED as EXIT_TERMINATED
from kernelindex.cli.exits import CommandError as CommandError
from kernelindex.cli.exits import Terminated, tracebacks_wanted
from kernelindex.db.embedded import resolve_database_url
from kernelindex.db.errors import describe_failure, first_line, shortage
from kernelindex.db.urls import DatabaseUrlError, redact, to_async_url
from kernelindex.ingest.errors import IngestAborted, IngestFatal
from kernelindex.ingest.progress import say  # the one voice of every command
from kernelindex.settings import get_settings


def write_stdout(text: str) -> None:
    """Write a command's output (flushed: a failure is told here, not at exit). A full disk under
    `> file` is one line; a closed pipe (`| head`) stays BrokenPipeError, which is not an error."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise CommandError(f"cannot write standard output: {shortage(exc) or exc.strerror or exc}") from exc


def database_url() -> str:
    """The database to use: KERNELINDEX_DATABASE_URL, or the embedded server (started if need be)."""
    settings = get_settings()
    try:
        url = resolve_database_url(settings)
        to_async_url(url)
    except DatabaseUrlError as exc:
        raise CommandError(str(exc)) from exc
    except (OSError, subprocess.SubprocessError, AssertionError) as exc:
        # The wheel failed to make or start the server (a folder we may not write, initdb or pg_ctl
        # failing, or one of the asserts it checks a started server with): PostgreSQL's log says why.
        pgdata = settings.resolved_data_dir / "pgdata"
        raise CommandError(f"cannot start the embedded PostgreSQL in {pgdata}: {first_line(exc)} "
                           f"(its log: {pgdata / 'log'})") from exc
    if settings.database_url:
        say(f"using PostgreSQL at {redact(url)}")
    return url


def run_migrations(url: str) -> None:
    # Alembic (a few hundred ms to import) only for the commands that migrate, not every database command.
    from kernelindex.db.migrate import upgrade

    say("applying migrations")
    try:
        upgrade(url)
    except OSError as exc:
        raise CommandError(f"cannot reach PostgreSQL to migrate: {exc}") from exc
    say("database schema is up to date")


def run_command(args: argparse.Namespace) -> int:
    """The command parsed into `args`, with every way it can fail turned into one line on stderr and an exit status."""
    try:
        status = args.func(args)
        sys.stdout.flush()  # here, not at exit: a full disk or a closed pipe is reported like any error
        return status
    except (CommandError, IngestFatal) as exc:
        say(f"error: {exc}")
        return EXIT_FATAL
    except IngestAborted as exc:
        for problem in exc.problems[:50]:
            say(f"error: {problem}")
        if len(exc.problems) > 50:
            say(f"… and {len(exc.problems) - 50} more")
        say(f"error: {exc}")
        # --strict refused the input whole; without it, an import refused before it began (a checkout
        # that is not one) is input rejected, as before.
        return EXIT_NOTHING_WRITTEN if getattr(args, "strict", False) else EXIT_SOME_REJECTED
    except KeyboardInterrupt:
        say("interrupted")
        return EXIT_INTERRUPTED
    except Terminated:
        say("terminated (SIGTERM)")
        return EXIT_TERMINATED
    except BrokenPipeError:
        # The reader of stdout went away (`| head`): nothing to say to it, and nothing more to write.
        _discard_stdout()
        return EXIT_BROKEN_PIPE
    except Exception as exc:
        if tracebacks_wanted():
            raise
        if isinstance(exc, OSError) and _stdout_broken():
            say(f"error: cannot write standard output: {shortage(exc) or exc.strerror or describe_failure(exc)}")
        else:
            say(f"error: {describe_failure(exc)}")
        return EXIT_FATAL


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's flush at exit does not fail again and
    print an "Exception ignored" message of its own."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # not a real file (a test's capture): nothing will be flushed at exit


def _stdout_broken() -> bool:
    """After an error: whether it was stdout that failed (a full disk under `> file`). Then what is
    still buffered can never be written, and is discarded."""
    try:
        sys.stdout.flush()
    except OSError:
        _discard_stdout()
        return True
    return False
