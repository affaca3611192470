"""Versions from the journal: point-in-time content from checkpoints, diffs, merge patches.

Nothing here touches the disk. A past version is rebuilt by applying journal entries forward
from the nearest checkpoint: one kept in memory (:class:`Checkpoints`, every
:data:`CHECKPOINT_EVERY` versions met while replaying), one persisted by the store (every
``PERSIST_EVERY`` versions, see the service), or the current content. Because every patch is
applied to a structurally shared copy, an in-memory checkpoint costs only the containers that
changed since the previous one.

:func:`diff` returns a strict RFC 6902 patch between two versions. Unchanged subtrees of two
versions of one document are the *same* objects, so the identity check makes a diff cost the
size of the change, not of the document.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from schemadoc.ops.apply import apply_patch, json_equal
from schemadoc.ops.journal import JournalEntry
from schemadoc.pointer import format_pointer

__all__ = ["CHECKPOINT_EVERY", "Checkpoints", "compile_merge_patch", "diff", "merge_patch_value", "replay_from"]

CHECKPOINT_EVERY = 64


class Checkpoints:
    """Past versions of one document kept in memory (thread-safe; contents are never mutated)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._versions: list[int] = []
        self._contents: dict[int, Any] = {}

    def __len__(self) -> int:
        with self._lock:
            return len(self._versions)

    def nearest(self, version: int) -> tuple[int, Any] | None:
        """The checkpoint with the highest version ``<= version``, if any."""
        with self._lock:
            position = bisect.bisect_right(self._versions, version)
            if not position:
                return None
            found = self._versions[position - 1]
            return found, self._contents[found]

    def remember(self, version: int, content: Any) -> None:
        with self._lock:
            if version not in self._contents:
                self._contents[version] = content
                bisect.insort(self._versions, version)


def replay_from(content: Any, entries: Iterable[JournalEntry], checkpoints: Checkpoints | None = None) -> Any:
    """Apply ``entries`` in order to ``content`` (``None`` before version 1), remembering a checkpoint
    every :data:`CHECKPOINT_EVERY` versions on the way."""
    for entry in entries:
        if entry.patch:
            content = apply_patch(content, entry.patch).document
        if checkpoints is not None and entry.version % CHECKPOINT_EVERY == 0:
            checkpoints.remember(entry.version, content)
    return content


def diff(source: Any, target: Any, tokens: Sequence[str | int] = ()) -> list[dict[str, Any]]:
    """A strict RFC 6902 patch that turns ``source`` into ``target`` (concrete indices only)."""
    return list(_diff(source, target, list(tokens)))


def _diff(source: Any, target: Any, tokens: list[str | int]) -> Iterator[dict[str, Any]]:
    if source is target:
        return
    if isinstance(source, dict) and isinstance(target, dict):
        for key in source:
            if key not in target:
                yield {"op": "remove", "path": format_pointer([*tokens, key])}
        for key, value in target.items():
            if key in source:
                yield from _diff(source[key], value, [*tokens, key])
            else:
                yield {"op": "add", "path": format_pointer([*tokens, key]), "value": value}
    elif isinstance(source, list) and isinstance(target, list):
        yield from _diff_lists(source, target, tokens)
    elif not json_equal(source, target):
        yield {"op": "replace", "path": format_pointer(tokens), "value": target}


def _same(a: Any, b: Any) -> bool:
    return a is b or json_equal(a, b)


def _diff_lists(source: list[Any], target: list[Any], tokens: list[str | int]) -> Iterator[dict[str, Any]]:
    """The items of ``source`` and ``target`` compared past their common beginning and end."""
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
        yield from _diff(old[offset], new[offset], [*tokens, prefix + offset])
    for _ in range(len(old) - common):
        yield {"op": "remove", "path": format_pointer([*tokens, prefix + common])}
    for offset in range(common, len(new)):
        yield {"op": "add", "path": format_pointer([*tokens, prefix + offset]), "value": new[offset]}


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
