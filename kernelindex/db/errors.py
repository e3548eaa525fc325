"""What a database failure means, decided in one place for the API, the CLI and the ingest.

- `is_unavailable`: the server cannot be reached or went away (refused, reset, closed, shutting
  down). The API answers 503, a command exits 2 with "cannot reach PostgreSQL"; retrying later helps.
- `refusal_reason`: the database refused the data itself (a constraint, a value out of range). That
  is the input's problem: the ingest reports the record and goes on.
- Anything else (bad SQL, a driver that refused a statement) is a bug and stays an internal error.
"""

from __future__ import annotations

import asyncpg
from sqlalchemy.exc import DataError, DBAPIError, IntegrityError, StatementError

_CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    ConnectionError,
    OSError,
    asyncpg.exceptions.ConnectionDoesNotExistError,
    asyncpg.exceptions.CannotConnectNowError,
    asyncpg.exceptions.AdminShutdownError,
    asyncpg.exceptions.PostgresConnectionError,
    asyncpg.exceptions.ConnectionFailureError,
)


def is_unavailable(exc: BaseException | None) -> bool:
    """Connection-level failures anywhere in the exception's chain of causes."""
    while exc is not None:
        if isinstance(exc, _CONNECTION_ERRORS):
            return True
        if isinstance(exc, DBAPIError) and exc.connection_invalidated:
            return True
        if isinstance(exc, asyncpg.exceptions.InterfaceError):
            words = str(exc).lower()
            if "connection" in words and "closed" in words:
                return True
        exc = exc.__cause__ or exc.__context__
    return False


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def refusal_reason(exc: BaseException) -> str | None:
    """The database's reason when it refused the data; None for anything else."""
    if isinstance(exc, (IntegrityError, DataError)):
        return first_line(exc.orig or exc)
    if isinstance(exc, StatementError) and isinstance(exc.orig, (ValueError, TypeError, OverflowError)):
        return f"{type(exc.orig).__name__}: {exc.orig}"
    return None


def describe_failure(exc: BaseException) -> str:
    """One line for an operator: why the work stopped."""
    if isinstance(exc, OSError) and exc.filename:
        return f"cannot read {exc.filename}: {exc.strerror or first_line(exc)}"
    if is_unavailable(exc):
        return f"cannot reach PostgreSQL: {first_line(exc)}"
    if isinstance(exc, MemoryError):
        return "out of memory"
    if isinstance(exc, DBAPIError):
        return f"the database failed: {first_line(exc)}"
    return f"unexpected {type(exc).__name__}: {first_line(exc)} (set KERNELINDEX_TRACEBACK=1 to see where)"
