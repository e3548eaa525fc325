"""Every page of a connection, by pageInfo.endCursor: what each paged operation of the client needs."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Protocol, TypeVar

N = TypeVar("N", covariant=True)


class PageInfo(Protocol):
    @property
    def has_next_page(self) -> bool: ...
    @property
    def end_cursor(self) -> str | None: ...


class Connection(Protocol[N]):
    """A connection as the generated models have it: `pageInfo { ...PageCursor }` and `nodes`."""

    @property
    def page_info(self) -> PageInfo: ...
    @property
    def nodes(self) -> Sequence[N]: ...


C = TypeVar("C", bound=Connection[object])


def pages(fetch: Callable[[str | None], C]) -> Iterator[C]:
    """Each page of a connection, first to last. `fetch(after)` asks for the page after the cursor
    `after` (None: the first page) and returns the connection, e.g.
    `lambda after: client.graphql.run_table(workload="…", after=after).runs`."""
    after: str | None = None
    while True:
        page = fetch(after)
        yield page
        if not page.page_info.has_next_page:
            return
        if page.page_info.end_cursor is None or page.page_info.end_cursor == after:
            # A server that says there is more but gives no new cursor would have this loop forever.
            raise RuntimeError(f"the connection has a next page but no new endCursor (after {after!r})")
        after = page.page_info.end_cursor


def nodes(fetch: Callable[[str | None], Connection[N]]) -> Iterator[N]:
    """Every node of a connection, page after page (see `pages`)."""
    for page in pages(fetch):
        yield from page.nodes
