"""The values the server made up that a document still holds (docs/agents.md, "Made-up values").

A suggested or example call that has to make a value up marks it in ``arguments.placeholders``; a write sent with
that mark records, in its journal entry, ``info.placeholders``: the pointers of the made-up values the new version
holds (only those still equal to what the server makes up there). Each later write carries the set on through its
patch (:func:`~schemadoc.ops.carry.carry`: moved places follow, places written over or removed leave), so the last
journal entry always says what the current version holds: it survives a restart and every process sharing a store
reads the same. This module keeps each held document's set in memory, by version.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from schemadoc.errors import SchemaDocError
from schemadoc.ops.carry import carry
from schemadoc.ops.journal import JournalEntry
from schemadoc.pointer import parse, resolve
from schemadoc.reading.examples import made_up_leaves
from schemadoc.service.models import DocState
from schemadoc.storage.base import DocumentStore

__all__ = ["PLACEHOLDERS_KEPT", "MadeUpValues"]

PLACEHOLDERS_KEPT = 500
"""Most made-up values a document's journal remembers (``info.placeholders``); beyond, the first in document
order are kept."""

SchemaAt = Callable[[Sequence[str | int]], "dict[str, Any] | None"]


class MadeUpValues:
    """Per document held: (version, the pointers of its made-up values then). Thread-safe enough: each entry is
    replaced whole, and a stale one is read again from the journal."""

    def __init__(self, store: DocumentStore, schema_at: SchemaAt) -> None:
        self._store = store
        self._schema_at = schema_at
        self._known: dict[str, tuple[int, tuple[str, ...]]] = {}

    def forget(self, doc_id: str) -> None:
        self._known.pop(doc_id, None)

    def heard(self, doc_id: str, entry: JournalEntry) -> None:
        """Remember what a document's latest journal entry records."""
        self._known[doc_id] = (entry.version, _listed(entry))

    def committed(self, doc_id: str, version: int, made_up: tuple[str, ...]) -> None:
        self._known[doc_id] = (version, made_up)

    def of(self, doc_id: str, state: DocState) -> tuple[str, ...]:
        """The pointers of the values in ``state`` that the server made up and nobody has written over since (what
        its last journal entry records: one read of it when not held)."""
        known = self._known.get(doc_id)
        if known is not None and known[0] == state.meta.version:
            return known[1]
        version = state.meta.version
        entries = self._store.read_journal(doc_id, since_version=version - 1, until_version=version)
        found = _listed(entries[-1]) if entries and entries[-1].version == version else ()
        self._known[doc_id] = (version, found)
        return found

    def after(self, state: DocState | None, content: Any, patch: list[dict[str, Any]],
              marks: Sequence[str]) -> tuple[str, ...]:
        """The made-up values of a new version (``content``, made by ``patch`` from ``state``): those of the one
        before carried through ``patch``, less those it wrote over or removed, and the ``marks`` (pointers the caller
        says hold values a suggested call made up) whose scalars are still the ones the server makes up there."""
        before = () if state is None else self.of(state.meta.doc_id, state)
        if not before and not marks:
            return ()
        kept: set[str] = set()
        if before and state is not None:
            try:
                moved = carry(state.content, patch, before, forget_written=True)
            except (SchemaDocError, KeyError, IndexError, TypeError, ValueError):
                moved = {}  # a patch the places cannot follow: they are forgotten rather than misplaced
            kept = {pointer for pointer in moved.values() if pointer is not None}
        for mark in marks:
            try:
                value, concrete = resolve(content, parse(mark), allow_negative=False)
            except SchemaDocError:
                continue
            kept.update(mark + leaf for leaf in made_up_leaves(value, [str(t) for t in concrete], self._schema_at))
        return tuple(sorted(kept, key=_document_order)[:PLACEHOLDERS_KEPT])

    def marks_in(self, ops: list[dict[str, Any]], prefix: str = "") -> list[str]:
        """The pointers (relative to ``prefix``) of the made-up scalars the ``add`` operations of ``ops`` write:
        what a suggested call marks as ``placeholders``."""
        found: list[str] = []
        for op in ops:
            path = op.get("path")
            if op.get("op") != "add" or "value" not in op or not isinstance(path, str):
                continue
            if prefix and path != prefix and not path.startswith(prefix + "/"):
                continue
            try:
                tokens = [str(token) for token in parse(path)]
            except SchemaDocError:
                continue
            found.extend(path[len(prefix):] + leaf for leaf in made_up_leaves(op["value"], tokens, self._schema_at))
        return found


def _listed(entry: JournalEntry) -> tuple[str, ...]:
    found = entry.info.get("placeholders")
    return tuple(p for p in found if isinstance(p, str)) if isinstance(found, list) else ()


def _document_order(pointer: str) -> list[tuple[int, int, str]]:
    return [(0, int(token), "") if token.isdigit() else (1, 0, token) for token in parse(pointer)]
