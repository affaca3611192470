"""Versions from the journal: point-in-time content with checkpoints, diffs, merge patches.

Nothing here touches the disk. :class:`VersionIndex` keeps one document's journal entries
and rebuilds any version by applying patches forward from the nearest checkpoint. Because
every patch is applied to a structurally shared copy, a checkpoint costs only the containers
that changed since the previous one, so one is kept every :data:`CHECKPOINT_EVERY` versions
and no read replays more than that many patches.

:func:`diff` returns a strict RFC 6902 patch between two versions. Unchanged subtrees of two
versions of one document are the *same* objects, so the identity check makes a diff cost the
size of the change, not of the document.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from typing import Any

from schemadoc.errors import SchemaDocError
from schemadoc.ops.apply import apply_patch, json_equal
from schemadoc.ops.journal import JournalEntry
from schemadoc.pointer import format_pointer

__all__ = ["CHECKPOINT_EVERY", "VersionIndex", "compile_merge_patch", "diff", "merge_patch_value"]

CHECKPOINT_EVERY = 64


class VersionIndex:
    """Every version of one document, rebuilt from its journal on demand."""

    def __init__(self, doc_id: str, entries: Iterable[JournalEntry] = ()) -> None:
        self.doc_id = doc_id
        self.entries: list[JournalEntry] = []
        self._checkpoints: dict[int, Any] = {}
        self._checkpoint_versions: list[int] = []
        self.extend(entries)

    @property
    def latest(self) -> int:
        return len(self.entries)

    def extend(self, entries: Iterable[JournalEntry]) -> None:
        """Append entries; versions must continue the index without gaps (older ones are skipped)."""
        for entry in entries:
            if entry.version <= self.latest:
                continue
            if entry.version != self.latest + 1:
                raise SchemaDocError("storage-read-failed",
                                     f"The journal of {self.doc_id} jumps from version {self.latest} "
                                     f"to {entry.version}.", {"doc_id": self.doc_id})
            self.entries.append(entry)

    def check_version(self, version: Any) -> int:
        if isinstance(version, bool) or not isinstance(version, int):
            raise SchemaDocError("invalid-request", f"A version must be an integer, got {version!r}.",
                                 {"argument": "version", "value": repr(version)})
        if not 1 <= version <= self.latest:
            raise SchemaDocError(
                "version-not-found",
                f"Document {self.doc_id} has versions 1 to {self.latest}; there is no version {version}.",
                {"doc_id": self.doc_id, "version": version, "latest_version": self.latest})
        return int(version)

    def content_at(self, version: int) -> Any:
        """The document's content at ``version`` (shares structure with neighbouring versions).

        The first call walks the whole journal once and leaves a checkpoint every
        :data:`CHECKPOINT_EVERY` versions; every later call replays fewer patches than that.
        """
        version = self.check_version(version)
        if version in self._checkpoints:
            return self._checkpoints[version]
        position = bisect.bisect_right(self._checkpoint_versions, version)
        base = self._checkpoint_versions[position - 1] if position else 0
        if version - base >= CHECKPOINT_EVERY:
            self._replay(base, self.latest)   # lay the missing checkpoints up to the latest version, once
            position = bisect.bisect_right(self._checkpoint_versions, version)
            base = self._checkpoint_versions[position - 1] if position else 0
        return self._replay(base, version)

    def _replay(self, base: int, version: int) -> Any:
        content: Any = self._checkpoints[base] if base else None
        for entry in self.entries[base:version]:
            content = apply_patch(content, entry.patch).document if entry.patch else content
            if entry.version % CHECKPOINT_EVERY == 0 and entry.version not in self._checkpoints:
                self._remember(entry.version, content)
        if version == 1 and 1 not in self._checkpoints:
            self._remember(1, content)
        return content

    def _remember(self, version: int, content: Any) -> None:
        self._checkpoints[version] = content
        bisect.insort(self._checkpoint_versions, version)

    def page(self, since_version: int, limit: int) -> list[JournalEntry]:
        return self.entries[since_version: since_version + limit]


def diff(source: Any, target: Any, tokens: Sequence[str | int] = ()) -> list[dict[str, Any]]:
    """A strict RFC 6902 patch that turns ``source`` into ``target`` (concrete indices only)."""
    patch: list[dict[str, Any]] = []
    _diff(source, target, list(tokens), patch)
    return patch


def _diff(source: Any, target: Any, tokens: list[str | int], out: list[dict[str, Any]]) -> None:
    if source is target:
        return
    if isinstance(source, dict) and isinstance(target, dict):
        for key in source:
            if key not in target:
                out.append({"op": "remove", "path": format_pointer([*tokens, key])})
        for key, value in target.items():
            if key in source:
                _diff(source[key], value, [*tokens, key], out)
            else:
                out.append({"op": "add", "path": format_pointer([*tokens, key]), "value": value})
        return
    if isinstance(source, list) and isinstance(target, list):
        _diff_lists(source, target, tokens, out)
        return
    if not json_equal(source, target):
        out.append({"op": "replace", "path": format_pointer(tokens), "value": target})


def _same(a: Any, b: Any) -> bool:
    return a is b or json_equal(a, b)


def _diff_lists(source: list[Any], target: list[Any], tokens: list[str | int], out: list[dict[str, Any]]) -> None:
    shortest = min(len(source), len(target))
    prefix = 0
    while prefix < shortest and _same(source[prefix], target[prefix]):
        prefix += 1
    suffix = 0
    while suffix < shortest - prefix and _same(source[-1 - suffix], target[-1 - suffix]):
        suffix += 1
    old = source[prefix: len(source) - suffix]
    new = target[prefix: len(target) - suffix]
    common = min(len(old), len(new))
    for offset in range(common):
        _diff(old[offset], new[offset], [*tokens, prefix + offset], out)
    for _ in range(len(old) - common):
        out.append({"op": "remove", "path": format_pointer([*tokens, prefix + common])})
    for offset in range(common, len(new)):
        out.append({"op": "add", "path": format_pointer([*tokens, prefix + offset]), "value": new[offset]})


def merge_patch_value(target: Any, merge: Any) -> Any:
    """RFC 7396 MergePatch(target, merge), without touching either argument."""
    if not isinstance(merge, dict):
        return merge
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in merge.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch_value(result.get(key), value)
    return result


def compile_merge_patch(target: Any, merge: Any, tokens: Sequence[str | int]) -> list[dict[str, Any]]:
    """The RFC 6902 patch that applies RFC 7396 ``merge`` to the node ``target`` at ``tokens``."""
    return diff(target, merge_patch_value(target, merge), tokens)
