"""The verdict on a changed document from what the change reaches.

A write turns a valid document ``before`` into ``after`` by a patch applied on a structurally
shared copy: every subtree the patch did not touch is the *same object* in both, and stored
documents are never mutated. So ``after`` is valid if and only if what differs is valid, and
"what differs" is found by identity, walking both documents from the root:

* at each node the walk knows every schema that applies there (the root schema, then what each
  level's ``properties``/``patternProperties``/``additionalProperties``/``prefixItems``/``items``
  say about the child, through ``$ref`` and ``allOf``);
* a node whose schemas are all *local* (each keyword looks at the node alone or at one child at
  a time) is checked by its whole-container keywords (``required``, ``min/maxProperties``,
  ``dependentRequired``, ``propertyNames``, ``min/maxItems``, ``uniqueItems``, ``contains``,
  ``min/maxContains``, ``const``/``enum``, ``type``: compiled once per location without their
  child keywords), then only the children that are not the same object as before are visited;
  a new member or item is validated whole against the schemas of its location;
* an array whose items moved (an insert or a removal) keeps the verdict on its shifted items
  only when no ``prefixItems`` applies (every position has the same schema); otherwise, and at
  every node where a keyword's verdict can change non-locally (``oneOf``, ``anyOf``, ``not``,
  ``if``/``then``/``else``, ``unevaluated*``, ``dependentSchemas`` whose triggers changed, and
  any keyword not known to be local), the whole node is validated against its schemas: the
  smallest enclosing subtree that makes the verdict sound, up to the whole document;
* a schema that uses ``$dynamicRef`` anywhere is always validated whole (its dynamic scope
  depends on the path from the root).

Per-location validators are ``{"$ref": "<document>#<pointer>"}`` compiled against the registry of
every schema document, so each subschema sees its own base URI, anchors and ``$defs``. Nothing
here touches the disk.

The same walk also collects a rejected change's errors (:meth:`ChangeChecker.change_errors`):
since ``before`` was valid, every error of ``after`` lies in what the walk checks, so the errors
of those checks, placed at their node's path (and a shallow keyword at its schema's location),
are the whole document's errors. Where that cannot be told exactly (an error carrying its
alternatives', a false schema, a schema reached twice at one place, embedded ``$id`` s,
``$dynamicRef``, too many errors), the whole document is validated instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from schemadoc.schema import LoadedSchema
from schemadoc.validation.locations import Errors, Locations, PlacedError, Unsupported
from schemadoc.validation.walk import Hint, check, guided

__all__ = ["ChangeChecker", "PlacedError"]


class ChangeChecker:
    """Decides whether a valid document stays valid after a change, looking only where it changed.

    ``is_valid_change(before, after)`` equals ``is_valid(after)`` of the whole-document validator
    whenever ``before`` is valid and ``after`` shares every unchanged subtree with it (as
    :func:`schemadoc.ops.apply.apply_patch` produces). Compiled validators and the schemas of
    each location are kept for the life of the checker; it is safe to share between threads.
    """

    def __init__(self, schema: LoadedSchema) -> None:
        self.locations = Locations(schema)
        documents = schema.resources.all_documents()
        self._dynamic = any(_uses_dynamic_refs(contents) for _, contents in documents)
        # the runtime validator places an error's keyword from the root of its resource (the
        # innermost $id), the walk from the root of its document: alike without embedded $ids
        self._embedded = any(_embeds_resources(contents) for _, contents in documents)

    def is_valid_change(self, before: Any, after: Any, patch: Sequence[Any] | None = None) -> bool:
        """Whether ``after`` is valid, given that ``before`` is (see the class docstring).

        ``patch``, the strict RFC 6902 patch that turned ``before`` into ``after``, is optional:
        when it only replaces values, or is one add, remove or copy, it says where the
        differences are, so arrays and objects on its paths are not scanned for them.
        """
        if after is before:
            return True
        if self._dynamic:
            return bool(self.locations.whole.is_valid(after))
        try:
            root = self.locations.root()
            return guided(patch, lambda hint: check(root, after, before, hint))
        except Unsupported:
            return bool(self.locations.whole.is_valid(after))

    def change_errors(self, before: Any, after: Any, patch: Sequence[Any] | None = None, *,
                      limit: int) -> list[PlacedError] | None:
        """Every error whole-document validation finds in ``after``, found where it changed.

        ``before`` must be valid (see :meth:`is_valid_change`). The errors are those of the
        places the walk checks: the changed nodes' own keywords and the subtrees it validates
        whole, each error placed in the document and in the schema as whole validation places
        it (the order may differ). None when that cannot be told exactly here, so the whole
        document must be validated: an error
        carrying its alternatives' errors (``oneOf``/``anyOf``), a false schema, a schema
        reached twice at one place, embedded ``$id``s, ``$dynamicRef``, or more than ``limit`` errors.
        """
        if after is before or self._dynamic or self._embedded:
            return None

        def errors(hint: Hint | None) -> list[PlacedError]:
            out = Errors(limit)
            check(root, after, before, hint, (), out)
            return out

        try:
            root = self.locations.root()
            return guided(patch, errors)
        except Unsupported:
            return None


def _uses_dynamic_refs(schema: Any) -> bool:
    stack = [schema]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            if "$dynamicRef" in value or "$recursiveRef" in value:
                return True
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return False


def _embeds_resources(schema: Any) -> bool:
    """Whether a schema document has a subschema with its own ``$id`` (or anything that looks like one)."""
    stack = [value for value in schema.values()] if isinstance(schema, dict) else []
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            if isinstance(value.get("$id"), str):
                return True
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return False
