"""Relay-style connections: opaque cursors, first/after, pageInfo and totalCount, by keyset.

`totalCount` is counted when a query asks for it, never otherwise: counting every row a filter
selects costs more than reading one page of them, and most readers never look at it."""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
from collections.abc import Awaitable, Callable, Sequence
from decimal import Decimal
from typing import Any, Generic, TypeVar

import strawberry
from sqlalchemy import ColumnElement, Select, Subquery, func, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.text import text_problem
from kernelindex.graphql.errors import UserInputError

T = TypeVar("T")


class PaginationError(UserInputError):
    pass


# One encoder for every cursor: json.dumps with separators builds a new encoder at each call, and a
# page encodes a cursor per edge. The text is the same.
_CURSOR_JSON = json.JSONEncoder(separators=(",", ":"))


def encode_cursor(kind: str, key: Sequence[Any]) -> str:
    return base64.urlsafe_b64encode(_CURSOR_JSON.encode([kind, list(key)]).encode()).decode()


_MAX_BIGINT = 2**63 - 1


def decode_cursor(kind: str, cursor: str, length: int, expected: Sequence[type] | None = None) -> list[Any]:
    """The key a cursor holds. `expected`: the Python type of each sort expression (str, int, float,
    or object for unknown); a value of the wrong kind, or one PostgreSQL cannot take, is refused."""
    try:
        decoded_kind, key = json.loads(base64.urlsafe_b64decode(cursor.encode()).decode())
    except (binascii.Error, ValueError, UnicodeDecodeError, TypeError, RecursionError):
        raise PaginationError(f"malformed cursor {cursor[:40]!r}: pass a cursor this API returned") from None
    if decoded_kind != kind or not isinstance(key, list) or len(key) != length:
        raise PaginationError(f"cursor {cursor[:40]!r} does not belong to this list and order")
    for index, value in enumerate(key):
        want = expected[index] if expected is not None else object
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            ok = False
        elif isinstance(value, str):
            ok = want in (str, object) and text_problem(value) is None
        else:
            ok = want is not str and (not isinstance(value, int) or -_MAX_BIGINT <= value <= _MAX_BIGINT)
        if not ok:
            raise PaginationError(f"malformed cursor {cursor[:40]!r}: pass a cursor this API returned")
    return key


def _python_type(expression: Any) -> type:
    try:
        python_type = expression.type.python_type
    except (AttributeError, NotImplementedError):
        python_type = object
    if python_type is object:
        # An untyped function such as lower(name): judge by its first argument.
        arguments = list(getattr(getattr(expression, "clauses", None), "clauses", ()))
        return _python_type(arguments[0]) if arguments else object
    if issubclass(python_type, str):
        return str
    if issubclass(python_type, (int, float, Decimal)):
        return float
    return object


def check_first(first: int, max_page_size: int) -> int:
    if first < 1:
        raise PaginationError(f"first must be at least 1, got {first}")
    if first > max_page_size:
        raise PaginationError(f"first must be at most {max_page_size}, got {first}")
    return first


@strawberry.type(description="Where a page sits in its list.")
class PageInfo:
    has_next_page: bool = strawberry.field(description="More items follow this page.")
    has_previous_page: bool = strawberry.field(description="Items precede this page.")
    start_cursor: str | None = strawberry.field(description="Cursor of the first item on this page.")
    end_cursor: str | None = strawberry.field(description="Cursor of the last item; pass it as `after` for the next page.")


@strawberry.type(description="An item and its cursor.")
class Edge(Generic[T]):
    node: T = strawberry.field(description="The item.")
    cursor: str = strawberry.field(description="Opaque cursor of this item.")


@strawberry.type(description="A page of a list.")
class Connection(Generic[T]):
    edges: list[Edge[T]] = strawberry.field(description="Items with their cursors.")
    page_info: PageInfo = strawberry.field(description="Paging state.")
    # How to count the whole list: called by `total_count`, so only when a query selects it.
    count: strawberry.Private[Callable[[], Awaitable[int]]]

    @strawberry.field(description="Items in the whole filtered list.")
    async def total_count(self) -> int:
        return await self.count()

    @strawberry.field(description="The items of this page, without cursors.")
    def nodes(self) -> list[T]:
        return [e.node for e in self.edges]


def counter(session: AsyncSession, count_from: Select) -> Callable[[], Awaitable[int]]:
    """`count(*)` over `count_from`, run the first time it is awaited and remembered (a query may
    select `totalCount` under several aliases)."""
    total: list[int] = []
    once = asyncio.Lock()  # aliases resolve concurrently: the second waits for the first's answer

    async def count() -> int:
        async with once:
            if not total:
                total.append((await session.execute(select(func.count()).select_from(count_from.subquery()))).scalar_one())
            return total[0]

    return count


