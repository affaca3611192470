"""Measuring and searching documents: node counts, depth, and text search over string leaves."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from schemadoc.pointer import json_type
from schemadoc.reading.views import child_pointer

__all__ = ["Hit", "NodeCounts", "count_nodes", "search"]

_SNIPPET_CONTEXT = 40


@dataclass(frozen=True)
class NodeCounts:
    by_type: dict[str, int]
    depth: int
    """Container levels: 0 for a scalar document, 1 for a flat object or array, …"""


def count_nodes(node: Any) -> NodeCounts:
    """How many nodes of each JSON type ``node`` holds (itself included), and its depth."""
    counts = {"object": 0, "array": 0, "string": 0, "number": 0, "boolean": 0, "null": 0}
    deepest = 0
    stack: list[tuple[Any, int]] = [(node, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            counts["object"] += 1
            children: Iterable[Any] = value.values()
        elif isinstance(value, list):
            counts["array"] += 1
            children = value
        else:
            counts[json_type(value)] += 1
            continue
        deepest = max(deepest, depth + 1)
        for child in children:
            if isinstance(child, dict | list):
                stack.append((child, depth + 1))
            else:
                counts[json_type(child)] += 1
    return NodeCounts(counts, deepest)


@dataclass(frozen=True)
class Hit:
    doc_id: str
    pointer: str
    snippet: str


def _snippet(text: str, start: int, length: int) -> str:
    left = max(start - _SNIPPET_CONTEXT, 0)
    right = min(start + length + _SNIPPET_CONTEXT, len(text))
    return ("…" if left else "") + text[left:right] + ("…" if right < len(text) else "")


def _prefilter(query: str) -> bytes | None:
    """The lower-case bytes to look for in a document's JSON, when a match must show there verbatim."""
    if not query.isascii() or any(ch in query for ch in '"\\') or any(ord(ch) < 0x20 for ch in query):
        return None
    return query.lower().encode()


def _leaves(node: Any, pointer: str) -> Iterator[tuple[str, str]]:
    stack: list[tuple[Any, str]] = [(node, pointer)]
    while stack:
        value, here = stack.pop()
        if isinstance(value, str):
            yield here, value
        elif isinstance(value, dict):
            stack.extend((child, child_pointer(here, key)) for key, child in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((value[i], child_pointer(here, i)) for i in range(len(value) - 1, -1, -1))


def search(documents: Iterable[tuple[str, Any, str]], query: str, *, skip: int = 0,
           limit: int = 20) -> tuple[list[Hit], bool]:
    """String leaves containing ``query`` (case-insensitive), document by document in the given order,
    in document order within each; ``documents`` yields (doc_id, node, the node's pointer).

    Returns at most ``limit`` hits after the first ``skip`` and whether more follow.
    """
    needle = query.casefold()
    raw = _prefilter(query)
    hits: list[Hit] = []
    seen = 0
    for doc_id, node, pointer in documents:
        if raw is not None:
            try:
                if raw not in orjson.dumps(node).lower():
                    continue
            except TypeError:  # integers beyond 64 bits: no shortcut
                pass
        for at, text in _leaves(node, pointer):
            folded = text.casefold()
            start = folded.find(needle)
            if start < 0:
                continue
            seen += 1
            if seen <= skip:
                continue
            if len(hits) >= limit:
                return hits, True
            same_length = len(folded) == len(text)
            hits.append(Hit(doc_id, at or "/", _snippet(text, start if same_length else 0, len(query))))
    return hits, False
