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

__all__ = ["NodeSchemas", "SchemaSource"]


class SchemaSource(Protocol):
    def shared_node_schema(self, tokens: Sequence[str]) -> dict[str, Any]: ...


class NodeSchemas:
    def __init__(self, source: SchemaSource) -> None:
        self._source = source
        # the dereferenced root inlines every $ref but recursive ones, which point back into it
        self._fold = b"prefixItems" not in orjson.dumps(source.shared_node_schema(()))
        self._cache: dict[tuple[str, ...], dict[str, Any] | None] = {}

    def key(self, tokens: Sequence[str | int]) -> tuple[str, ...]:
        if self._fold:
            return tuple("0" if isinstance(t, int) else t for t in tokens)
        return tuple(str(t) for t in tokens)

    def get(self, tokens: Sequence[str | int]) -> dict[str, Any] | None:
        """The dereferenced schema at ``tokens`` (read-only), or None where the schema allows nothing."""
        key = self.key(tokens)
        if key in self._cache:
            return self._cache[key]
        try:
            found: dict[str, Any] | None = self._source.shared_node_schema(key)
        except SchemaDocError:
            found = None
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[key] = found
        return found

    def title(self, tokens: Sequence[str | int]) -> str | None:
        schema = self.get(tokens)
        title = schema.get("title") if isinstance(schema, dict) else None
        return title if isinstance(title, str) else None
