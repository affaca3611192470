"""RFC 6901 JSON Pointers: parse, format, resolve with diagnostics.

Two conventions live here:

* ``node_path`` (what every node-path argument of every operation takes: reads, writes, moves,
  bounded and past-version reads, node schemas): ``"/"`` and ``""`` both mean the root, and a
  negative array index counts from the end, an extension of RFC 6901: ``-k`` is the item at
  ``len - k`` (``/chapters/-1`` is the last chapter); where a new item is inserted, ``-k`` is the
  position ``len - k`` as in Python's ``list.insert`` (``-1`` inserts before the last item).
  Results report, and the journal keeps, the concrete index.
* strict RFC 6901 (what raw RFC 6902 patches and the journal use): ``""`` is the root, ``"/"``
  is the member named ``""`` of the root, and there are no negative indices.

An array index is at most :data:`LARGEST_INDEX` (a signed 64-bit integer), whichever way it counts:
a longer run of digits can never name an item and is ``path-invalid``.

Resolution never creates anything; when a path is missing, :class:`~schemadoc.errors.SchemaDocError`
``path-not-found`` says which ancestor exists, how long the array was, and what to create first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, NoReturn

from schemadoc.errors import SchemaDocError

__all__ = [
    "LARGEST_INDEX",
    "escape",
    "format_pointer",
    "index_token",
    "json_type",
    "parse",
    "parse_node_path",
    "resolve",
]

LARGEST_INDEX = 2**63 - 1
"""The largest array index (and the largest integer any argument may be): a signed 64-bit integer."""

_INDEX = re.compile(r"^(0|[1-9][0-9]{0,17})$")  # at most 18 digits: below LARGEST_INDEX, read directly
_LONG_INDEX = re.compile(r"^[1-9][0-9]{18,}$")
_NEGATIVE_INDEX = re.compile(r"^-[1-9][0-9]*$")
_LARGEST_DIGITS = len(str(LARGEST_INDEX))
_BAD_ESCAPE = re.compile(r"~(?![01])")


def escape(token: str) -> str:
    """Escape one reference token (``~`` -> ``~0``, ``/`` -> ``~1``)."""
    return token.replace("~", "~0").replace("/", "~1")


def format_pointer(tokens: Sequence[str | int]) -> str:
    """Tokens -> strict RFC 6901 pointer (``[]`` -> ``""``)."""
    return "".join("/" + escape(str(token)) for token in tokens)


def parse(pointer: str) -> list[str]:
    """Strict RFC 6901: ``""`` is the root; anything else must start with ``/``."""
    if not isinstance(pointer, str):
        raise SchemaDocError("path-invalid", "A JSON Pointer must be a string.",
                             {"path": pointer, "reason": "not a string"})
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise SchemaDocError(
            "path-invalid",
            f"JSON Pointer {pointer!r} must start with '/'.",
            {"path": pointer, "reason": "does not start with '/'", "suggestion": "/" + pointer},
        )
    if "~" not in pointer:  # nothing escaped (most pointers): the tokens are the parts
        return pointer[1:].split("/")
    bad = _BAD_ESCAPE.search(pointer)
    if bad:
        raise SchemaDocError(
            "path-invalid",
            f"JSON Pointer {pointer!r} has '~' at offset {bad.start()} not followed by 0 or 1.",
            {"path": pointer, "reason": "invalid escape", "offset": bad.start(),
             "suggestion": pointer.replace("~", "~0")},
        )
    return [part.replace("~1", "/").replace("~0", "~") for part in pointer[1:].split("/")]


def parse_node_path(node_path: str) -> list[str]:
    """The tools' convention: ``"/"`` and ``""`` are the root, otherwise RFC 6901."""
    if node_path == "/":
        return []
    return parse(node_path)


