"""The table of contents of a node: members and items with type, count, size and schema title.

Leaf values are left out; an object item's ``title`` or ``name`` member (cut to 80 characters)
becomes its ``label``, so a list of chapters reads like a table of contents. Breadth first within
a byte budget: a node whose children do not all fit lists those that do and says how many more
there are (``more``: ``{"count", "next_offset"}``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from schemadoc.pointer import json_type
from schemadoc.reading.render import heading
from schemadoc.reading.schemas import NodeSchemas
from schemadoc.reading.sizes import SizeCache, json_size
from schemadoc.reading.views import MAX_CONTINUE_AT, Window, child_pointer, entries_of

__all__ = ["Outline", "outline"]

_MAX_LABEL = 80
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
    label = heading(value)
    if label is not None:
        entry["label"] = label[:_MAX_LABEL]
    return entry


def _more(total: int, first: int, shown: int) -> tuple[dict[str, int], int]:
    """What says how many children were left out, and its bytes."""
    more = {"count": total - first - shown, "next_offset": first + shown}
    return more, json_size(more) + len(',"more":')


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
        first, count = (offset, limit) if level == 0 else (0, None)
        children: list[dict[str, Any]] = []
        kept: list[tuple[dict[str, Any], Any, list[str | int], str, int]] = []
        cost = _CHILDREN_OVERHEAD
        for key, child in entries_of(value, first, count):
            child_tokens = [*here_tokens, key]
            at = child_pointer(here, key)
            child_entry = _entry(child, at, child_tokens, sizes, schemas)
            entry_cost = json_size(child_entry) + (1 if children else 0)
            if max_bytes is not None and used + cost + entry_cost > max_bytes:
                break
            cost += entry_cost
            children.append(child_entry)
            kept.append((child_entry, child, child_tokens, at, level + 1))
        total = len(value)
        if level == 0:
            window = Window(total, first, len(children))
        requested = (total - first) if (level != 0 or limit is None) else min(limit, total - first)
        if len(children) < requested:
            truncated = True
            more, more_cost = _more(total, first, len(children))
            while children and max_bytes is not None and used + cost + more_cost > max_bytes:
                cost -= json_size(children.pop()) + (1 if children else 0)
                kept.pop()
                more, more_cost = _more(total, first, len(children))
            if max_bytes is not None and used + cost + more_cost > max_bytes:
                continue
            entry["more"] = more
            cost += more_cost
            if level == 0:
                window = Window(total, first, len(children))
            if len(continue_at) < MAX_CONTINUE_AT:
                continue_at.append(here or "/")
        if children:
            entry["children"] = children
            used += cost
        queue.extend(kept)
    # containers listed but not opened because of the depth are not truncation: the caller asked for it
    return Outline(root, truncated, window, continue_at)
