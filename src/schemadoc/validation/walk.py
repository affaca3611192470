"""The walk of a change: from the root, visiting only what differs between ``before`` and ``after``.

:func:`check` gives the verdict on ``after`` given that ``before`` was valid, or every error of
``after``, placed as whole-document validation places it. It skips every child that is the same
object in both documents, or, :func:`guided` by a :class:`Hint` from the patch, visits only the
children it names (see :mod:`schemadoc.validation.incremental`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import compress, repeat
from itertools import count as count_from
from operator import is_not
from typing import Any, Final, TypeVar

from schemadoc.errors import SchemaDocError
from schemadoc.pointer import parse
from schemadoc.validation.locations import Errors, Node

__all__ = ["Hint", "HintMismatch", "check", "guided", "hint_of"]

_MISSING: Final = object()


class HintMismatch(Exception):
    """Internal: a patch's paths do not exist in the documents it was given with."""


class Hint:
    """Where a patch changed a container: children on its paths, or one member added or removed."""

    __slots__ = ("added", "children", "removed", "whole")

    def __init__(self) -> None:
        self.children: dict[str, Hint] = {}
        self.whole = False               # replaced here: everything below may differ
        self.added: str | None = None    # one member or item added (or copied) here
        self.removed: str | None = None  # one member or item removed here


def hint_of(patch: Sequence[Any]) -> Hint | None:
    """The places a strict patch changed, or None when it must be found by scanning.

    Replacing values never moves anything, so a patch of ``replace`` (and ``test``) operations
    changed exactly the subtrees at its paths. A single ``add``, ``remove`` or ``copy`` also
    changed one container's membership at one known position. Anything else (several
    operations that insert, remove or move) may shift positions the later paths are written in.
    """
    operations = [operation for operation in patch if operation.get("op") != "test"]
    structural = [operation for operation in operations if operation.get("op") != "replace"]
    if structural and (len(operations) > 1 or structural[0].get("op") not in ("add", "remove", "copy")):
        return None
    root = Hint()
    for operation in operations:
        try:
            tokens = parse(operation["path"])
        except (KeyError, SchemaDocError):
            return None
        if not tokens:
            root.whole = True
            continue
        hint = root
        for token in tokens[:-1]:
            hint = hint.children.setdefault(token, Hint())
        if operation["op"] == "replace":
            hint.children.setdefault(tokens[-1], Hint()).whole = True
        elif operation["op"] == "remove":
            hint.removed = tokens[-1]
        else:
            hint.added = tokens[-1]
    return root


def check(node: Node, after: Any, before: Any, hint: Hint | None = None, path: tuple[str | int, ...] = (),
          out: Errors | None = None) -> bool:
    """Whether ``after`` is valid at ``node``, given that ``before`` was; with ``out``, every error of
    ``after`` there is collected into it instead (placed at ``path`` and below) and the walk goes on.

    Without ``hint`` the children that differ are found by identity; with one, only the
    children it names are visited (it comes from the patch, see :func:`hint_of`).
    """
    if hint is not None and hint.whole:
        hint = None
    if after is before or node.unconstrained:
        return True
    if node.impossible or not node.local or type(after) is not type(before) or not isinstance(after, dict | list):
        return node.whole(after, path, out)
    if isinstance(after, dict):
        if node.dependent:
            if after.keys() != before.keys():
                return node.whole(after, path, out)
            node = node.with_dependents(after)
            if not node.local:
                return node.whole(after, path, out)
        if not node.own(after, path, out):
            return False
        reported = False
        for name, child, previous in _changed_members(after, before, hint):
            sub = node.for_key(name)
            at = path if out is None else (*path, name)  # the verdict alone needs no paths
            if previous is _MISSING:
                if sub.impossible and out is not None and out.unexpected:  # additionalProperties refuses it
                    node.unexpected(after, name, path, out, report=not reported)
                    reported = True
                elif not sub.unconstrained and not sub.whole(child, at, out):
                    return False
            elif not check(sub, child, previous, hint.children.get(name) if hint is not None else None, at, out):
                return False
        return True
    count, previous_count = len(after), len(before)
    positional = hint is not None and hint.added is None and hint.removed is None
    if count != previous_count and node.prefix_items and not positional:
        return node.whole(after, path, out)  # items moved to positions with other schemas
    if not node.own(after, path, out):
        return False
    if hint is not None and positional:
        if count != previous_count:
            raise HintMismatch
        for token, below in hint.children.items():
            index = _position(token, count)
            at = path if out is None else (*path, index)
            if not check(node.for_index(index), after[index], before[index], below, at, out):
                return False
        return True
    if count == previous_count:  # compare position by position: visit those holding another object
        changed = compress(range(count), map(is_not, after, before))
        return all(check(node.for_index(index), after[index], before[index], None,
                         path if out is None else (*path, index), out) for index in changed)
    start, end = _moved_range(after, before, hint)
    for index in range(start, count - end):
        sub = node.for_index(index)
        if not sub.unconstrained and not sub.whole(after[index], path if out is None else (*path, index), out):
            return False
    return True


def _changed_members(after: dict[str, Any], before: dict[str, Any],
                     hint: Hint | None) -> Iterator[tuple[str, Any, Any]]:
    """``(name, value, previous value)`` of the members of ``after`` that are not the same object in
    ``before`` (``_MISSING`` for a new one): those ``hint`` names, else found by a C-level scan."""
    if hint is None:
        previous_values = map(before.get, after, repeat(_MISSING))
        names: Iterable[str] = compress(after, map(is_not, after.values(), previous_values))
    else:
        names = [*hint.children, *([hint.added] if hint.added is not None else [])]
    for name in names:
        child = after.get(name, _MISSING)
        if child is _MISSING:
            raise HintMismatch
        yield name, child, before.get(name, _MISSING)


def _moved_range(after: list[Any], before: list[Any], hint: Hint | None) -> tuple[int, int]:
    """``(start, end)``: items ``after[start:len(after) - end]`` are new at their positions.

    With a ``hint`` (one item added or removed at a known position) the rest only moved;
    without one, the same objects before the first difference and after the last one (each
    found by C-level scans) keep their verdict.
    """
    count, previous_count = len(after), len(before)
    if hint is not None:
        start = _position(hint.added if hint.added is not None else hint.removed, max(count, previous_count))
        end = count - start - (1 if hint.added is not None else 0)
        if end < 0 or count - previous_count != (1 if hint.added is not None else -1):
            raise HintMismatch
        return start, end
    shortest = min(count, previous_count)
    start = next(compress(count_from(), map(is_not, after, before)), shortest)
    end = next(compress(count_from(), map(is_not, reversed(after), reversed(before))), shortest)
    return start, min(end, shortest - start)


_T = TypeVar("_T")


def guided(patch: Sequence[Any] | None, walk: Callable[[Hint | None], _T]) -> _T:
    """``walk`` guided by what ``patch`` says changed, or, without a usable patch, scanning."""
    hint = hint_of(patch) if patch is not None else None
    if hint is not None:
        try:
            return walk(hint)
        except HintMismatch:  # the patch does not describe these documents: scan instead
            pass
    return walk(None)


def _position(token: str | None, length: int) -> int:
    if token is None or not token.isdigit() or int(token) >= length:
        raise HintMismatch
    return int(token)
