"""The members ``document_list`` filters and sorts on: which are indexed, their values, the filter's terms.

A member is indexed when the schema makes it a scalar (string, number, integer, boolean, null, an ``enum``
or ``const``) or an array of scalars, reached through object ``properties`` only, at most ``depth`` members
down (``search_field_depth``, default 3); or when the ``search_fields`` setting names it (then only those).
Each indexed member of a document gives rows ``(field, position, kind, number, text)``: one for a scalar,
one per scalar item of an array, and one of kind ``x`` for a present member with no scalar (so ``exists``
still answers).

Beside the members, every document has the metadata keys ``created``, ``modified``, ``version``,
``doc_id`` and ``valid`` (the served schema's verdict: true, false, or null when not checked yet).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from schemadoc.errors import SchemaDocError
from schemadoc.pointer import escape, parse
from schemadoc.search.units import is_below

__all__ = ["KINDS", "META_KEYS", "OPS", "FieldRow", "Query", "Term", "decode_cursor", "encode_cursor",
           "field_rows", "indexed_members", "members_reached", "parse_query", "value_kind"]

META_KEYS = ("created", "modified", "version", "doc_id", "valid")
OPS = ("eq", "ne", "lt", "gt", "le", "ge", "in", "exists", "prefix", "contains")
KINDS = {"z": 0, "b": 1, "n": 2, "s": 3, "x": 4}
"""Kinds of a row, in sort order: null, boolean, number, string, present without a scalar."""
MAX_TERMS = 20
_SCALAR_TYPES = {"string", "number", "integer", "boolean", "null"}
_COMBINERS = ("allOf", "anyOf", "oneOf")


@dataclass(frozen=True)
class FieldRow:
    field: str
    position: int
    kind: str
    number: float | None
    text: str | None


def value_kind(value: Any) -> str | None:
    """The row kind of a JSON scalar (None for a container)."""
    if value is None:
        return "z"
    if isinstance(value, bool):
        return "b"
    if isinstance(value, int | float):
        return "n"
    if isinstance(value, str):
        return "s"
    return None


def _branches(schema: Any) -> Iterator[dict[str, Any]]:
    if not isinstance(schema, dict):
        return
    yield schema
    for keyword in _COMBINERS:
        for branch in schema.get(keyword, ()) or ():
            yield from _branches(branch)


def _scalar(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    kinds = {kind} if isinstance(kind, str) else set(kind) if isinstance(kind, list) else set()
    return bool(kinds & _SCALAR_TYPES) or "enum" in schema or "const" in schema


def indexed_members(root: dict[str, Any], depth: int = 3) -> list[str]:
    """The members a schema makes scalars or arrays of scalars, at most ``depth`` members down, sorted."""
    found: set[str] = set()
    pending: list[tuple[Any, str, int]] = [(root, "", 0)]
    while pending:
        schema, pointer, level = pending.pop()
        for branch in _branches(schema):
            if pointer and (_scalar(branch) or (branch.get("type") == "array" and any(
                    _scalar(item) for item in _branches(branch.get("items"))))):
                found.add(pointer)
            if level < depth:
                for name, child in (branch.get("properties") or {}).items():
                    pending.append((child, f"{pointer}/{escape(name)}", level + 1))
    return sorted(found)


def _resolve(content: Any, pointer: str) -> tuple[bool, Any]:
    node = content
    for token in parse(pointer):
        if not isinstance(node, dict) or token not in node:
            return False, None
        node = node[token]
    return True, node


def _row(field: str, position: int, value: Any) -> FieldRow | None:
    kind = value_kind(value)
    if kind is None:
        return None
    number = float(value) if kind in "nb" else None
    return FieldRow(field, position, kind, number, value if kind == "s" else None)


def field_rows(content: Any, members: Sequence[str]) -> list[FieldRow]:
    """The rows of a document's indexed members (see the module's text)."""
    rows: list[FieldRow] = []
    for field in members:
        found, value = _resolve(content, field)
        if not found:
            continue
        items = value if isinstance(value, list) else [value]
        made = [row for row in (_row(field, i, item) for i, item in enumerate(items)) if row is not None]
        rows.extend(made or [FieldRow(field, 0, "x", None, None)])
    return rows


def members_reached(members: Sequence[str], patch: Sequence[dict[str, Any]]) -> list[str]:
    """The members whose rows ``patch`` may have changed: those a path of it (or a ``from``) names, lies below or
    lies above. The rows of every other member are the same before and after it."""
    paths = {operation[key] for operation in patch for key in ("path", "from") if key in operation}
    return [member for member in members if any(is_below(path, member) or is_below(member, path) for path in paths)]


@dataclass(frozen=True)
class Term:
    key: str
    """A member's pointer, or a metadata key."""
    op: str
    value: Any = None


