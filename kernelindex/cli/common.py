"""What every command shares: how it speaks, how it fails, and where the database is.

Progress and errors go to stderr as `kernelindex: …` lines. Exit status: 0 everything landed, 1 some
input was rejected (the rest landed; with --strict nothing did), 2 a fatal error.
"""

from __future__ import annotations

from kernelindex.db.embedded import resolve_database_url
from kernelindex.db.migrate import upgrade
from kernelindex.db.urls import DatabaseUrlError, redact, to_async_url
from kernelindex.ingest.progress import say  # the one voice of every command
from kernelindex.settings import get_settings

EXIT_OK = 0
EXIT_SOME_REJECTED = 1
EXIT_FATAL = 2


class CommandError(Exception):
    """An error to report in one line, without a traceback (exit status 2)."""


def database_url() -> str:
    """The database to use: KERNELINDEX_DATABASE_URL, or the embedded server (started if need be)."""
    settings = get_settings()
    try:
        url = resolve_database_url(settings)
        to_async_url(url)
    except DatabaseUrlError as exc:
        raise CommandError(str(exc)) from exc
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
