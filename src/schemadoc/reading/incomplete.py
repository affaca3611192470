"""Where a valid document is not finished yet, by the schema's own words, breadth first.

Three kinds of places, in a stable order (breadth first; within an object, the schema's order of
``properties``; arrays in item order):

- ``absent``: an optional property the schema defines that the object does not have;
- ``empty-array``: an empty array whose items the schema describes;
- ``default-value``: a scalar equal to its schema ``default``, only when asked (``include_defaults``): a value
  the document holds may have been chosen on purpose, so it is never unfinished merely for equalling the
  default, and no example call proposes to overwrite it.

Each comes with the node schema and, when one can be built and checks against it, an example
call (``document_create_node`` or ``document_update_node``) that would fill it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from schemadoc.reading.examples import example_for, is_placeholder
from schemadoc.reading.schemas import NodeSchemas
from schemadoc.reading.views import child_pointer

__all__ = ["Incomplete", "next_incomplete"]

Checker = Callable[[dict[str, Any], Any], bool]
"""Whether a value satisfies a (node) schema."""


@dataclass(frozen=True)
class Incomplete:
    pointer: str
    """The node to fill: the absent member, the empty array, or the defaulted value."""
    reason: str
    """``absent``, ``empty-array`` or ``default-value``."""
    node_schema: dict[str, Any]
    """The schema of the value to write (for an empty array: of one item)."""
    tool: str
    """``document_create_node`` or ``document_update_node``."""
    node_path: str
    """Where that tool writes (for an empty array: ``<pointer>/-``, append)."""
    example: Any = None
    has_example: bool = False
    placeholder: bool = False
    """The example holds made-up values (see :func:`~schemadoc.reading.examples.is_placeholder`)."""


def _properties(schema: dict[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    parts = [schema, *[p for p in schema.get("allOf", []) if isinstance(p, dict)]]
    for part in parts:
        found = part.get("properties")
        if isinstance(found, dict):
            for name, sub in found.items():
                properties.setdefault(name, sub)
    return properties


def _is_scalar(value: Any) -> bool:
    return not isinstance(value, dict | list)


def _describes_items(schema: Any) -> bool:
    return isinstance(schema, dict) and ("items" in schema or "prefixItems" in schema) \
        and schema.get("items") is not False and schema.get("maxItems") != 0


def _walk(node: Any, tokens: list[str | int], pointer: str,
          schemas: NodeSchemas, include_defaults: bool) -> Iterator[tuple[str, str, list[str | int], Any]]:
    """(reason, pointer, tokens, current value) of each unfinished place, breadth first by depth."""
    if isinstance(node, list) and not node and _describes_items(schemas.get(tokens)):
        yield "empty-array", pointer, tokens, node
    queue: deque[tuple[Any, list[str | int], str]] = deque([(node, tokens, pointer)])
    while queue:
        value, here_tokens, here = queue.popleft()
        if isinstance(value, list):
            for index, item in enumerate(value):
                at_tokens = [*here_tokens, index]
                if isinstance(item, list) and not item and _describes_items(schemas.get(at_tokens)):
                    yield "empty-array", child_pointer(here, index), at_tokens, item
                if not _is_scalar(item):
                    queue.append((item, at_tokens, child_pointer(here, index)))
            continue
        if not isinstance(value, dict):
            continue
        schema = schemas.get(here_tokens)
        properties = _properties(schema) if isinstance(schema, dict) else {}
        for name, sub in properties.items():
            at, at_tokens = child_pointer(here, name), [*here_tokens, name]
            if name not in value:
                yield "absent", at, at_tokens, None
                continue
            member = value[name]
            if isinstance(member, list) and not member:
                if _describes_items(schemas.get(at_tokens)):
                    yield "empty-array", at, at_tokens, member
            elif include_defaults and _is_scalar(member) and isinstance(sub, dict) and "default" in sub \
                    and member == sub["default"] and type(member) is type(sub["default"]):
                yield "default-value", at, at_tokens, member
        for name, member in value.items():
            if not _is_scalar(member):
                queue.append((member, [*here_tokens, name], child_pointer(here, name)))


def next_incomplete(node: Any, tokens: list[str | int], pointer: str, schemas: NodeSchemas, check: Checker, *,
                    limit: int = 10, include_defaults: bool = False) -> tuple[list[Incomplete], bool]:
    """The first ``limit`` unfinished places below ``node`` and whether there are more."""
    found: list[Incomplete] = []
    for reason, at, at_tokens, _current in _walk(node, tokens, pointer, schemas, include_defaults):
        if len(found) >= limit:
            return found, True
        if reason == "empty-array":
            item_tokens = [*at_tokens, 0]
            schema = schemas.get(item_tokens) or {}
            tool, path = "document_create_node", f"{at}/-"
        elif reason == "absent":
            schema = schemas.get(at_tokens) or {}
            tool, path = "document_create_node", at
        else:  # a value the document holds: it is the agent's to change, no example overwrites it
            schema = schemas.get(at_tokens) or {}
            found.append(Incomplete(at or "/", reason, schema, "document_update_node", at or "/"))
            continue
        has_example, example = example_for(schema)
        if has_example and not check(schema, example):
            has_example, example = False, None
        found.append(Incomplete(at or "/", reason, schema, tool, path or "/", example, has_example,
                                has_example and is_placeholder(schema, example)))
    return found, False
