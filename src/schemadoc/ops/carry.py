"""Places in a document carried through an RFC 6902 patch: where each node of the document before is after it.

An ``add`` (or the arrival of a ``move`` or ``copy``) into an array shifts the items after it up, a ``remove`` (or
the departure of a ``move``) shifts them down; a ``remove`` of an array item takes the places at and below it away
(``None``), of an object member leaves them (nothing is there any more, unless a later operation writes it again);
a ``move`` takes the places below its ``from`` along to its ``path``. ``replace``, ``add`` of an object member and
``test`` leave every place where it is: a node replaced keeps its place (what is written there is judged at that
place). Used by the repair rule (:mod:`schemadoc.validation.repair`) to tell a violation the document already had,
now at a shifted index, from a new one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from schemadoc.ops.apply import array_parents
from schemadoc.pointer import format_pointer, parse

__all__ = ["carry"]

Tokens = list[str]


def carry(document: Any, patch: list[dict[str, Any]], pointers: Iterable[str], *,
          forget_written: bool = False) -> dict[str, str | None]:
    """Where each of ``pointers`` (places in ``document``) is after the strict ``patch``: its pointer there, or
    ``None`` when the patch removed it. ``patch`` must apply to ``document`` (it did: it is a write's own).
    ``forget_written``: a place an operation writes over (``replace``, ``add`` of a member, the target of ``copy``
    or ``move``, at or above it) is ``None`` too: what is there now is not what was there."""
    places: dict[str, Tokens | None] = {pointer: list(parse(pointer)) for pointer in pointers}
    if not places:
        return {}
    for operation, (into_array, from_array) in zip(patch, array_parents(document, patch), strict=True):
        op = operation["op"]
        target = list(parse(operation["path"]))
        if forget_written and op != "test" and op != "remove" and (op == "replace" or not into_array):
            source = list(parse(operation["from"])) if op == "move" else None
            for key, tokens in places.items():
                if tokens is not None and _under(tokens, target) and not (source and _under(tokens, source)):
                    places[key] = None
        if op == "remove":
            for key, tokens in places.items():
                places[key] = _removed(tokens, target, into_array)
        elif op == "add" or op == "copy":
            for key, tokens in places.items():
                places[key] = _inserted(tokens, target, into_array)
        elif op == "move":
            source = list(parse(operation["from"]))
            if source == target:
                continue
            for key, tokens in places.items():
                if tokens is not None and _under(tokens, source):
                    # departs from source, arrives at target: the target shifts its neighbours, not this one
                    places[key] = [*target, *tokens[len(source):]]
                    continue
                shifted = _removed(tokens, source, from_array)
                places[key] = _inserted(shifted, target, into_array)
            # items moved along sit at the target; those computed before the arrival shift are exact
        # replace, test: nothing moves
    return {key: None if tokens is None else format_pointer(tokens) for key, tokens in places.items()}


def _under(tokens: Tokens, prefix: Tokens) -> bool:
    return tokens[:len(prefix)] == prefix


def _removed(tokens: Tokens | None, target: Tokens, in_array: bool) -> Tokens | None:
    """``tokens`` after the node at ``target`` was taken out: an array item's places go with it (its followers
    shift down into its index); a member's places stay (whatever is written there again is at the same place)."""
    if tokens is None or not target:
        return tokens
    if _under(tokens, target):
        return None if in_array else tokens
    parent = target[:-1]
    if in_array and len(tokens) > len(parent) and _under(tokens, parent):
        index, at = tokens[len(parent)], int(target[-1])
        if index.isdigit() and int(index) > at:
            return [*parent, str(int(index) - 1), *tokens[len(parent) + 1:]]
    return tokens


def _inserted(tokens: Tokens | None, target: Tokens, in_array: bool) -> Tokens | None:
    """``tokens`` after a node was inserted at ``target`` (an array item shifts its followers up)."""
    if tokens is None or not target or not in_array:
        return tokens
    parent = target[:-1]
    if len(tokens) > len(parent) and _under(tokens, parent):
        index, at = tokens[len(parent)], int(target[-1])
        if index.isdigit() and int(index) >= at:
            return [*parent, str(int(index) + 1), *tokens[len(parent) + 1:]]
    return tokens
