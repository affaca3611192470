"""Draft 2020-12 keyword tables and JSON Pointer formatting shared by the schema modules.

The tables say where subschemas live inside a schema object, and whether they apply to the
same instance ("in place": ``allOf``, ``not``, ``$ref``, …) or to a child of it
(``properties``, ``items``, …). Everything else (``enum``, ``default``, ``examples``, …) is
data and is never walked.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

__all__ = [
    "ANNOTATIONS",
    "IN_PLACE_LIST",
    "IN_PLACE_MAP",
    "IN_PLACE_SINGLE",
    "SUBSCHEMA_LIST",
    "SUBSCHEMA_MAP",
    "SUBSCHEMA_SINGLE",
    "format_pointer",
    "fragment_pointer",
    "iter_subschemas",
    "type_allows",
]

# Subschemas that apply to the same instance.
IN_PLACE_LIST = ("allOf", "anyOf", "oneOf")
IN_PLACE_SINGLE = ("not", "if", "then", "else")
IN_PLACE_MAP = ("dependentSchemas",)

# Every keyword whose value is one subschema, a list of subschemas, or a map of subschemas.
SUBSCHEMA_SINGLE = (
    *IN_PLACE_SINGLE,
    "items",
    "additionalProperties",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
)
SUBSCHEMA_LIST = (*IN_PLACE_LIST, "prefixItems")
SUBSCHEMA_MAP = (*IN_PLACE_MAP, "properties", "patternProperties", "$defs", "definitions")

# Keywords that only describe; a `$ref` sibling may override them without changing validation.
ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$comment",
    }
)

_IN_PLACE_SINGLE_SET = frozenset(IN_PLACE_SINGLE)
_IN_PLACE_LIST_SET = frozenset(IN_PLACE_LIST)
_IN_PLACE_MAP_SET = frozenset(IN_PLACE_MAP)


def iter_subschemas(schema: dict[str, Any]) -> Iterator[tuple[tuple[str, ...], Any, bool]]:
    """Every direct subschema of ``schema``: ``(pointer tokens relative to schema, subschema, in_place)``.

    ``$ref`` targets are not included (they need resolution); ``$defs`` entries are included
    with ``in_place`` False (they are only containers).
    """
    for key in SUBSCHEMA_SINGLE:
        if key in schema:
            yield (key,), schema[key], key in _IN_PLACE_SINGLE_SET
    for key in SUBSCHEMA_LIST:
        value = schema.get(key)
        if isinstance(value, list):
            in_place = key in _IN_PLACE_LIST_SET
            for index, sub in enumerate(value):
                yield (key, str(index)), sub, in_place
    for key in SUBSCHEMA_MAP:
        value = schema.get(key)
        if isinstance(value, dict):
            in_place = key in _IN_PLACE_MAP_SET
            for name, sub in value.items():
                yield (key, name), sub, in_place


def type_allows(schema: dict[str, Any], json_type: str) -> bool:
    """Whether the schema's own ``type`` keyword (if any) admits ``json_type``."""
    declared = schema.get("type")
    if declared is None:
        return True
    if isinstance(declared, str):
        return declared == json_type or (json_type == "number" and declared == "integer")
    if isinstance(declared, list):
        return json_type in declared or (json_type == "number" and "integer" in declared)
    return True


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def format_pointer(tokens: Sequence[str]) -> str:
    """RFC 6901 pointer for decoded tokens; the root is written ``/`` as everywhere in schemadoc."""
    if not tokens:
        return "/"
    return "".join("/" + _escape(token) for token in tokens)


def fragment_pointer(tokens: Sequence[str]) -> str:
    """Strict RFC 6901 pointer (root = ``""``), for URI fragments and pointers into a schema file."""
    return "".join("/" + _escape(token) for token in tokens)
