"""History: journal pages, past versions rebuilt from checkpoints, diffs and the change feed."""

from __future__ import annotations

import logging
from typing import Any

import orjson

from schemadoc.errors import SchemaDocError
from schemadoc.ops.history import CHECKPOINT_EVERY, Checkpoints, diff, replay_from
from schemadoc.ops.journal import JournalEntry
from schemadoc.pointer import format_pointer, parse_node_path, resolve
from schemadoc.reading import json_size
from schemadoc.service.checks import LARGEST_INTEGER, check_int, path_arg, shown_int
from schemadoc.service.core import PERSIST_CHECKPOINT_EVERY, ServiceCore
from schemadoc.service.models import Change, ChangesPage, DiffActors, HistoryPage, NodeRead
from schemadoc.service.payloads import parse_stored
from schemadoc.storage.base import check_doc_id

__all__ = ["ACTOR_SCAN_VERSIONS", "DIFF_ACTORS_LISTED", "DIFF_ACTOR_BYTES", "DIFF_ACTOR_VERSIONS", "History"]

ACTOR_SCAN_VERSIONS = 10_000
"""The most versions one page of a history filtered by actor looks at (its ``next_since_version`` says where the
next page goes on): a filter matching nothing costs one bounded read, however long the journal."""
_SCAN_PAGE = 500
DIFF_ACTORS_LISTED = 20
"""The most actor names a diff lists (more: ``complete`` is false)."""
DIFF_ACTOR_VERSIONS = PERSIST_CHECKPOINT_EVERY
"""The most versions a diff reads the actors of (a diff over a longer span names those of its first ones): as many
journal entries as reading a recent past version replays at most."""
DIFF_ACTOR_BYTES = 1 << 20
"""The most bytes of journal lines a diff reads for its actors (at least one entry: the one reaching it)."""
_ACTOR_LENGTH = 200

log = logging.getLogger("schemadoc.service")

_PATH_COPY_BYTES = 1_024
"""What a replayed patch copies beside its values (the containers on its path), charged per entry."""


