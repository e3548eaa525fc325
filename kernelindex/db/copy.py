"""COPY: many rows into a table in one statement, on the session's own connection and transaction.

An INSERT executed once per row (SQLAlchemy's executemany) costs a round of the protocol and a firing
of every statement trigger per row (data_version, the change log); COPY sends the rows in binary
in one go, and the triggers fire once. asyncpg does the COPY; SQLAlchemy has no word for it, so the
rows go through the driver connection under the session's transaction (they commit or roll back
with it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import asyncpg
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.errors import RowsRefused


async def driver_connection(session: AsyncSession) -> Any:
    """The asyncpg connection under the session's transaction."""
    connection = await session.connection()
    raw = await connection.get_raw_connection()
    return raw.driver_connection


async def copy_rows(session: AsyncSession, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """The rows (values in `columns` order, as asyncpg encodes them: JSON as text) into `table`.
    RowsRefused when the database or the driver refuses them (refusal_reason words it)."""
    connection = await driver_connection(session)
    try:
        await connection.copy_records_to_table(table, records=rows, columns=list(columns))
    except (asyncpg.DataError, asyncpg.IntegrityConstraintViolationError) as exc:
        raise RowsRefused(str(exc).splitlines()[0]) from exc
    except (ValueError, TypeError, OverflowError) as exc:
        raise RowsRefused(f"{type(exc).__name__}: {exc}") from exc


def dict_rows(rows: Iterable[dict[str, Any]], columns: Sequence[str]) -> list[tuple[Any, ...]]:
    """Row dicts as value tuples in `columns` order."""
    return [tuple(row[c] for c in columns) for row in rows]
