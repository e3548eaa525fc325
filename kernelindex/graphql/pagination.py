"""Relay connections: opaque cursors, first/after forward and last/before backward, pageInfo and
totalCount, by keyset.

A page backward reads the keyset in reverse (every sort expression descending, `< cursor`), one
more than `last`, and turns the rows back into the list's order: the extra row, beyond the page's
start, says a previous page exists. first with last, or after with before, is refused
(BAD_USER_INPUT): the Relay specification allows them together but gives a result no client asks
for, and refusing is what GitHub's API does too.

`totalCount` is counted when a query asks for it, never otherwise: counting every row a filter
selects costs more than reading one page of them, and most readers never look at it."""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Annotated, Any, Generic, TypeVar

import strawberry
from sqlalchemy import ColumnElement, Select, Subquery, func, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnClause, Label, UnaryExpression

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


_URLSAFE = bytes.maketrans(b"+/", b"-_")


@lru_cache(maxsize=64)
def cursor_encoder(kind: str) -> Callable[[Sequence[Any]], str]:
    """encode_cursor(kind, ·), the same text, written by hand for a key of ints, finite floats and
    strings (a page writes one cursor per edge; the JSON encoder and base64's wrappers were ~2 µs of
    each): the JSON encoder writes an int and a finite float by their repr, as here, and a string inside
    a list as it writes the string alone; any other key is encode_cursor's."""
    prefix = "[" + _CURSOR_JSON.encode(kind) + ",["
    encode_string = _CURSOR_JSON.encode

    def encode(key: Sequence[Any]) -> str:
        parts = []
        for value in key:
            if type(value) is int:
                parts.append(int.__repr__(value))
            elif type(value) is float and value - value == 0.0:  # finite (not ±inf, not NaN)
                parts.append(float.__repr__(value))
            elif type(value) is str:
                parts.append(encode_string(value))
            else:
                return encode_cursor(kind, key)
        text = prefix + ",".join(parts) + "]]"
        return binascii.b2a_base64(text.encode(), newline=False).translate(_URLSAFE).decode()
    return encode


_MAX_BIGINT = 2**63 - 1


def _constant(name: str) -> float:
    """json.loads's reading of NaN, Infinity and -Infinity, which JSON does not have: Infinity is what
    a float key holds for "none" (a run without a mean sorts after every other); NaN is what a stored NaN
    figure gives (only past the database's checks), which PostgreSQL sorts after Infinity and holds equal
    to itself, so a keyset comparison with it pages past that run as with any other; -Infinity no key holds."""
    if name == "Infinity":
        return math.inf
    if name == "NaN":
        return math.nan
    raise ValueError(f"{name} is not JSON")


def _key_value_fits(value: Any, want: type) -> bool:
    """Whether a cursor's key value is one a sort expression of Python type `want` gives: text for
    text; an integer in bigint's range for an integer column (not 1.5, not 1.0: this API writes
    integers); a finite number, +Infinity or NaN (see _constant) for a float or numeric one; any of those
    for an unknown type."""
    if isinstance(value, bool):
        return False
    if isinstance(value, str):
        return want in (str, object) and text_problem(value) is None
    if isinstance(value, int):
        return want is not str and -_MAX_BIGINT <= value <= _MAX_BIGINT
    if isinstance(value, float):
        return want in (float, object) and value != -math.inf
    return False


def decode_cursor(kind: str, cursor: str, length: int, expected: Sequence[type] | None = None) -> list[Any]:
    """The key a cursor holds. `expected`: the Python type of each sort expression (str, int, float,
    or object for unknown); a value of the wrong kind, or one PostgreSQL cannot take, is refused."""
    try:
        decoded_kind, key = json.loads(base64.urlsafe_b64decode(cursor.encode()).decode(), parse_constant=_constant)
    except (binascii.Error, ValueError, UnicodeDecodeError, TypeError, RecursionError):
        raise PaginationError(f"malformed cursor {cursor[:40]!r}: pass a cursor this API returned") from None
    if decoded_kind != kind or not isinstance(key, list) or len(key) != length:
        raise PaginationError(f"cursor {cursor[:40]!r} does not belong to this list and order")
    for index, value in enumerate(key):
        if not _key_value_fits(value, expected[index] if expected is not None else object):
            raise PaginationError(f"malformed cursor {cursor[:40]!r}: pass a cursor this API returned")
    return key


