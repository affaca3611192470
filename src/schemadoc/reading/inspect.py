"""Measuring documents: node counts and depth (searching them is the search index's, :mod:`schemadoc.search`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from schemadoc.pointer import json_type

__all__ = ["NodeCounts", "count_nodes"]


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
