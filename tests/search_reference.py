"""A plain in-memory evaluation of document_list's filters and order (docs/search.md), written apart from the
index's SQL, for the differential and contract tests to compare every store's answers with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_RANK = {"z": 0, "b": 1, "n": 2, "s": 3, "x": 4}
_MISSING = 5


@dataclass(frozen=True)
class Doc:
    doc_id: str
    content: Any
    created: str
    modified: str
    version: int
    valid: bool | None


def _kind(value: Any) -> str | None:
    if value is None:
        return "z"
    if isinstance(value, bool):
        return "b"
    if isinstance(value, int | float):
        return "n"
    if isinstance(value, str):
        return "s"
    return None


def _member(content: Any, pointer: str) -> tuple[bool, Any]:
    node = content
    for raw in pointer.split("/")[1:]:
        token = raw.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or token not in node:
            return False, None
        node = node[token]
    return True, node


def _scalars(content: Any, pointer: str) -> tuple[bool, list[Any]]:
    present, value = _member(content, pointer)
    if not present:
        return False, []
    items = value if isinstance(value, list) else [value]
    return True, [item for item in items if _kind(item) is not None]


def _same(a: Any, b: Any) -> bool:
    kind = _kind(a)
    if kind != _kind(b):
        return False
    if kind in ("n", "b"):
        return float(a) == float(b)
    return bool(a == b)


def _order(op: str, a: Any, b: Any) -> bool:
    if _kind(a) != _kind(b) or _kind(a) not in ("n", "s"):
        return False
    if _kind(a) == "n":
        a, b = float(a), float(b)
    return {"lt": a < b, "gt": a > b, "le": a <= b, "ge": a >= b}[op]


def _holds_member(doc: Doc, key: str, op: str, value: Any) -> bool:
    present, values = _scalars(doc.content, key)
    if op == "exists":
        return present == value
    if op == "ne":
        return not any(_same(v, value) for v in values)
    if op == "eq":
        return any(_same(v, value) for v in values)
    if op == "in":
        return any(_same(v, w) for v in values for w in value)
    if op == "prefix":
        return any(isinstance(v, str) and v.startswith(value) for v in values)
    if op == "contains":
        return any(isinstance(v, str) and value in v for v in values)
    return any(_order(op, v, value) for v in values)


def _holds_meta(doc: Doc, key: str, op: str, value: Any) -> bool:
    if key == "valid":
        if op == "exists":
            return (doc.valid is not None) == value
        same = doc.valid is value if (value is None or isinstance(value, bool)) else False
        return same if op == "eq" else not same
    have = {"created": doc.created, "modified": doc.modified, "version": doc.version, "doc_id": doc.doc_id}[key]
    if op == "exists":
        return bool(value)
    if op == "eq":
        return _same(have, value)
    if op == "ne":
        return not _same(have, value)
    if op == "in":
        return any(_same(have, w) for w in value)
    if op == "prefix":
        return isinstance(have, str) and have.startswith(value)
    if op == "contains":
        return isinstance(have, str) and value in have
    return _order(op, have, value)


def holds(doc: Doc, key: str, op: str, value: Any) -> bool:
    return _holds_member(doc, key, op, value) if key.startswith("/") else _holds_meta(doc, key, op, value)


def _first_row(content: Any, pointer: str) -> tuple[int, float, str]:
    present, value = _member(content, pointer)
    if not present:
        return _MISSING, 0.0, ""
    items = value if isinstance(value, list) else [value]
    if not any(_kind(item) is not None for item in items):
        return _RANK["x"], 0.0, ""
    first = items[0]
    kind = _kind(first)
    if kind is None:
        return _MISSING, 0.0, ""
    return _RANK[kind], float(first) if kind in "nb" else 0.0, first if kind == "s" else ""


def expected(docs: list[Doc], where: list[list[Any]], sort: str = "created") -> list[str]:
    """The doc_ids of the live ``docs`` that every filter selects, in the order of ``sort``."""
    chosen = [doc for doc in docs if all(holds(doc, *term) for term in where)]
    down = sort.startswith("-")
    key = sort[1:] if down else sort
    if key.startswith("/"):
        rows = {doc.doc_id: _first_row(doc.content, key) for doc in chosen}
        chosen.sort(key=lambda d: (rows[d.doc_id][1], rows[d.doc_id][2], d.doc_id), reverse=down)
        chosen.sort(key=lambda d: rows[d.doc_id][0])  # stable: documents without a value last, either way
    elif key == "valid":
        chosen.sort(key=lambda d: (2 if d.valid is None else int(d.valid), d.doc_id), reverse=down)
    else:
        chosen.sort(key=lambda d: (getattr(d, key), d.doc_id), reverse=down)
    return [doc.doc_id for doc in chosen]
