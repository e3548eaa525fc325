"""What a database failure means, decided in one place for the API, the CLI and the ingest.

- `is_unavailable`: the server cannot be reached or went away (refused, reset, closed, shutting
  down), or it ran short of a resource: PostgreSQL's class 53 "insufficient resources" (53100 disk
  full, 53200 out of memory, 53300 too many connections) and a full disk here (ENOSPC). The API
  answers 503, a command exits 2 with one line saying why; retrying later helps (once the operator
  freed the disk, for a full one).
- `shortage`: for the resource failures, what ran out, in words for the client and the operator.
- `refusal_reason`: the database refused the data itself (a constraint, a value out of range). That
  is the input's problem: the ingest reports the record and goes on.
- Anything else (bad SQL, a driver that refused a statement) is a bug and stays an internal error.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator

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

# SQLSTATE class 53, "insufficient resources" (PostgreSQL, Appendix A).
_SHORTAGES = {
    "53100": "the database server's disk is full",
    "53200": "the database server is out of memory",
    "53300": "the database server has too many connections",
    "53400": "the database server hit a configured limit",
}
_DISK_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT}


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    """The exception and its causes (SQLAlchemy wraps the driver's adapter, which wraps asyncpg's)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def sqlstate(exc: BaseException | None) -> str | None:
    """The SQLSTATE PostgreSQL gave, anywhere in the chain of causes."""
    for link in _chain(exc):
        code = getattr(link, "sqlstate", None)
        if isinstance(code, str) and code:
            return code
    return None


def shortage(exc: BaseException | None) -> str | None:
    """What ran out, when the failure is a shortage of a resource: PostgreSQL's class 53 or a full
    disk on this machine; None for anything else."""
    for link in _chain(exc):
        code = getattr(link, "sqlstate", None)
        if isinstance(code, str) and code.startswith("53"):
            return _SHORTAGES.get(code, f"the database server ran short of a resource (SQLSTATE {code})")
        if isinstance(link, OSError) and link.errno in _DISK_FULL_ERRNOS:
            return "the disk is full" if link.errno == errno.ENOSPC else "the disk quota is exhausted"
    return None


def is_unavailable(exc: BaseException | None) -> bool:
    """Connection-level failures, and shortages of a resource, anywhere in the exception's chain of causes."""
    if shortage(exc) is not None:
        return True
    for link in _chain(exc):
        if isinstance(link, _CONNECTION_ERRORS):
            return True
        if isinstance(link, DBAPIError) and link.connection_invalidated:
            return True
        if isinstance(link, asyncpg.exceptions.InterfaceError):
            words = str(link).lower()
            if "connection" in words and "closed" in words:
                return True
    return False


def unavailable_message(exc: BaseException | None) -> str | None:
    """The sentence a client reads for an outage that has a known cause (a shortage); None for a
    plain outage, which keeps the API's general message."""
    what = shortage(exc)
    if what is None:
        return None
    return f"{what[0].upper()}{what[1:]}: the request could not be completed (nothing was written); retry later."


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class RowsRefused(Exception):
    """Rows the database, or the driver encoding them for it, refused outside SQLAlchemy's statements
    (a COPY on the driver's connection); `reason` says why."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def refusal_reason(exc: BaseException) -> str | None:
    """The database's reason when it refused the data; None for anything else."""
    if isinstance(exc, RowsRefused):
        return exc.reason
    if isinstance(exc, (IntegrityError, DataError)):
        return first_line(exc.orig or exc)
    if isinstance(exc, StatementError) and isinstance(exc.orig, (ValueError, TypeError, OverflowError)):
        return f"{type(exc.orig).__name__}: {exc.orig}"
    return None


def _driver_line(exc: BaseException) -> str:
    """PostgreSQL's own message (asyncpg's exception), not SQLAlchemy's wrapping of it, which adds
    the exception's class, the statement and a link."""
    for link in _chain(exc):
        if isinstance(link, (asyncpg.PostgresError, OSError)):
            return first_line(link)
    return first_line(exc)


def describe_failure(exc: BaseException) -> str:
    """One line for an operator: why the work stopped."""
    what = shortage(exc)
    if what is not None:
        where = getattr(exc, "filename", None)
        return f"{what}: {_driver_line(exc)}" if where is None else f"cannot write {where}: {what}"
    if isinstance(exc, OSError) and exc.filename:
        return f"{exc.filename}: {exc.strerror or first_line(exc)}"
    if is_unavailable(exc):
        return f"cannot reach PostgreSQL: {_driver_line(exc)}"
    if isinstance(exc, MemoryError):
        return "out of memory"
    if isinstance(exc, DBAPIError):
        return f"the database failed: {_driver_line(exc)}"
    return f"unexpected {type(exc).__name__}: {first_line(exc)} (run with --debug, or KERNELINDEX_TRACEBACK=1, to see where)"