def _is_column(expression: Any) -> bool:
    """A table column, or one negated (a descending key) or labelled."""
    while True:
        if hasattr(expression, "__clause_element__"):
            expression = expression.__clause_element__()
        if isinstance(expression, (UnaryExpression, Label)):
            expression = expression.element
            continue
        return isinstance(expression, ColumnClause)


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
    if issubclass(python_type, bool):
        return object
    if issubclass(python_type, int):
        # Only a column's own type is trusted to be an integer's: SQLAlchemy types extract() Integer,
        # and an epoch it extracts has a fraction.
        return int if _is_column(expression) else float
    if issubclass(python_type, (float, Decimal)):
        return float
    return object


def check_first(first: int, max_page_size: int, name: str = "first") -> int:
    if first < 1:
        raise PaginationError(f"{name} must be at least 1, got {first}")
    if first > max_page_size:
        raise PaginationError(f"{name} must be at most {max_page_size}, got {first}")
    return first


# The page size of a connection when a query gives neither `first` nor `last`.
PAGE_DEFAULT = 20

FirstArg = Annotated[int | None, strawberry.argument(
    description="Page forward: this many items from the start, or after `after` (1 to the server's page size, 100; "
    "20 when neither first nor last is given). Not with `last`.")]
AfterArg = Annotated[str | None, strawberry.argument(
    description="Page forward from this cursor (an endCursor or edge cursor of this list and order). Not with `before`.")]
LastArg = Annotated[int | None, strawberry.argument(
    description="Page backward: this many items from the end, or before `before` (1 to the server's page size). "
    "Not with `first`.")]
BeforeArg = Annotated[str | None, strawberry.argument(
    description="Page backward from this cursor (a startCursor or edge cursor of this list and order). Not with `after`.")]


@dataclass(frozen=True)
class Window:
    """Which page of a list: `size` items after `cursor` (forward), or before it (backward); no
    cursor is the list's start (forward) or end (backward)."""

    size: int
    cursor: str | None = None
    backward: bool = False


def page_window(first: int | None, after: str | None, last: int | None, before: str | None, max_page_size: int,
                default: int = PAGE_DEFAULT) -> Window:
    """The page the Relay arguments ask for, checked."""
    if first is not None and last is not None:
        raise PaginationError("pass first (with after) to page forward or last (with before) to page backward, not both")
    if after is not None and before is not None:
        raise PaginationError("pass after (with first) or before (with last), not both")
    if last is not None or before is not None:
        if first is not None:
            raise PaginationError("before pages backward: pass last with it, not first")
        if after is not None:
            raise PaginationError("after pages forward: pass first with it, not last")
        return Window(check_first(default if last is None else last, max_page_size, "last"), before or None, True)
    return Window(check_first(default if first is None else first, max_page_size), after or None, False)


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


def _beyond(kind: str, window: Window, order: Sequence[Any]) -> list[ColumnElement[bool]]:
    """The keyset condition of a page past its cursor: after it going forward, before it going
    backward (none without a cursor)."""
    if not window.cursor:
        return []
    key = decode_cursor(kind, window.cursor, len(order), [_python_type(e) for e in order])
    return [tuple_(*order) < tuple_(*key)] if window.backward else [tuple_(*order) > tuple_(*key)]


def _read_order(order: Sequence[Any], window: Window) -> list[Any]:
    """The order rows are read in: the list's, or its reverse for a page backward."""
    return [e.desc() for e in order] if window.backward else list(order)


