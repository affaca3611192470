"""Where a valid document is not finished yet, by the schema's own words, breadth first.

Three kinds of places, in a stable order (breadth first; within an object, the schema's order of
``properties``; arrays in item order):

- ``absent``: an optional property the schema defines that the object does not have;
- ``empty-array``: an empty array whose items the schema describes;
- ``violation`` (listed first, by the service): a place the served schema rejects, in a document stored before
  the schema changed (docs/schema-changes.md), with its code, message and a fix where one can be made;
- ``placeholder`` (listed after violations, by the service): a value the server made up in a suggested or example
  call, sent as given, that nobody has written over yet;
- ``default-value``: a scalar equal to its schema ``default``, only when asked (``include_defaults``): a value
  the document holds may have been chosen on purpose, so it is never unfinished merely for equalling the
  default, no example call proposes to overwrite it, and it never holds back ``complete``.

Each comes with the node schema and, when one can be built and checks against it, an example
call (``document_create_node`` or ``document_update_node``) that would fill it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from schemadoc.reading.examples import example_for, is_placeholder, made_up_leaves
from schemadoc.reading.schemas import NodeSchemas, properties
from schemadoc.reading.views import child_pointer, entries_of

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
    code: str | None = None
    """For ``violation``: the violation's catalog code (the message says what is wrong)."""
    message: str | None = None
    fix: list[dict[str, Any]] | None = None
    """For ``violation``: an RFC 6902 patch that repairs it, where one follows mechanically."""
    marks: tuple[str, ...] = ()
    """The pointers (relative to the example) of the made-up values in it: the example call's ``placeholders``."""


def _describes_items(schema: Any) -> bool:
    return isinstance(schema, dict) and ("items" in schema or "prefixItems" in schema) \
        and schema.get("items") is not False and schema.get("maxItems") != 0


def _walk(node: Any, tokens: list[str | int], pointer: str,
          schemas: NodeSchemas, include_defaults: bool) -> Iterator[tuple[str, str, list[str | int]]]:
    """(reason, pointer, tokens) of each unfinished place, breadth first by depth."""
    if node == [] and _describes_items(schemas.get(tokens)):
        yield "empty-array", pointer, tokens
    queue: deque[tuple[Any, list[str | int], str]] = deque([(node, tokens, pointer)])
    while queue:
        value, here_tokens, here = queue.popleft()
        if isinstance(value, dict):
            for name, sub in properties(schemas.get(here_tokens)).items():
                at, at_tokens = child_pointer(here, name), [*here_tokens, name]
                member = value.get(name)
                if name not in value:
                    yield "absent", at, at_tokens
                elif member == [] and _describes_items(schemas.get(at_tokens)):
                    yield "empty-array", at, at_tokens
                elif include_defaults and not isinstance(member, dict | list) and isinstance(sub, dict) \
                        and "default" in sub and member == sub["default"] and type(member) is type(sub["default"]):
                    yield "default-value", at, at_tokens
        for key, child in entries_of(value) if isinstance(value, dict | list) else ():
            at_tokens = [*here_tokens, key]
            if isinstance(value, list) and child == [] and _describes_items(schemas.get(at_tokens)):
                yield "empty-array", child_pointer(here, key), at_tokens
            if isinstance(child, dict | list):
                queue.append((child, at_tokens, child_pointer(here, key)))


def next_incomplete(node: Any, tokens: list[str | int], pointer: str, schemas: NodeSchemas, check: Checker, *,
                    limit: int = 10, include_defaults: bool = False) -> tuple[list[Incomplete], bool]:
    """The first ``limit`` unfinished places below ``node`` and whether there are more."""
    found: list[Incomplete] = []
    for reason, at, at_tokens in _walk(node, tokens, pointer, schemas, include_defaults):
        if len(found) >= limit:
            return found, True
        if reason == "default-value":  # a value the document holds: it is the agent's to change, no example
            found.append(Incomplete(at or "/", reason, schemas.get(at_tokens) or {}, "document_update_node", at or "/"))
            continue
        items = reason == "empty-array"
        example_tokens = [*at_tokens, 0] if items else at_tokens
        schema = schemas.get(example_tokens) or {}
        has_example, example = example_for(schema, nonempty=True)  # an array with an item: not empty-array next
        if has_example and not check(schema, example):
            has_example, example = example_for(schema)
            if has_example and not check(schema, example):
                has_example, example = False, None
        marks = tuple(made_up_leaves(example, [str(t) for t in example_tokens], schemas.get)) if has_example else ()
        found.append(Incomplete(at or "/", reason, schema, "document_create_node", f"{at}/-" if items else at or "/",
                                example, has_example, has_example and is_placeholder(schema, example), marks=marks))
    return found, False