def _after(kind: str, after: str | None, order: Sequence[Any]) -> list[ColumnElement[bool]]:
    """The keyset condition of a page that starts after the cursor `after` (none for the first page)."""
    if not after:
        return []
    key = decode_cursor(kind, after, len(order), [_python_type(e) for e in order])
    return [tuple_(*order) > tuple_(*key)]


def _connection(rows: Sequence[Any], *, kind: str, key_of: Callable[[Any], Sequence[Any]],
                make_node: Callable[[Any], Any], first: int, after: str | None,
                count: Callable[[], Awaitable[int]]) -> Connection:
    """The page of `rows` (up to first + 1 of them, in order: one more than the page says a next page exists)."""
    edges = [Edge(node=make_node(row), cursor=encode_cursor(kind, key_of(row))) for row in rows[:first]]
    return Connection(
        edges=edges,
        page_info=PageInfo(
            has_next_page=len(rows) > first,
            has_previous_page=after is not None,
            start_cursor=edges[0].cursor if edges else None,
            end_cursor=edges[-1].cursor if edges else None,
        ),
        count=count,
    )


async def keyset_page(
    session: AsyncSession,
    statement: Select,
    *,
    kind: str,
    order: Sequence[Any],
    key_of: Callable[[Any], Sequence[Any]],
    make_node: Callable[[Any], Any],
    first: int,
    after: str | None,
    max_page_size: int,
    count_from: Select,
) -> Connection:
    """One statement for the page, whatever the page size, and one for the total if it is asked for.

    `order` are ascending sort expressions ending in a unique column; `key_of(row)` gives their values.
    """
    check_first(first, max_page_size)
    page_statement = statement.where(*_after(kind, after, order))
    rows = (await session.execute(page_statement.order_by(*order).limit(first + 1))).all()
    return _connection(rows, kind=kind, key_of=key_of, make_node=make_node, first=first, after=after,
                       count=counter(session, count_from))


def narrow_page_statement(
    narrow: Select,
    rows_of: Callable[[Subquery], Select],
    *,
    id_column: Any,
    kind: str,
    order: Sequence[Any],
    first: int,
    after: str | None,
    max_page_size: int,
) -> Select:
    """The one statement of a page that is chosen before anything is joined to it.

    `narrow` selects the list's rows from its own table with every filter (conditions on that table
    alone, subqueries allowed), and `order` sorts them on its columns, ending in the unique
    `id_column`; the page (first + 1 ids and their sort keys) is cut there, where the table's
    indexes serve the filter, the order and the limit. `rows_of(page)` then joins whatever the
    nodes need to just those ids: it must join the subquery `page` on its column `page_id`, and
    select columns, not entities (narrow_keyset_page reads Core rows). The page comes back in its
    order (the subquery's sort keys `page_key_0`…). Cursors are those keyset_page gives for the
    same `kind` and `order`. The statement depends only on its arguments, so a caller may keep it
    for the same arguments (queries.runs does)."""
    check_first(first, max_page_size)
    page = (
        narrow.with_only_columns(id_column.label("page_id"), *(e.label(f"page_key_{i}") for i, e in enumerate(order)))
        .where(*_after(kind, after, order))
        .order_by(*order)
        .limit(first + 1)
        .subquery("page")
    )
    return rows_of(page).order_by(*(page.c[f"page_key_{i}"] for i in range(len(order))))


async def narrow_keyset_page(
    session: AsyncSession,
    narrow: Select,
    statement: Select,
    *,
    kind: str,
    key_of: Callable[[Any], Sequence[Any]],
    make_node: Callable[[Any], Any],
    first: int,
    after: str | None,
) -> Connection:
    """The page of narrow_page_statement(narrow, …, first=first, after=after): `statement` read in
    one round trip, and `narrow` counted only if the query selects totalCount."""
    # Executed on the session's connection, as Core: the rows come back as the driver's records,
    # with no ORM loading step per row (a page's nodes are built from plain columns anyway), even
    # when `narrow`'s conditions name ORM attributes, which would make session.execute load them.
    rows = (await (await session.connection()).execute(statement)).all()
    return _connection(rows, kind=kind, key_of=key_of, make_node=make_node, first=first, after=after,
                       count=counter(session, narrow))


def first_of(items: Sequence[T], first: int, max_page_size: int) -> list[T]:
    """The first `first` items of a list that is computed whole (a page's records, its floors):
    capped like a connection's page, so that no response grows with the stored data."""
    check_first(first, max_page_size)
    return list(items[:first])


# The page size of a capped list when the query gives none: the largest, so a page shows every item
# it has in all but extreme cases; its cost counts it (kernelindex.graphql.cost).
LIST_DEFAULT = 100