@dataclass(frozen=True)
class Query:
    terms: tuple[Term, ...]
    sort: str
    descending: bool

    @property
    def digest(self) -> str:
        """What a cursor is bound to: the terms and the order."""
        raw = orjson.dumps([[t.key, t.op, t.value] for t in self.terms] + [self.sort, self.descending],
                           option=orjson.OPT_SORT_KEYS)
        return hashlib.blake2b(raw, digest_size=6).hexdigest()


def _refuse(message: str, argument: str, **details: Any) -> SchemaDocError:
    return SchemaDocError("invalid-request", message, {"argument": argument, **details})


def _check_key(key: str, members: Sequence[str]) -> None:
    if key in META_KEYS:
        return
    if not key.startswith("/"):
        raise _refuse(f"{key!r} is neither a JSON Pointer nor one of {', '.join(META_KEYS)}.", "where")
    if key not in members:
        raise SchemaDocError("filter-not-indexed", f"{key} is not an indexed member.",
                             {"member": key, "indexed": list(members), "metadata": list(META_KEYS)})


def _check_value(term: Term) -> None:
    value, op = term.value, term.op
    if op == "exists":
        if not isinstance(value, bool):
            raise _refuse("exists takes true or false.", "where")
    elif op == "in":
        if not isinstance(value, list) or not value or not all(value_kind(v) for v in value):
            raise _refuse("in takes a non-empty list of scalars.", "where")
    elif op in ("prefix", "contains"):
        if not isinstance(value, str):
            raise _refuse(f"{op} takes a string.", "where")
    elif op in ("lt", "gt", "le", "ge"):
        if value_kind(value) not in ("n", "s"):
            raise _refuse(f"{op} takes a number or a string.", "where")
    elif value_kind(value) is None:
        raise _refuse(f"{op} takes a scalar.", "where")
    if term.key == "valid" and op not in ("eq", "ne", "exists"):
        raise _refuse("valid takes eq, ne or exists.", "where")


def parse_query(where: Sequence[Any] | None, sort: str | None, members: Sequence[str]) -> Query:
    """Check ``where`` (``[[key, op, value], ...]``, all must hold) and ``sort`` (a key, ``-`` first for
    descending; default ``created``) against the indexed ``members``."""
    terms: list[Term] = []
    for item in where or ():
        if isinstance(item, str):
            item = _spelled(item)
        if not isinstance(item, list) or len(item) not in (2, 3) or not all(isinstance(x, str) for x in item[:2]):
            raise _refuse("Each filter is [key, op, value]: key a JSON Pointer or metadata key, op one of "
                          f"{', '.join(OPS)}.", "where", filter=item)
        key, op = item[0], item[1]
        if op not in OPS:
            raise _refuse(f"Unknown filter operator {op!r}: use one of {', '.join(OPS)}.", "where")
        term = Term(key, op, item[2] if len(item) == 3 else (True if op == "exists" else None))
        if len(item) == 2 and op != "exists":
            raise _refuse(f"{op} needs a value.", "where", filter=item)
        _check_key(key, members)
        _check_value(term)
        terms.append(term)
    if len(terms) > MAX_TERMS:
        raise _refuse(f"At most {MAX_TERMS} filters.", "where")
    sort = sort or "created"
    descending = sort.startswith("-")
    key = sort[1:] if descending else sort
    _check_key(key, members)
    return Query(tuple(terms), key, descending)


def _spelled(text: str) -> list[Any]:
    """``"key op value"`` as ``[key, op, value]``: the value is JSON when it parses, else the text."""
    parts = text.strip().split(None, 2)
    if len(parts) == 3:
        with contextlib.suppress(orjson.JSONDecodeError):
            parts[2] = orjson.loads(parts[2])
    return parts


def encode_cursor(query: Query, values: Sequence[Any]) -> str:
    """An opaque cursor: the query's digest and the last row's sort values."""
    return base64.urlsafe_b64encode(orjson.dumps([query.digest, *values])).decode().rstrip("=")


def decode_cursor(query: Query, cursor: str, fits: Callable[[list[Any]], bool] | None = None) -> list[Any]:
    """The sort values a cursor carries; ``invalid-request`` when it is malformed, from another query, or (``fits``)
    its values are not of the query's order (a cursor is not signed: one made by hand has the right digest)."""
    try:
        raw = orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, orjson.JSONDecodeError):
        raw = None
    if not isinstance(raw, list) or len(raw) < 2 or raw[0] != query.digest or (fits is not None and not fits(raw[1:])):
        raise _refuse("The cursor is not one this listing returned (same filters and sort).", "cursor")
    return raw[1:]
