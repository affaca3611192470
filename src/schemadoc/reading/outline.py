"""The table of contents of a node: members and items with type, count, size and schema title.

Leaf values are left out; an object item's ``title`` or ``name`` member (cut to 80 characters)
becomes its ``label``, so a list of chapters reads like a table of contents. Breadth first within
a byte budget: a node whose children do not all fit lists those that do and says how many more
there are (``more``: ``{"count", "next_offset"}``).
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from schemadoc.pointer import json_type
from schemadoc.reading.schemas import NodeSchemas
from schemadoc.reading.sizes import SizeCache, json_size
from schemadoc.reading.views import Window, child_pointer

__all__ = ["Outline", "outline"]

_LABEL_MEMBERS = ("title", "name")
_MAX_LABEL = 80
_MAX_CONTINUE_AT = 20
_CHILDREN_OVERHEAD = len(',"children":[]')


@dataclass(frozen=True)
class Outline:
    root: dict[str, Any]
    truncated: bool
    window: Window | None
    continue_at: list[str] = field(default_factory=list)


def _entry(value: Any, pointer: str, tokens: list[str | int], sizes: SizeCache, schemas: NodeSchemas) -> dict[str, Any]:
    entry: dict[str, Any] = {"pointer": pointer or "/", "type": json_type(value)}
    if isinstance(value, dict | list):
        entry["count"] = len(value)
    entry["size_bytes"] = sizes.size(value)
    title = schemas.title(tokens)
    if title is not None:
        entry["title"] = title
    if isinstance(value, dict):
        for member in _LABEL_MEMBERS:
            label = value.get(member)
            if isinstance(label, str):
                entry["label"] = label[:_MAX_LABEL]
                break
    return entry


def outline(node: Any, tokens: list[str | int], pointer: str, sizes: SizeCache, schemas: NodeSchemas, *,
            depth: int = 2, offset: int = 0, limit: int | None = None, max_bytes: int | None = None) -> Outline:
    """The outline of ``node`` ``depth`` levels down (``offset``/``limit`` over its own children)."""
    root = _entry(node, pointer, tokens, sizes, schemas)
    used = json_size(root)
    truncated = False
    continue_at: list[str] = []
    window: Window | None = None
    queue: deque[tuple[dict[str, Any], Any, list[str | int], str, int]] = deque([(root, node, tokens, pointer, 0)])
    while queue:
        entry, value, here_tokens, here, level = queue.popleft()
        if level >= depth or not isinstance(value, dict | list) or not value:
            continue
        start, stop = (offset, None if limit is None else offset + limit) if level == 0 else (0, None)
        # islice takes no index beyond sys.maxsize
        pairs = (itertools.islice(value.items(), min(start, len(value)),
                                  None if stop is None else min(stop, len(value))) if isinstance(value, dict)
                 else enumerate(value[start:stop], start=start))
        children: list[dict[str, Any]] = []
        kept: list[tuple[dict[str, Any], Any, list[str | int], str]] = []
        cost = _CHILDREN_OVERHEAD
        shown = 0
        for key, child in pairs:
            child_tokens = [*here_tokens, key]
            at = child_pointer(here, key)
            child_entry = _entry(child, at, child_tokens, sizes, schemas)
            entry_cost = json_size(child_entry) + (1 if children else 0)
            if max_bytes is not None and used + cost + entry_cost > max_bytes:
                break
            cost += entry_cost
            children.append(child_entry)
            kept.append((child_entry, child, child_tokens, at))
            shown += 1
        total = len(value)
        first = start if level == 0 else 0
        if level == 0:
            window = Window(total, first, shown)
        requested = (total - first) if (level != 0 or limit is None) else min(limit, total - first)
        if shown < requested:
            truncated = True
            more = {"count": total - first - shown, "next_offset": first + shown}
            more_cost = json_size(more) + len(',"more":')
            while children and max_bytes is not None and used + cost + more_cost > max_bytes:
                removed = children.pop()
                kept.pop()
                cost -= json_size(removed) + (1 if children else 0)
                shown -= 1
                more = {"count": total - first - shown, "next_offset": first + shown}
                more_cost = json_size(more) + len(',"more":')
            if max_bytes is not None and used + cost + more_cost > max_bytes:
                continue
            entry["more"] = more
            cost += more_cost
            if level == 0:
                window = Window(total, first, shown)
            if len(continue_at) < _MAX_CONTINUE_AT:
                continue_at.append(here or "/")
        if children:
            entry["children"] = children
            used += cost
        for item in kept:
            queue.append((*item, level + 1))
    # containers listed but not opened because of the depth are not truncation: the caller asked for it
    return Outline(root, truncated, window, continue_at)
