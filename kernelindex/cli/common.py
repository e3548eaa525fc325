"""What every command shares: how it speaks, how it fails, and where the database is.

Progress and errors go to stderr as `kernelindex: …` lines; an operational error (no database, a
full disk, a file that cannot be read or written) is one `error:` line, never a traceback (`--debug`
or KERNELINDEX_TRACEBACK=1 shows it). Exit status:

- 0 everything landed;
- 1 some input was rejected (the rest landed; with --strict nothing did);
- 2 a fatal error: bad arguments, no such file, the database unavailable (unreachable, its disk full,
  out of memory, too many connections), a full disk here, an internal error;
- 130 interrupted (SIGINT, Ctrl+C), 143 terminated (SIGTERM), 141 the reader of stdout went away;
  `serve` stopped by SIGINT or SIGTERM after it started serving exits 0 (a normal stop).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from kernelindex.db.embedded import resolve_database_url
from kernelindex.db.errors import first_line, shortage
from kernelindex.db.migrate import upgrade
from kernelindex.db.urls import DatabaseUrlError, redact, to_async_url
from kernelindex.ingest.progress import say  # the one voice of every command
from kernelindex.settings import get_settings

EXIT_OK = 0
EXIT_SOME_REJECTED = 1
EXIT_FATAL = 2
# --strict found a problem: nothing was written (not "some lines rejected, the rest landed").
EXIT_NOTHING_WRITTEN = 3
EXIT_INTERRUPTED = 128 + signal.SIGINT
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE
EXIT_TERMINATED = 128 + signal.SIGTERM

TRACEBACK_VARIABLE = "KERNELINDEX_TRACEBACK"


class CommandError(Exception):
    """An error to report in one line, without a traceback (exit status 2)."""


class Terminated(BaseException):
    """SIGTERM (how systemd and docker stop a process), raised in the main thread like SIGINT's
    KeyboardInterrupt, so that the way out runs: finally blocks stop what the command started (the
    embedded PostgreSQL above all) and the command exits 143 instead of dying where it stood."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    # Once: a second SIGTERM while the first one's way out runs must not cut that way out short.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Terminated()


@contextmanager
def sigterm_raises() -> Iterator[None]:
    """While the block runs, SIGTERM raises Terminated; the handler before is put back after (the
    commands also run in-process, in the tests). Signal handlers belong to the main thread: from
    another thread this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


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


def tracebacks_wanted() -> bool:
    return os.environ.get(TRACEBACK_VARIABLE, "") not in ("", "0")


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
    say("applying migrations")
    try:
        upgrade(url)
    except OSError as exc:
        raise CommandError(f"cannot reach PostgreSQL to migrate: {exc}") from exc
    say("database schema is up to date")