def json_type(value: Any) -> str:
    """The JSON type name of a Python value parsed from JSON."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def index_token(token: str, length: int, pointer: str, *, allow_negative: bool) -> int:
    """Turn an array reference token into a concrete index (may equal or exceed ``length``).

    Raises ``path-invalid`` for tokens that are not indices (leading zeros, signs, words) or lie beyond
    :data:`LARGEST_INDEX` and, when ``allow_negative``, maps ``-k`` to ``length - k`` (``path-not-found``
    if that is below 0).
    """
    if _INDEX.match(token):
        return int(token)
    if _LONG_INDEX.match(token):
        return _bounded(token, token, pointer)
    if allow_negative and _NEGATIVE_INDEX.match(token):
        index = length - _bounded(token[1:], token, pointer)
        if index < 0:
            raise SchemaDocError(
                "path-not-found",
                f"Index {token} is out of range for an array of length {length} at {pointer!r}.",
                {"path": pointer, "array_length": length},
            )
        return index
    reason = "leading zero" if token[:1] == "0" and token != "0" else "not an array index"
    raise SchemaDocError(
        "path-invalid",
        f"{token!r} is not a valid array index in {pointer!r} ({reason}).",
        {"path": pointer, "token": token, "reason": reason,
         "hint": "use 0, 1, 2, … (no leading zeros); '-' to append; -1 for the last item"},
    )


def _bounded(digits: str, token: str, pointer: str) -> int:
    """The value of ``digits`` (an index without its sign); ``path-invalid`` beyond :data:`LARGEST_INDEX`
    (checked by length first: ``int`` refuses more than 4,300 digits)."""
    if len(digits) <= _LARGEST_DIGITS:
        value = int(digits)
        if value <= LARGEST_INDEX:
            return value
    shown = token if len(token) <= 40 else f"{token[:20]}…({len(token)} characters)"
    raise SchemaDocError(
        "path-invalid",
        f"{shown!r} is beyond the largest array index ({LARGEST_INDEX}) in "
        f"{pointer if len(pointer) <= 200 else pointer[:200] + '…'!r}.",
        {"path": pointer, "token": shown, "reason": "beyond the largest array index", "largest": LARGEST_INDEX,
         "hint": "an index names an item of an array: 0 to the array's length - 1, -1 for the last item"},
    )


def resolve(document: Any, tokens: Sequence[str], *, allow_negative: bool = True) -> tuple[Any, list[str | int]]:
    """Find the node at ``tokens``; return it with the concrete path (negative indices resolved).

    Raises ``path-not-found`` with ``path``, ``deepest_ancestor`` (the deepest existing node),
    ``array_length`` when an index was out of range, and ``create_first`` (the first missing
    path, which must be created before anything below it).
    """
    node = document
    concrete: list[str | int] = []
    for depth, token in enumerate(tokens):
        if isinstance(node, dict):
            if token not in node:
                _not_found(concrete, tokens, depth, f"member {token!r} does not exist")
            node = node[token]
            concrete.append(token)
        elif isinstance(node, list):
            if _INDEX.match(token):
                index = int(token)
            elif token == "-":
                _not_found(concrete, tokens, depth,
                           "'-' names the position after the last item; it can only be used to append",
                           array_length=len(node))
            elif allow_negative and _NEGATIVE_INDEX.match(token) and _before_the_first(token, len(node)):
                _not_found(concrete, tokens, depth,
                           f"index {token} is out of range (length {len(node)})", array_length=len(node))
            else:  # a negative index in range, a long one, or not an index (refused with the pointer named)
                index = index_token(token, len(node), format_pointer(tokens), allow_negative=allow_negative)
            if index >= len(node):
                _not_found(concrete, tokens, depth,
                           f"index {token} is out of range (length {len(node)})", array_length=len(node))
            node = node[index]
            concrete.append(index)
        else:
            _not_found(concrete, tokens, depth,
                       f"{format_pointer(concrete) or '/'} is a {json_type(node)}, which has no members")
    return node, concrete


def _before_the_first(token: str, length: int) -> bool:
    """Whether the negative index ``token`` counts back past the first item (not when it lies beyond
    :data:`LARGEST_INDEX`: that is ``path-invalid``)."""
    return len(token) <= _LARGEST_DIGITS + 1 and length < int(token[1:]) <= LARGEST_INDEX


def _not_found(concrete: list[str | int], tokens: Sequence[str], depth: int, why: str,
               array_length: int | None = None) -> NoReturn:
    pointer = format_pointer(tokens)
    ancestor = format_pointer(concrete)
    details: dict[str, Any] = {
        "path": pointer,
        "deepest_ancestor": ancestor or "/",
        "missing": format_pointer([*concrete, tokens[depth]]),
        "reason": why,
    }
    if array_length is not None:
        details["array_length"] = array_length
    if depth == len(tokens) - 1:
        details["create_first"] = pointer
        hint = f"create {pointer} with document_create_node"
    else:
        details["create_first"] = details["missing"]
        hint = (f"create {details['create_first']} first (intermediate paths are never created "
                f"implicitly), then the levels below it")
    if array_length is not None:
        hint = (f"the array at {ancestor or '/'} has {array_length} items; "
                f"use an index below {array_length}, or '-' to append")
    raise SchemaDocError("path-not-found", f"Path {pointer or '/'} not found: {why}.", details,
                         remediation=f"Read {ancestor or '/'} to see what exists; {hint}.")
