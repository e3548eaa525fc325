"""Relay-style connections: opaque cursors, first/after, pageInfo and totalCount."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any, Generic, TypeVar

import strawberry
from kernelindex.graphql.errors import UserInputError

T = TypeVar("T")


class PaginationError(UserInputError):
    pass


def encode_cursor(kind: str, key: list[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps([kind, key], separators=(",", ":")).encode()).decode()


def decode_cursor(kind: str, cursor: str) -> list[Any]:
    try:
        decoded_kind, key = json.loads(base64.urlsafe_b64decode(cursor.encode()).decode())
    except (binascii.Error, ValueError, UnicodeDecodeError, TypeError):
        raise PaginationError(f"malformed cursor {cursor[:40]!r}: pass a cursor this API returned")
    if decoded_kind != kind or not isinstance(key, list):
        raise PaginationError(f"cursor {cursor[:40]!r} does not belong to this list")
    return key


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
    total_count: int = strawberry.field(description="Items in the whole filtered list.")

    @strawberry.field(description="The items of this page, without cursors.")
    def nodes(self) -> list[T]:
        return [e.node for e in self.edges]
