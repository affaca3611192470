"""Byte sizes of nodes as compact JSON, without re-serialising whole big documents.

A node's size is the length of its compact JSON (``orjson.dumps``, UTF-8): what a reader
would receive. Stored content is never mutated (a write copies only the containers on its
path), so a container's size can be remembered by identity: after a write only the containers
on the patched path are measured again, and each of them by summing its children's remembered
sizes. The cache holds a reference to each container it remembers, so an id is never confused
with a later object's.
"""

from __future__ import annotations

import threading
from typing import Any

from schemadoc.ops.sizes import json_size

__all__ = ["SizeCache", "json_size"]

_REMEMBER_FROM_BYTES = 2048
"""Containers smaller than this are measured again when needed (one orjson call, microseconds)."""
_MAX_ENTRIES = 200_000
_SUM_DEPTH = 2
_SUM_FROM_CHILDREN = 32


class SizeCache:
    """Sizes of containers by identity; thread-safe (a lost race only measures twice)."""

    def __init__(self, *, max_entries: int = _MAX_ENTRIES) -> None:
        self._sizes: dict[int, tuple[Any, int]] = {}
        self._lock = threading.Lock()
        self._max_entries = max_entries

    def __len__(self) -> int:
        return len(self._sizes)

    def clear(self) -> None:
        """Forget every size (and the containers it holds)."""
        with self._lock:
            self._sizes.clear()

    def size(self, node: Any, _depth: int = 0) -> int:
        """Bytes of ``node`` as compact JSON.

        The two levels below ``node``, and every container with many children, are measured as the
        sum of their children (so that after a write only the changed children are measured again);
        smaller containers further down are measured whole by orjson (C speed, the first time).
        """
        if not isinstance(node, dict | list):
            return json_size(node)
        hit = self._sizes.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        if _depth >= _SUM_DEPTH and len(node) < _SUM_FROM_CHILDREN:
            size = json_size(node)
        else:
            size = 2 + max(len(node) - 1, 0)
            if isinstance(node, dict):
                for key, value in node.items():
                    size += json_size(key) + 1 + self.size(value, _depth + 1)
            else:
                for value in node:
                    size += self.size(value, _depth + 1)
        if size >= _REMEMBER_FROM_BYTES:
            with self._lock:
                if len(self._sizes) >= self._max_entries:
                    self._sizes.clear()
                self._sizes[id(node)] = (node, size)
        return size
