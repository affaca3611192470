"""The verdict on a changed document from what the change reaches (docs/architecture.md, "Incremental validation").

A write turns a valid document ``before`` into ``after`` by a patch applied on a structurally
shared copy: every subtree the patch did not touch is the *same object* in both, and stored
documents are never mutated. So ``after`` is valid if and only if what differs is valid, and
"what differs" is found by identity, walking both documents from the root (:mod:`.walk`) with
the schemas that apply at each location (:mod:`.locations`): a node whose schemas are all local
is checked by its own keywords and its changed children; elsewhere (``oneOf``, ``anyOf``,
``not``, conditionals, ``unevaluated*``, triggered ``dependentSchemas``, moved ``prefixItems``)
the smallest enclosing subtree is validated whole; a schema using ``$dynamicRef`` always is.

The same walk collects a rejected change's errors: since ``before`` was valid, every error of
``after`` lies in what the walk checks, placed as whole-document validation places it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from schemadoc.schema import LoadedSchema
from schemadoc.validation.locations import Errors, Locations, PlacedError, Unsupported
from schemadoc.validation.walk import Hint, check, guided

__all__ = ["ChangeChecker", "PlacedError"]


class ChangeChecker:
    """Decides whether a valid document stays valid after a change, looking only where it changed.

    ``before`` must be valid and ``after`` share every unchanged subtree with it (as
    :func:`schemadoc.ops.apply.apply_patch` produces). Safe to share between threads.
    """

    def __init__(self, schema: LoadedSchema) -> None:
        self.locations = Locations(schema)
        documents = [contents for _, contents in schema.resources.all_documents()]
        self._dynamic = _anywhere(documents, lambda each: "$dynamicRef" in each or "$recursiveRef" in each)
        # the runtime validator places an error's keyword from the root of its resource (the
        # innermost $id), the walk from the root of its document: alike without embedded $ids
        below_roots = [list(each.values()) for each in documents if isinstance(each, dict)]
        self._embedded = _anywhere(below_roots, lambda each: isinstance(each.get("$id"), str))

    def is_valid_change(self, before: Any, after: Any, patch: Sequence[Any] | None = None) -> bool:
        """``is_valid(after)`` of the whole-document validator. ``patch``, the strict RFC 6902 patch that made
        ``after``, is optional: it may say where the differences are, so containers need not be scanned for them."""
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
                      limit: int, unexpected: bool = True) -> list[PlacedError] | None:
        """Every error whole-document validation finds in ``after`` (in another order), found where it changed.

        None when that cannot be told exactly here, so the whole document must be validated: a false
        schema, a schema reached twice at one place, embedded ``$id``s, ``$dynamicRef``, or more than
        ``limit`` errors. An error carrying its alternatives' errors (``oneOf``/``anyOf``) is placed with
        theirs (:class:`~schemadoc.validation.locations.PlacedError`).
        """
        if after is before or self._dynamic or self._embedded:
            return None

        def errors(hint: Hint | None) -> list[PlacedError]:
            out = Errors(limit, unexpected=unexpected)
            check(root, after, before, hint, (), out)
            return out

        try:
            root = self.locations.root()
            return guided(patch, errors)
        except Unsupported:
            return None


def _anywhere(value: Any, found: Callable[[dict[str, Any]], bool]) -> bool:
    """Whether ``found`` holds for an object anywhere in the JSON ``value``."""
    stack = [value]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            if found(value):
                return True
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return False
