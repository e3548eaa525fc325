"""Rows bound as one array per column and unnested in SQL: a derived table whose statement text does
not depend on how many rows it holds or what they are.

A VALUES list (sqlalchemy.values(...).data(rows)) puts the rows into the statement: its cache key
holds them, so every new set of rows is compiled anew (a cold workload page compiled one such
statement of three LATERAL parts per request, about 9 ms) and prepared anew by PostgreSQL; a tuple
IN list binds one parameter a value and is compiled anew for each length. Here the statement is the
same for any rows: compiled once by SQLAlchemy, prepared once per connection by asyncpg.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import bindparam, column, func
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.types import TypeEngine


def unnested(name: str, columns: Sequence[tuple[str, TypeEngine[Any] | type[TypeEngine[Any]]]], rows: Sequence[Sequence[Any]]) -> Any:
    """`rows` as a derived table `name`(columns…), the values of each column bound as one array
    (unnest(…) of as many arrays as columns, in row order; duplicates kept)."""
    arrays = [
        bindparam(f"{name}_{label}", [row[i] for row in rows], type_=ARRAY(type_), unique=True)
        for i, (label, type_) in enumerate(columns)
    ]
    return func.unnest(*arrays).table_valued(*(column(label, type_) for label, type_ in columns)).render_derived(name=name)