class History(ServiceCore):
    """The use cases that read what the journal keeps."""

    def history(self, doc_id: str, since_version: int = 0, limit: int = 100, *,
                include_deleted: bool = False, max_bytes: int | None = None, actor: str | None = None) -> HistoryPage:
        """Journal entries after ``since_version``, oldest first, at most ``limit`` (and, with ``max_bytes``, no
        more than make up ``max_bytes`` of journal lines, at least one).

        A deleted document's history is ``document-not-found`` unless ``include_deleted``
        (change feeds use it to deliver the deletion itself). ``actor``: only the entries that actor made
        (exact name); such a page looks at no more than :data:`ACTOR_SCAN_VERSIONS` versions, and its
        ``next_since_version`` is the last one it looked at.
        """
        doc_id = check_doc_id(doc_id)
        check_int("since_version", since_version, 0, None)
        check_int("limit", limit, 1, 1000)
        state = self._state(doc_id, include_deleted=include_deleted)
        if since_version > state.meta.version:
            raise SchemaDocError(
                "version-not-found",
                f"Document {doc_id} is at version {state.meta.version}; there is no version {since_version}.",
                {"doc_id": doc_id, "version": since_version, "latest_version": state.meta.version})
        if actor is not None:
            return self._history_of(doc_id, state.meta.version, since_version, limit, max_bytes, actor)
        until = since_version + limit
        if max_bytes is None:
            entries = self.store.read_journal(doc_id, since_version=since_version, until_version=until)
        else:
            entries = self.store.read_journal(doc_id, since_version=since_version, until_version=until,
                                              max_bytes=max_bytes)
        return HistoryPage(doc_id, entries, state.meta.version, since_version)

    def _history_of(self, doc_id: str, current: int, since_version: int, limit: int, max_bytes: int | None,
                    actor: str) -> HistoryPage:
        """The entries ``actor`` made after ``since_version``: the journal read a page at a time and filtered
        (entries are stored whole, so the filter reads what it skips), up to ``limit`` matches, ``max_bytes`` of
        their journal lines (at least one), or :data:`ACTOR_SCAN_VERSIONS` versions looked at."""
        if not isinstance(actor, str) or not 1 <= len(actor) <= _ACTOR_LENGTH:
            raise SchemaDocError("invalid-request", f"actor must be a name of 1 to {_ACTOR_LENGTH} characters.",
                                 {"argument": "actor"})
        found: list[JournalEntry] = []
        last, used = since_version, 0
        end = min(current, since_version + ACTOR_SCAN_VERSIONS)
        while last < end and len(found) < limit:
            until = min(end, last + _SCAN_PAGE)
            page = (self.store.read_journal(doc_id, since_version=last, until_version=until) if max_bytes is None
                    else self.store.read_journal(doc_id, since_version=last, until_version=until,
                                                 max_bytes=max(max_bytes - used, 1)))
            if not page:
                break
            for entry in page:
                if entry.actor == actor:
                    size = len(entry.to_line()) if max_bytes is not None else 0
                    if found and max_bytes is not None and used + size > max_bytes:
                        return HistoryPage(doc_id, found, current, since_version, scanned_to=last)
                    found.append(entry)
                    used += size
                last = entry.version
                if len(found) == limit:
                    break
        return HistoryPage(doc_id, found, current, since_version, scanned_to=last)

    def read_version(self, doc_id: str, version: int) -> Any:
        """The whole document as it was at ``version``.

        Rebuilt from the nearest checkpoint below it (in memory, persisted, or the current
        content); recent versions replay at most ``PERSIST_CHECKPOINT_EVERY - 1`` patches, older ones more
        (persisted checkpoints thin out with age, see ``keep_checkpoints``).
        """
        doc_id = check_doc_id(doc_id)
        state = self._state(doc_id)
        if isinstance(version, bool) or not isinstance(version, int) or version > LARGEST_INTEGER:
            raise SchemaDocError("invalid-request", f"A version must be an integer from 1 to {LARGEST_INTEGER}, got "
                                                    f"{shown_int(version)}.",
                                 {"argument": "version", "value": shown_int(version)})
        latest = state.meta.version
        if not 1 <= version <= latest:
            raise SchemaDocError(
                "version-not-found",
                f"Document {doc_id} has versions 1 to {latest}; there is no version {version}.",
                {"doc_id": doc_id, "version": version, "latest_version": latest})
        if version == latest:
            return state.content
        resident = self._states.entry(doc_id)  # a document not held gets a throwaway set of checkpoints
        if resident is not None and resident.checkpoints is None:
            resident.checkpoints = Checkpoints()
        checkpoints = resident.checkpoints if resident is not None and resident.checkpoints is not None \
            else Checkpoints()
        held = len(checkpoints)
        base_version, base = checkpoints.nearest(version) or (0, None)
        # what new checkpoints hold beside the current content, in bytes of JSON (charged to the document)
        fresh_bytes = 0
        if version - base_version >= CHECKPOINT_EVERY:
            persisted = self.store.read_checkpoint(doc_id, version)
            if persisted is not None and persisted[0] > base_version:
                try:
                    base_version, base = persisted[0], parse_stored(persisted[1])
                    checkpoints.remember(base_version, base)
                    fresh_bytes += len(persisted[1])
                except orjson.JSONDecodeError:  # a cache torn by a crash: replay further instead
                    log.warning("document %s: checkpoint of version %d is unreadable", doc_id, persisted[0])
                    base_version, base = checkpoints.nearest(version) or (0, None)
        if base_version != version:
            entries = self.store.read_journal(doc_id, since_version=base_version, until_version=version)
            base = replay_from(base, entries, checkpoints)
            if len(checkpoints) > held:  # they hold what the replayed patches made (a path copy each)
                fresh_bytes += sum(json_size(entry.patch) + _PATH_COPY_BYTES for entry in entries)
        if len(checkpoints) > held and fresh_bytes:  # charged at the document's bytes in memory per JSON byte
            resident = self._states.entry(doc_id)
            size = resident.state.meta.content_size_bytes if resident is not None else 0
            if resident is not None and resident.checkpoints is checkpoints and size > 0:
                resident.checkpoint_bytes += int(fresh_bytes * max(resident.content_bytes / size, 1.0))
                self._states.settle(doc_id)
        return base

    def read_node_at(self, doc_id: str, node_path: str, at_version: int) -> NodeRead:
        """``read_node`` on a past version; the same path diagnostics apply."""
        content = self.read_version(doc_id, at_version)
        tokens = parse_node_path(path_arg(node_path))
        node, concrete = resolve(content, tokens)
        return NodeRead(check_doc_id(doc_id), format_pointer(concrete), node, at_version)

    def diff(self, doc_id: str, from_version: int, to_version: int) -> list[dict[str, Any]]:
        """An RFC 6902 patch turning version ``from_version`` into ``to_version`` (either direction)."""
        return diff(self.read_version(doc_id, from_version), self.read_version(doc_id, to_version))

    def diff_actors(self, doc_id: str, from_version: int, to_version: int) -> DiffActors:
        """Who made the versions a diff spans: those after the lower of the two versions, up to the higher (either
        direction), read from their journal entries. At most :data:`DIFF_ACTORS_LISTED` names, from at most
        :data:`DIFF_ACTOR_VERSIONS` versions and :data:`DIFF_ACTOR_BYTES` of journal lines: a diff over any span
        costs one bounded journal read more. Call after :meth:`diff` (which checks the document and versions)."""
        low, high = sorted((from_version, to_version))
        names: list[str] = []
        through = low
        if high > low:
            entries = self.store.read_journal(check_doc_id(doc_id), since_version=low,
                                              until_version=min(high, low + DIFF_ACTOR_VERSIONS),
                                              max_bytes=DIFF_ACTOR_BYTES)
            for entry in entries:
                actor = entry.actor
                if actor is not None and actor not in names:
                    if len(names) == DIFF_ACTORS_LISTED:
                        break
                    names.append(actor)
                through = entry.version
        return DiffActors(names, through == high, through)

    def changes(self, since: int = 0, limit: int = 100) -> ChangesPage:
        """Committed versions of every document after cursor ``since``, in commit order."""
        check_int("since", since, 0, None)
        check_int("limit", limit, 1, 1000)
        if self._shared is not None:
            changes = self._shared.read_changes(since, limit)
            return ChangesPage(changes, changes[-1].cursor if changes else since)
        if not self._feed.loaded():
            found: list[Change] = []
            for meta in self.store.list_metas():
                for entry in self.store.read_journal(meta.doc_id):
                    seq = entry.info.get("seq")
                    if isinstance(seq, int):
                        found.append(Change(seq, meta.doc_id, entry.version, entry.op, entry.at, entry.actor))
            self._feed.load(found)
        return self._feed.read(since, limit)
