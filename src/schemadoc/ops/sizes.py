"""What a patch does to the size of a document's JSON, without serialising the document.

A write must not cost what the whole document costs (serialising 100 MB takes 255 ms), yet the
meta records the size of the current version (``content_size_bytes``) and the store must refuse
what compact JSON cannot hold exactly, as it did when every write serialised the document.
:func:`patch_size` does both from the patch alone: each value the patch adds is serialised at
the depth where it lands (so ``document-too-deep`` and ``number-out-of-range`` fire exactly
when serialising the whole result would), and each removed or replaced value is measured. The
cost is the size of what the edit touches.

Sizes are those of ``orjson.dumps`` (compact, no spaces): containers compose, so the size of a
document after an edit is the size before plus what was added minus what was taken away,
including the commas and ``"key":`` that go with them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import orjson

from schemadoc.errors import SchemaDocError
from schemadoc.ops.apply import apply_patch
from schemadoc.pointer import parse, resolve

__all__ = ["PatchSize", "json_size", "patch_size", "serialise"]

MAX_DEPTH = 255


@dataclass(frozen=True)
class PatchSize:
    size: int          # the compact JSON size of the document after the patch
    added_bytes: int   # the compact JSON size of every value the patch added (a measure of the edit)


def json_size(value: Any) -> int:
    """Bytes of ``value`` as compact JSON (the standard library for integers beyond 64 bits)."""
    try:
        return len(orjson.dumps(value))
    except TypeError:
        return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def serialise(value: Any, doc_id: str, depth: int = 0) -> bytes:
    """``orjson.dumps(value)`` as if ``value`` sat ``depth`` containers deep; what JSON (or orjson)
    cannot hold exactly is refused (``document-too-deep``, ``number-out-of-range``,
    ``invalid-request``), not stored approximately."""
    wrapped = value
    for _ in range(depth):
        wrapped = [wrapped]
    try:
        data = orjson.dumps(wrapped)
    except orjson.JSONEncodeError as error:
        reason = str(error)
        if "Recursion" in reason:
            raise SchemaDocError("document-too-deep",
                                 f"The write would nest the document deeper than {MAX_DEPTH} levels.",
                                 {"doc_id": doc_id, "max_depth": MAX_DEPTH}) from None
        if "64-bit" in reason:
            raise SchemaDocError("number-out-of-range", "An integer in the write does not fit in 64 bits.",
                                 {"doc_id": doc_id, "range": [-(2**63), 2**64 - 1]}) from None
        raise SchemaDocError("invalid-request", f"The write holds a value JSON cannot represent: {reason}.",
                             {"doc_id": doc_id}) from None
    return data[depth:len(data) - depth] if depth else data


def _member_length(parent: Any, token: str, value_length: int) -> int:
    """The bytes a member of ``parent`` takes besides its value's own: ``"key":`` in an object."""
    return json_size(token) + 1 + value_length if isinstance(parent, dict) else value_length


def _insert(document: Any, size: int, tokens: list[str], value_length: int) -> int:
    """The size after adding a value of ``value_length`` bytes at ``tokens`` (an add, a copy, a move's second half)."""
    if not tokens:
        return value_length
    parent, _ = resolve(document, tokens[:-1], allow_negative=False)
    key = tokens[-1]
    if isinstance(parent, dict) and key in parent:  # add onto an existing member replaces it
        return size - json_size(parent[key]) + value_length
    return size + _member_length(parent, key, value_length) + (1 if parent else 0)


def _take(document: Any, size: int, tokens: list[str]) -> int:
    """The size after removing the value at ``tokens``."""
    parent, _ = resolve(document, tokens[:-1], allow_negative=False)
    old = parent[tokens[-1]] if isinstance(parent, dict) else parent[int(tokens[-1])]
    return size - _member_length(parent, tokens[-1], json_size(old)) - (1 if len(parent) > 1 else 0)


def patch_size(document: Any, size: int, patch: list[dict[str, Any]], doc_id: str) -> PatchSize:
    """The size after applying ``patch`` (normalised, as :func:`~schemadoc.ops.apply.apply_patch`
    returns it: concrete indices) to ``document`` whose compact JSON is ``size`` bytes.

    Raises the refusals of :func:`serialise` for the values the patch adds or moves.
    """
    added = 0
    for index, operation in enumerate(patch):
        op = operation["op"]
        tokens = parse(operation["path"])
        if op == "test" or (op == "move" and operation["from"] == operation["path"]):
            continue
        if op == "remove":
            size = _take(document, size, tokens)
        elif op in ("move", "copy"):
            value, _ = resolve(document, parse(operation["from"]), allow_negative=False)
            value_length = len(serialise(value, doc_id, len(tokens)))
            if op == "move":  # a remove, then an add of the value
                size = _take(document, size, parse(operation["from"]))
                document = apply_patch(document, [{"op": "remove", "path": operation["from"]}]).document
                operation = {"op": "add", "path": operation["path"], "value": value}
            size = _insert(document, size, tokens, value_length)
        else:
            value_length = len(serialise(operation["value"], doc_id, len(tokens)))
            added += value_length
            if op == "add":
                size = _insert(document, size, tokens, value_length)
            elif tokens:
                size += value_length - json_size(resolve(document, tokens, allow_negative=False)[0])
            else:
                size = value_length
        if index < len(patch) - 1:
            document = apply_patch(document, [operation]).document
    return PatchSize(size, added)
