"""Bounded views of a node: what fits in a byte budget, breadth first, never silently cut.

A bounded view is the node's JSON where containers that were not expanded are replaced by a
*stub* ``{"$stub": true, "type": "array", "count": 12, "size_bytes": 5321, "pointer": "/a/b"}``
(strings cut for the budget: ``"length"`` instead of ``"count"``). ``offset``/``limit`` choose
a window of the node's members or items (of its characters for a string). Under ``max_bytes``
the window's children are expanded level by level, in document order, while the view fits; a
window whose stubs alone do not fit is shortened, and ``next_offset`` says where to go on.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from schemadoc.pointer import escape, json_type
from schemadoc.reading.sizes import SizeCache, json_size

__all__ = ["MAX_CONTINUE_AT", "BoundedView", "Window", "bounded_view", "child_pointer", "entries_of", "is_stub", "stub"]

_MIN_INLINE_STRING = 256
_STUB_FRAME = len('{"$stub":true,"type":"object","count":,"size_bytes":,"pointer":""}')
MAX_CONTINUE_AT = 20


@dataclass(frozen=True)
class Window:
    """Which members, items or characters of the node the view holds."""

    total: int
    offset: int
    count: int

    @property
    def next_offset(self) -> int | None:
        end = self.offset + self.count
        return end if end < self.total else None


@dataclass(frozen=True)
class BoundedView:
    content: Any
    node_type: str
    size_bytes: int
    """Bytes of the whole node as compact JSON."""
    truncated: bool
    """True when the view is not the whole (windowed) node: stubs stand in for parts, or the budget
    shortened the window."""
    window: Window | None = None
    continue_at: list[str] = field(default_factory=list)
    """Pointers of the stubs (shallowest first, at most 20): read them to go on."""


def child_pointer(pointer: str, key: str | int) -> str:
    return f"{pointer}/{escape(key) if isinstance(key, str) else key}"


def stub(value: Any, pointer: str, sizes: SizeCache) -> dict[str, Any]:
    """What stands in for ``value`` (a container, or a string too long to show) in a bounded view."""
    kind = json_type(value)
    out: dict[str, Any] = {"$stub": True, "type": kind}
    out["length" if kind == "string" else "count"] = len(value)
    out["size_bytes"] = sizes.size(value)
    out["pointer"] = pointer or "/"
    return out


def inline_small(value: Any, pointer: str, sizes: SizeCache) -> bool:
    """Whether a container is no bigger than its stub would be: it is then shown as it is, never stubbed
    (a stub of an empty or tiny container would cost a call to learn less than it took to say)."""
    if not isinstance(value, dict | list):
        return False
    if not value:
        return True
    size = sizes.size(value) if len(value) > 8 else json_size(value)
    return size <= _STUB_FRAME + len(pointer) + 2 * len(str(len(value))) + len(str(size))


def is_stub(value: Any) -> bool:
    return isinstance(value, dict) and value.get("$stub") is True and "pointer" in value


def entries_of(node: Any, offset: int = 0, limit: int | None = None) -> Iterator[tuple[str | int, Any]]:
    """(key or index, value) of a container's members or items from ``offset``, at most ``limit`` of them."""
    offset = min(offset, len(node))  # islice takes no index beyond sys.maxsize
    stop = None if limit is None else min(offset + limit, len(node))
    if isinstance(node, dict):
        return itertools.islice(node.items(), offset, stop)
    return enumerate(node[offset:stop], start=offset)


def _frame(entries: int) -> int:
    """The bytes of a container's brackets and commas."""
    return 2 + max(entries - 1, 0)


def _key_size(is_object: bool, key: str | int) -> int:
    return json_size(key) + 1 if is_object else 0


def bounded_view(node: Any, pointer: str, sizes: SizeCache, *, max_depth: int | None = None,
                 offset: int = 0, limit: int | None = None, max_bytes: int | None = None) -> BoundedView:
    """The view of ``node`` (found at ``pointer``) under the given bounds; see the module docstring.

    ``max_depth``: how many container levels below the node are shown (0: the node itself is a stub).
    ``max_bytes``: the view's compact JSON stays within it (unless one stub alone is larger).
    """
    kind = json_type(node)
    if isinstance(node, str):
        return _string_view(node, pointer, offset, limit, max_bytes)
    if not isinstance(node, dict | list):
        return BoundedView(node, kind, json_size(node), False)
    size = sizes.size(node)
    is_object = isinstance(node, dict)
    total = len(node)
    whole_window = offset == 0 and (limit is None or limit >= total)
    entries = None if whole_window else list(entries_of(node, offset, limit))
    count = total if entries is None else len(entries)
    if max_depth == 0 and not inline_small(node, pointer, sizes):
        return BoundedView(stub(node, pointer, sizes), kind, size, True, Window(total, offset, count), [pointer or "/"])
    if max_depth == 0:
        max_depth = None
    if max_depth is None:
        # the fast path: the window fits whole, so the stored content is returned without a copy
        if entries is None:
            window_size = size
        else:
            window_size = _frame(count) + sum(_key_size(is_object, k) + sizes.size(v) for k, v in entries)
        if max_bytes is None or window_size <= max_bytes:
            content = node if entries is None else (dict(entries) if is_object else [v for _, v in entries])
            return BoundedView(content, kind, size, False, Window(total, offset, count))
    if entries is None:
        entries = list(entries_of(node, offset, limit))
    return _Builder(sizes, max_depth, max_bytes).build(node, pointer, entries, total, offset, size)


