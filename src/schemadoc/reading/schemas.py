"""Node schemas looked up many times during one walk of a document.

Array indices are folded to ``0`` when no schema in play uses ``prefixItems`` (then every item
of an array has the same schema), so a walk over a big document asks the schema for each distinct
shape of path once, not once per node.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import orjson

from schemadoc.errors import SchemaDocError

__all__ = ["NodeSchemas", "SchemaSource", "node_schema", "parts", "properties"]


class SchemaSource(Protocol):
    def shared_node_schema(self, tokens: Sequence[str]) -> dict[str, Any]: ...


def node_schema(source: SchemaSource, tokens: Sequence[str]) -> dict[str, Any] | None:
    """The dereferenced schema at ``tokens`` (read-only), or None where the schema allows nothing."""
    try:
        return source.shared_node_schema(tokens)
    except SchemaDocError:
        return None


def parts(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """``schema`` and the object schemas of its ``allOf``: where an object's words may be."""
    return [schema, *[part for part in schema.get("allOf", []) if isinstance(part, dict)]]


def properties(schema: Any) -> dict[str, Any]:
    """The ``properties`` of an object schema, ``allOf`` included, in the schema's order (the first wins)."""
    found: dict[str, Any] = {}
    for part in parts(schema) if isinstance(schema, dict) else []:
        if isinstance(part.get("properties"), dict):
            for name, sub in part["properties"].items():
                found.setdefault(name, sub)
    return found


class NodeSchemas:
    def __init__(self, source: SchemaSource) -> None:
        self._source = source
        # the dereferenced root inlines every $ref but recursive ones, which point back into it
        self._fold = b"prefixItems" not in orjson.dumps(source.shared_node_schema(()))
        self._cache: dict[tuple[str, ...], dict[str, Any] | None] = {}

    def get(self, tokens: Sequence[str | int]) -> dict[str, Any] | None:
        """The dereferenced schema at ``tokens`` (read-only), or None where the schema allows nothing."""
        key = tuple("0" if self._fold and isinstance(t, int) else str(t) for t in tokens)
        if key not in self._cache:
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[key] = node_schema(self._source, key)
        return self._cache[key]

    def title(self, tokens: Sequence[str | int]) -> str | None:
        schema = self.get(tokens)
        title = schema.get("title") if isinstance(schema, dict) else None
        return title if isinstance(title, str) else None
