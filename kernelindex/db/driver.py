"""A Core statement run by the driver itself on the session's connection: SQLAlchemy compiles it once,
asyncpg runs it, and its rows come back without a trip through SQLAlchemy's execution and result.

Why: a cold workload page runs a fixed handful of statements, each built once (kernelindex.db.arrays);
SQLAlchemy's part of each (the session's execute, the greenlet hop, the adapter's cursor, the Row
objects) cost about half a millisecond, as much as the round trip itself at a million runs, and about a
fifth of the cold page. Here a statement's SQL, its parameters' order and conversions, and its columns'
conversions are worked out once per process; each call converts its parameters and the few columns
SQLAlchemy would convert (arrays: a list as SQLAlchemy's ARRAY gives it back), no more.

Only where it gives what session.execute would:
- the session must offer `driver_call` (kernelindex.graphql.session.SerializedSession: it runs the
  call under the session's lock on the connection the session holds) and, where the session flushes
  before each statement (autoflush; the server's sessions do not), nothing may wait to be flushed;
  otherwise session.execute runs the statement;
- a statement SQLAlchemy expands at execution (an IN list, "POSTCOMPILE") or whose parameter needs a
  conversion per element goes through session.execute too.
Rows are named tuples: by position and slice as a Row, and by column name (the statement's keys; where
two columns share a name, the later ones are renamed, as a Row would not).
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.sql.elements import ClauseElement


class _NotDriverSQL(Exception):
    """A statement the driver cannot take as SQLAlchemy compiled it."""


@dataclass
class _Compiled:
    sql: str
    names: tuple[str, ...]  # the parameters, in the driver's ($1, $2, …) order
    defaults: dict[str, Any]  # the values the statement holds itself
    binds: dict[str, Callable[[Any], Any]]  # the parameters SQLAlchemy converts
    result_types: tuple[Any, ...]  # each column's SQLAlchemy type
    row: Any  # the named tuple class of a row
    converters: tuple[tuple[int, Callable[[Any], Any]], ...] | None = None  # (column, conversion), once known


# By statement (the object: the page's statements are built once and kept) and kind of dialect (the SQL
# and the conversions are those of the dialect's class, whichever engine's instance compiled them).
_COMPILED: dict[tuple[int, type], _Compiled | None] = {}
_KEEP: list[Any] = []  # the statements compiled, kept alive so their id() stays theirs


def _compile(statement: ClauseElement, dialect: Any) -> _Compiled | None:
    key = (id(statement), type(dialect))
    if key in _COMPILED:
        return _COMPILED[key]
    try:
        compiled: Any = statement.compile(dialect=dialect)  # a SQLCompiler: positiontup, _bind_processors
        if compiled.positiontup is None or "POSTCOMPILE" in compiled.string:
            raise _NotDriverSQL(compiled.string[:200])
        binds: dict[str, Callable[[Any], Any]] = {}
        for name, processor in compiled._bind_processors.items():
            if not callable(processor):  # a tuple's processors: expanded at execution
                raise _NotDriverSQL(name)
            binds[name] = processor
        columns = compiled._result_columns
        found: _Compiled | None = _Compiled(
            sql=compiled.string, names=tuple(compiled.positiontup),
            defaults=compiled.construct_params(_check=False), binds=binds,
            result_types=tuple(c[3] for c in columns),
            row=namedtuple("DriverRow", [c[0] for c in columns], rename=True),
        )
    except _NotDriverSQL:
        found = None
    _KEEP.append(statement)
    _COMPILED[key] = found
    return found


def _flush_pending(session: Any) -> bool:
    """Whether session.execute would flush changes first (an autoflush session with changes)."""
    sync = getattr(session, "sync_session", None)
    return sync is None or (sync.autoflush and not sync._is_clean())


async def fetch_rows(session: Any, statement: ClauseElement, params: Mapping[str, Any] | None = None) -> Sequence[Any]:
    """The rows of `statement` with `params`, as session.execute(statement, params).all() gives them (see
    the module's docstring): by the driver where it can, else by session.execute."""
    params = params or {}
    driver_call: Callable[..., Any] | None = getattr(session, "driver_call", None)
    bind: Any = getattr(session, "bind", None)
    compiled = None
    if driver_call is not None and bind is not None and not _flush_pending(session):
        compiled = _compile(statement, bind.dialect)
    if driver_call is None or compiled is None:
        rows: Sequence[Any] = (await session.execute(statement, params)).all()
        return rows
    values = []
    for name in compiled.names:
        value = params[name] if name in params else compiled.defaults[name]
        processor = compiled.binds.get(name)
        values.append(value if processor is None else processor(value))
    if compiled.converters is None:
        compiled.converters = await _converters(driver_call, compiled, bind.dialect)
    sql = compiled.sql
    records = await driver_call(lambda driver: driver.fetch(sql, *values))
    make, converters = compiled.row._make, compiled.converters
    if not converters:
        return [make(r) for r in records]
    out = []
    for record in records:
        row = list(record)
        for i, convert in converters:
            row[i] = convert(row[i])
        out.append(make(row))
    return out


async def _converters(driver_call: Any, compiled: _Compiled, dialect: Any) -> tuple[tuple[int, Callable[[Any], Any]], ...]:
    """The conversions SQLAlchemy's result would apply to each column, for the types PostgreSQL says
    the columns have (asked once per statement and process: a prepare, no execution)."""
    prepared = await driver_call(lambda driver: driver.prepare(compiled.sql))
    attributes = prepared.get_attributes()
    if len(attributes) != len(compiled.result_types):
        raise RuntimeError(f"{len(attributes)} columns where SQLAlchemy compiled {len(compiled.result_types)}")
    out = []
    for i, (type_, attribute) in enumerate(zip(compiled.result_types, attributes, strict=True)):
        processor = type_._cached_result_processor(dialect, attribute.type.oid)
        if processor is not None:
            out.append((i, processor))
    return tuple(out)
