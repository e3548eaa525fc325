"""Rows bound as one array per column and unnested in SQL: a derived table whose statement text does
not depend on how many rows it holds or what they are.

A VALUES list (sqlalchemy.values(...).data(rows)) puts the rows into the statement: its cache key
holds them, so every new set of rows is compiled anew (a cold workload page compiled one such
statement of three LATERAL parts per request, about 9 ms) and prepared anew by PostgreSQL; a tuple
IN list binds one parameter a value and is compiled anew for each length. Here the statement is the
same for any rows: compiled once by SQLAlchemy, prepared once per connection by asyncpg.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import BigInteger, bindparam, column, func
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.sql.elements import BindParameter
from sqlalchemy.types import TypeEngine

Columns = Sequence[tuple[str, TypeEngine[Any] | type[TypeEngine[Any]]]]


def unnested(name: str, columns: Columns, rows: Sequence[Sequence[Any]] | None = None) -> Any:
    """A derived table `name`(columns…) of unnest(…) over one array per column (in row order; duplicates
    kept). With `rows`, their values are bound into the statement; without, the arrays are parameters
    named `<name>_<column>` that array_values gives at execution, so a statement built once serves
    every call (nothing to construct, no cache key to compute)."""
    arrays = [
        bindparam(f"{name}_{label}", type_=ARRAY(type_)) if rows is None
        else bindparam(f"{name}_{label}", [row[i] for row in rows], type_=ARRAY(type_), unique=True)
        for i, (label, type_) in enumerate(columns)
    ]
    return func.unnest(*arrays).table_valued(*(column(label, type_) for label, type_ in columns)).render_derived(name=name)


def array_values(name: str, columns: Columns, rows: Sequence[Sequence[Any]]) -> dict[str, list[Any]]:
    """The parameters of unnested(name, columns) without rows: each column's values, by parameter name."""
    return {f"{name}_{label}": [row[i] for row in rows] for i, (label, _) in enumerate(columns)}


def id_array(name: str, ids: Iterable[int] | None = None) -> BindParameter[Sequence[int]]:
    """One bigint[] parameter `name` for `= ANY(...)`: any number of ids in a single bound value, so
    the statement's text is the same however many ids it is given. Without ids, they are given at
    execution ({name: [...]}: a statement built once serves every call); with them, they are bound."""
    if ids is None:
        return bindparam(name, type_=ARRAY(BigInteger))
    value: Sequence[int] = list(ids)
    return bindparam(name, value=value, type_=ARRAY(BigInteger), expanding=False)
