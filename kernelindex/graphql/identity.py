"""Values kept by the identity of the object they are made from.

For objects met again and again as the same object, whose own hash is slow or is not their identity:
a DocumentNode hashes by walking every node of it (the parser cache gives the same document for the
same query text), and frozen facts hash by value (a catalogue's implementation is one facts object,
shared by every run of it). Each entry holds its object, so the object's id is not reused while it is
kept; past `size` entries the oldest is dropped.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

O = TypeVar("O")  # noqa: E741  # the object a value is made from
V = TypeVar("V")


class KeptByIdentity(Generic[O, V]):
    """`make(obj, *args)`, kept by the identity of `obj` and the values of `args`."""

    def __init__(self, make: Callable[..., V], size: int) -> None:
        self.make = make
        self.size = size
        self._kept: dict[Any, tuple[O, V]] = {}
        functools.update_wrapper(self, make)

    def __call__(self, obj: O, *args: Hashable) -> V:
        key = (id(obj), *args) if args else id(obj)
        kept = self._kept.get(key)
        if kept is not None and kept[0] is obj:
            return kept[1]
        value = self.make(obj, *args)
        if len(self._kept) >= self.size:
            self._kept.pop(next(iter(self._kept), None), None)  # the oldest
        self._kept[key] = (obj, value)
        return value

    def __len__(self) -> int:
        return len(self._kept)

    def clear(self) -> None:
        self._kept.clear()


def kept_by_identity(size: int) -> Callable[[Callable[..., V]], KeptByIdentity[Any, V]]:
    """A decorator: the function's values kept by the identity of its first argument (KeptByIdentity)."""

    def wrap(make: Callable[..., V]) -> KeptByIdentity[Any, V]:
        return KeptByIdentity(make, size)
    return wrap