def _string_view(node: str, pointer: str, offset: int, limit: int | None, max_bytes: int | None) -> BoundedView:
    size = json_size(node)
    stop = None if limit is None else offset + limit
    part = node[offset:stop]
    truncated = False
    if max_bytes is not None and json_size(part) > max_bytes:
        keep = max(max_bytes - 2, 0)
        part = part[:keep]
        while part and json_size(part) > max_bytes:  # escapes and multi-byte characters take more room
            part = part[: max(len(part) * max_bytes // json_size(part) - 1, 0)]
        truncated = True
    return BoundedView(part, "string", size, truncated, Window(len(node), offset, len(part)))


class _Builder:
    """Breadth-first expansion of stubs while the view fits."""

    def __init__(self, sizes: SizeCache, max_depth: int | None, max_bytes: int | None) -> None:
        self.sizes = sizes
        self.max_depth = max_depth
        self.max_bytes = max_bytes
        self.inline_cap = None if max_bytes is None else max(_MIN_INLINE_STRING, max_bytes // 16)
        self.stubs: dict[str, None] = {}  # pointers of the stubs in the view, in insertion order

    def _repr(self, value: Any, pointer: str) -> tuple[Any, bool]:
        """(what shows ``value`` at the first level, whether it is an expandable stub)."""
        if isinstance(value, dict | list):
            if inline_small(value, pointer, self.sizes):
                return value, False
            self.stubs[pointer or "/"] = None
            return stub(value, pointer, self.sizes), True
        if isinstance(value, str) and self.inline_cap is not None and json_size(value) > self.inline_cap:
            self.stubs[pointer or "/"] = None
            return stub(value, pointer, self.sizes), False
        return value, False

    def _level(self, entries: Iterable[tuple[str | int, Any]], pointer: str,
               is_object: bool) -> tuple[list[tuple[str | int, Any, bool, int]], int]:
        """Each entry as shown at the first level (key, view, expandable, bytes), and the level's bytes."""
        shown = []
        for key, value in entries:
            view, expandable = self._repr(value, child_pointer(pointer, key))
            shown.append((key, view, expandable, _key_size(is_object, key) + json_size(view)))
        return shown, _frame(len(shown)) + sum(entry[3] for entry in shown)

    def _forget(self, level: list[tuple[str | int, Any, bool, int]]) -> None:
        """The stubs of entries left out of the view are not in it."""
        for _, view, _, _ in level:
            if is_stub(view):
                self.stubs.pop(view["pointer"], None)

    def build(self, node: Any, pointer: str, entries: list[tuple[str | int, Any]], total: int, offset: int,
              size: int) -> BoundedView:
        is_object = isinstance(node, dict)
        shown, used = self._level(entries, pointer, is_object)
        shortened = False
        if self.max_bytes is not None and used > self.max_bytes:
            kept = _frame(0)
            keep = 0
            for _, _, _, entry_size in shown:
                if kept + entry_size + (1 if keep else 0) > self.max_bytes:
                    break
                kept += entry_size + (1 if keep else 0)
                keep += 1
            self._forget(shown[keep:])
            if keep == 0:  # the first entry alone is too big (a member name longer than the budget):
                keep, kept = 1, used if len(shown) == 1 else _frame(1) + shown[0][3]
            shown, used, shortened = shown[:keep], kept, True  # always one entry at least: the window moves on
        queue: deque[tuple[Any, str | int, Any, str, int]] = deque()
        root = self._container(shown, node, pointer, is_object, queue, 1, offset)
        while queue:
            parent, slot, value, here, depth = queue.popleft()
            if self.max_depth is not None and depth >= self.max_depth:
                continue
            child_is_object = isinstance(value, dict)
            level, level_size = self._level(entries_of(value), here, child_is_object)
            cost = level_size - json_size(parent[slot])
            if self.max_bytes is not None and used + cost > self.max_bytes:
                self._forget(level)
                continue
            parent[slot] = self._container(level, value, here, child_is_object, queue, depth + 1)
            used += cost
            self.stubs.pop(here or "/", None)
        window = Window(total, offset, len(shown))
        continue_at = list(itertools.islice(self.stubs, MAX_CONTINUE_AT))
        return BoundedView(root, json_type(node), size, shortened or bool(self.stubs), window, continue_at)

    @staticmethod
    def _container(level: list[tuple[str | int, Any, bool, int]], node: Any, pointer: str, is_object: bool,
                   queue: deque[tuple[Any, str | int, Any, str, int]], depth: int, offset: int = 0) -> Any:
        """The view of ``node`` from its ``level``; each expandable stub in it queued (its slot, at ``depth``)."""
        built: Any = {key: view for key, view, _, _ in level} if is_object else [view for _, view, _, _ in level]
        for key, _, expandable, _ in level:
            if expandable:
                slot = key if isinstance(key, str) else key - offset
                queue.append((built, slot, node[key], child_pointer(pointer, key), depth))
        return built