def _connection(rows: Sequence[Any], *, kind: str, key_of: Callable[[Any], Sequence[Any]],
                make_node: Callable[[Any], Any], window: Window,
                count: Callable[[], Awaitable[int]]) -> Connection:
    """The page of `rows`: up to size + 1 of them in the list's order, the extra one beyond the
    page's far end (after it going forward, before it going backward) saying more items lie there."""
    more = len(rows) > window.size
    shown = (rows[len(rows) - window.size:] if more else rows) if window.backward else rows[:window.size]
    encode = cursor_encoder(kind)
    edges = [Edge(node=make_node(row), cursor=encode(key_of(row))) for row in shown]
    # The near side of a cursor is known to hold at least the cursor's own item.
    return Connection(
        edges=edges,
        page_info=PageInfo(
            has_next_page=window.cursor is not None if window.backward else more,
            has_previous_page=more if window.backward else window.cursor is not None,
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
    first: int | None,
    after: str | None,
    max_page_size: int,
    count_from: Select,
    last: int | None = None,
    before: str | None = None,
    total_with_page: bool = False,
) -> Connection:
    """One statement for the page, whatever the page size, and one for the total if it is asked for.

    `order` are ascending sort expressions ending in a unique column; `key_of(row)` gives their values.
    `total_with_page` (for a short list whose query selects totalCount, where `count_from` is
    `statement`): a page without a cursor reads the total in its own statement, as a window count
    over the rows the filter selects (counted before the limit), one round trip fewer; each row then
    ends in it (`key_of` and `make_node` read the columns before it).
    """
    window = page_window(first, after, last, before, max_page_size)
    page_statement = statement.where(*_beyond(kind, window, order))
    with_total = total_with_page and window.cursor is None
    if with_total:
        page_statement = page_statement.add_columns(func.count().over().label("total_count"))
    rows = (await session.execute(page_statement.order_by(*_read_order(order, window)).limit(window.size + 1))).all()
    if window.backward:
        rows = rows[::-1]
    count = known_count(rows[0][-1] if rows else 0) if with_total else counter(session, count_from)
    return _connection(rows, kind=kind, key_of=key_of, make_node=make_node, window=window, count=count)


def known_count(total: int) -> Callable[[], Awaitable[int]]:
    """A total already read (keyset_page's total_with_page), as `counter` gives one."""
    async def count() -> int:
        return total

    return count


def narrow_page_statement(
    narrow: Select,
    rows_of: Callable[[Subquery], Select],
    *,
    id_column: Any,
    kind: str,
    order: Sequence[Any],
    window: Window,
) -> Select:
    """The one statement of a page that is chosen before anything is joined to it.

    `narrow` selects the list's rows from its own table with every filter (conditions on that table
    alone, subqueries allowed), and `order` sorts them on its columns, ending in the unique
    `id_column`; the page (size + 1 ids and their sort keys, read in reverse for a page backward)
    is cut there, where the table's
    indexes serve the filter, the order and the limit. `rows_of(page)` then joins whatever the
    nodes need to just those ids: it must join the subquery `page` on its column `page_id`, and
    select columns, not entities (narrow_keyset_page reads Core rows). The page comes back in its
    order (the subquery's sort keys `page_key_0`…). Cursors are those keyset_page gives for the
    same `kind` and `order`. The statement depends only on its arguments, so a caller may keep it
    for the same arguments (queries.runs does)."""
    page = (
        narrow.with_only_columns(id_column.label("page_id"), *(e.label(f"page_key_{i}") for i, e in enumerate(order)))
        .where(*_beyond(kind, window, order))
        .order_by(*_read_order(order, window))
        .limit(window.size + 1)
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
    window: Window,
) -> Connection:
    """The page of narrow_page_statement(narrow, …, window=window): `statement` read in one round
    trip (in the list's order either way), and `narrow` counted only if the query selects totalCount."""
    # Executed on the session's connection, as Core: the rows come back as the driver's records,
    # with no ORM loading step per row (a page's nodes are built from plain columns anyway), even
    # when `narrow`'s conditions name ORM attributes, which would make session.execute load them.
    rows = (await (await session.connection()).execute(statement)).all()
    return _connection(rows, kind=kind, key_of=key_of, make_node=make_node, window=window,
                       count=counter(session, narrow))


def first_of(items: Sequence[T], first: int, max_page_size: int) -> list[T]:
    """The first `first` items of a list that is computed whole (a page's records, its floors):
    capped like a connection's page, so that no response grows with the stored data."""
    check_first(first, max_page_size)
    return list(items[:first])


# The page size of a capped list when the query gives none: the largest, so a page shows every item
# it has in all but extreme cases; its cost counts it (kernelindex.graphql.cost).
LIST_DEFAULT = 100
