"""Draft 2020-12 keyword tables shared by the schema modules.

The tables say where subschemas live inside a schema object, and whether they apply to the
same instance ("in place": ``allOf``, ``not``, ``$ref``, …) or to a child of it
(``properties``, ``items``, …). Everything else (``enum``, ``default``, ``examples``, …) is
data and is never walked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from schemadoc import pointer

__all__ = [
    "ANNOTATIONS",
    "IN_PLACE_LIST",
    "IN_PLACE_MAP",
    "IN_PLACE_SINGLE",
    "SUBSCHEMA_LIST",
    "SUBSCHEMA_MAP",
    "SUBSCHEMA_SINGLE",
    "format_pointer",
    "iter_subschemas",
    "member_subschemas",
    "type_allows",
]

# Subschemas that apply to the same instance.
IN_PLACE_LIST = ("allOf", "anyOf", "oneOf")
IN_PLACE_SINGLE = ("not", "if", "then", "else")
IN_PLACE_MAP = ("dependentSchemas",)

# Every keyword whose value is one subschema, a list of subschemas, or a map of subschemas.
SUBSCHEMA_SINGLE = (*IN_PLACE_SINGLE, "items", "additionalProperties", "contains", "propertyNames", "unevaluatedItems",
                    "unevaluatedProperties", "contentSchema")
SUBSCHEMA_LIST = (*IN_PLACE_LIST, "prefixItems")
SUBSCHEMA_MAP = (*IN_PLACE_MAP, "properties", "patternProperties", "$defs", "definitions")

# Keywords that only describe; a `$ref` sibling may override them without changing validation.
ANNOTATIONS = frozenset({"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly",
                         "$comment"})
_IN_PLACE = frozenset({*IN_PLACE_SINGLE, *IN_PLACE_LIST, *IN_PLACE_MAP})


def iter_subschemas(schema: dict[str, Any]) -> Iterator[tuple[tuple[str, ...], Any, bool]]:
    """Every direct subschema of ``schema``: ``(pointer tokens relative to schema, subschema, in_place)``.

    ``$ref`` targets are not included (they need resolution); ``$defs`` entries are included
    with ``in_place`` False (they are only containers).
    """
    for key in SUBSCHEMA_SINGLE:
        if key in schema:
            yield (key,), schema[key], key in _IN_PLACE
    for key in SUBSCHEMA_LIST:
        value = schema.get(key)
        if isinstance(value, list):
            for index, sub in enumerate(value):
                yield (key, str(index)), sub, key in _IN_PLACE
    for key in SUBSCHEMA_MAP:
        value = schema.get(key)
        if isinstance(value, dict):
            for name, sub in value.items():
                yield (key, name), sub, key in _IN_PLACE


def member_subschemas(schema: dict[str, Any], name: str, matches: Callable[[str, str], Any], *,
                      additional: bool = True) -> list[Any]:
    """The subschemas ``schema`` applies to its member ``name``: from ``properties``, every ``patternProperties``
    entry that ``matches(pattern, name)``, and when neither names it (and ``additional``) ``additionalProperties``."""
    properties = schema.get("properties")
    found = [properties[name]] if isinstance(properties, dict) and name in properties else []
    patterns = schema.get("patternProperties")
    if isinstance(patterns, dict):
        found += [subschema for pattern, subschema in patterns.items() if matches(pattern, name)]
    if additional and not found and "additionalProperties" in schema:
        found.append(schema["additionalProperties"])
    return found


def type_allows(schema: dict[str, Any], json_type: str) -> bool:
    """Whether the schema's own ``type`` keyword (if any) admits ``json_type``."""
    declared = schema.get("type")
    names = [declared] if isinstance(declared, str) else declared
    if not isinstance(names, list):
        return True
    return json_type in names or (json_type == "number" and "integer" in names)


def format_pointer(tokens: Sequence[str]) -> str:
    """RFC 6901 pointer for decoded tokens; the root is written ``/`` as everywhere in schemadoc."""
    return pointer.format_pointer(tokens) or "/"
