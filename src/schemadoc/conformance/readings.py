"""Where the spec leaves room, every reading it allows is accepted: the one place these decisions live.

Everywhere else the suite is strict (codes, versions, contents, which paths fail and how).

1. **Error category** (FR-097: "HTTP-style category (4xx client/5xx server)"; the spec's examples write
   ``"category": "409"``). Accepted: the catalog status as a string (``"409"``) or an integer (``409``),
   or its class (``"4xx"``, any case). Not accepted: another status, or a class that is not the status's.
2. **The root pointer** (FR-025 says the root is ``/``; RFC 6901, which FR-021 adopts, spells it ``""``).
   Wherever a server *reports* a pointer (a violation's path, a deepest ancestor), ``""`` and ``"/"``
   both mean the root. Requests keep sending ``/`` for the root, as FR-025 says.
3. **``expected`` and ``actual`` of a violation** (FR-060: "schema constraint violated, actual value
   provided, and expected constraint", shape unspecified). ``expected`` may be the constraint's value
   (``1``), an object holding it (``{"minimum": 1}``) or a text naming it (``"minimum 1"``); ``actual``
   may be the value, its JSON text, or (for a type mismatch) its JSON type name. Exactness of numbers
   is still checked where the value itself is given (integers beyond 64 bits must travel exactly).
4. **doc_ids** (FR-109: "26-character case-insensitive encoding"). A ULID a server reports (a result's
   ``doc_id``, a list entry, an error's ``details.doc_id``, a resource URI, a history or feed entry, an
   event) names the same document in either case: every comparison of ids goes through :func:`same_id` or
   :func:`id_key`.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["category_matches", "expected_matches", "id_key", "ids_in", "is_root", "same_id", "same_pointer",
           "status_of", "value_matches"]


def category_matches(category: Any, status: int) -> bool:
    """Reading 1: is ``category`` a way of spelling the HTTP ``status``?"""
    if isinstance(category, bool):
        return False
    if isinstance(category, int):
        return category == status
    if not isinstance(category, str):
        return False
    text = category.strip().lower()
    return text == str(status) or text == f"{status // 100}xx"


def status_of(category: Any, code_status: int | None) -> int:
    """The status a ``category`` stands for: itself, or the catalog's status when it is only a class."""
    if code_status is not None and category_matches(category, code_status):
        return code_status
    try:
        return int(category)
    except (TypeError, ValueError):
        return 0


def is_root(pointer: Any) -> bool:
    """Reading 2: ``""`` and ``"/"`` both name the root when a server reports a pointer."""
    return pointer in ("", "/")


def same_pointer(reported: Any, expected: str) -> bool:
    """A pointer a server reported equals ``expected``, the root spelled either way."""
    return is_root(reported) if is_root(expected) else reported == expected


_ULID_ANY_CASE = re.compile(r"[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{26}")


def id_key(doc_id: Any) -> Any:
    """Reading 4: the key a doc_id is compared, kept and looked up by (a ULID in upper case; anything else
    as it is, so that a non-string still fails the comparison it is in)."""
    return doc_id.upper() if isinstance(doc_id, str) else doc_id


def same_id(reported: Any, expected: str) -> bool:
    """Reading 4: ``reported`` names the document ``expected`` names, in either case."""
    return isinstance(reported, str) and id_key(reported) == id_key(expected)


def ids_in(text: str, doc_id: str) -> str:
    """Reading 4: ``text`` with every spelling of ``doc_id`` in it written as ``doc_id`` (a URI, a message)."""
    pattern = re.compile(re.escape(doc_id), re.IGNORECASE) if _ULID_ANY_CASE.fullmatch(doc_id) else None
    return pattern.sub(lambda _match: doc_id, text) if pattern is not None else text


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def expected_matches(reported: Any, constraint: Any) -> bool:
    """Reading 3: ``reported`` (a violation's ``expected``) states the constraint value ``constraint``."""
    if reported == constraint and type(reported) is type(constraint):
        return True
    if isinstance(reported, dict):
        return any(expected_matches(value, constraint) for value in reported.values())
    if isinstance(reported, list):
        return constraint in reported or reported == [constraint]
    if isinstance(reported, str):
        text = constraint if isinstance(constraint, str) else json.dumps(constraint)
        return text in reported
    return False


def value_matches(reported: Any, value: Any) -> bool:
    """Reading 3: ``reported`` (a violation's ``actual``) is ``value``, its JSON text or its JSON type name."""
    if reported == value and type(reported) is type(value):
        return True
    if isinstance(reported, str):
        return reported in (json.dumps(value), _json_type(value)) or (
            _json_type(value) == "integer" and reported == "number")
    return False
