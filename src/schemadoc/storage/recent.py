"""What a store keeps of the documents it used last: a bounded, thread-safe map, the least recently used out first.

A store that kept its state of every document it ever read grew with the store: at 100,000 books, about a million
objects for each full collection of the interpreter's garbage collector to walk (573 ms).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

__all__ = ["Recent"]

K = TypeVar("K")
V = TypeVar("V")


class Recent(Generic[K, V]):
    """At most ``limit`` entries; a ``get`` or a set makes an entry the most recent. Every call under its own lock."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._kept: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._kept.get(key)
            if value is not None:
                self._kept.move_to_end(key)
            return value

    def __setitem__(self, key: K, value: V) -> None:
        with self._lock:
            self._kept[key] = value
            self._kept.move_to_end(key)
            while len(self._kept) > self._limit:
                self._kept.popitem(last=False)

    def pop(self, key: K, default: None = None) -> V | None:
        with self._lock:
            return self._kept.pop(key, default)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()

    def __len__(self) -> int:
        return len(self._kept)
