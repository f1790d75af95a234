"""A size-bounded mapping that forgets the least recently used entry first.

Per-process caches (KB lookups, context-check vectors) use it so that memory stays flat however
long the corpus streaming through them is.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, TypeVar

from argus_ir.errors import ArgusInputError

__all__ = ["LRU"]

K = TypeVar("K")
V = TypeVar("V")


class LRU(Generic[K, V]):
    """At most ``maxsize`` entries; reading or writing an entry makes it the most recent."""

    def __init__(self, maxsize: int) -> None:
        if maxsize < 1:
            raise ArgusInputError(f"maxsize must be >= 1, got {maxsize}")
        self.maxsize = maxsize
        self._data: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def __setitem__(self, key: K, value: V) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self.maxsize:
            self._data.popitem(last=False)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)
