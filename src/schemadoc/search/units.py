"""The text units of a document: what the full-text index (and any index extension) is built from.

A unit is one string leaf worth indexing, named by its JSON Pointer: ``TextUnit("/chapters/0/title",
"The lamp")``. A string is worth indexing when it holds a letter or a digit; longer ones are cut at
:data:`MAX_UNIT_CHARS`. A document's units are listed in document order.

A write changes the units below the places its patch reached, never the others: :func:`changed_units`
reads the patch's paths (the cost of the edit, not of the document) and says which pointers' units are
gone (every unit at or below each returned prefix) and which units the new content has there. An
``add``/``remove``/``move`` at an array index shifts the items after it, so the prefix is the array.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from schemadoc.pointer import escape, parse

__all__ = ["LABEL_MEMBERS", "MAX_UNIT_CHARS", "TextUnit", "UnitChange", "changed_units", "document_label",
           "is_below", "label_changed", "text_units"]

MAX_UNIT_CHARS = 4_000
"""A string leaf longer than this is indexed by its first 4,000 characters."""
LABEL_MEMBERS = ("title", "name", "label", "code")
_LABEL_CHARS = 80


class TextUnit(NamedTuple):
    pointer: str
    """JSON Pointer of the string leaf (``""`` for a document that is one string)."""
    text: str


@dataclass(frozen=True)
class UnitChange:
    """What one write did to a document's units."""

    removed: tuple[str, ...]
    """Pointer prefixes: every unit at or below each of them is gone (the root ``""`` means all)."""
    added: tuple[TextUnit, ...]
    """The units the new content has below those prefixes."""
    label: str | None
    """The document's label after the write."""


def _worth(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


def text_units(node: Any, pointer: str = "") -> Iterator[TextUnit]:
    """The units of ``node`` (found at ``pointer``) in document order."""
    stack: list[tuple[Any, str]] = [(node, pointer)]
    while stack:
        value, here = stack.pop()
        if isinstance(value, str):
            if _worth(value):
                yield TextUnit(here, value[:MAX_UNIT_CHARS])
        elif isinstance(value, dict):
            stack.extend((child, f"{here}/{escape(key)}") for key, child in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((value[i], f"{here}/{i}") for i in range(len(value) - 1, -1, -1))


def document_label(content: Any) -> str | None:
    """Something to recognise a document by: its first title-like root member that is text (``title``,
    ``name``, ``label``, ``code``), at most 80 characters; None when it has none."""
    if isinstance(content, dict):
        for member in LABEL_MEMBERS:
            value = content.get(member)
            if isinstance(value, str) and value.strip():
                return value if len(value) <= _LABEL_CHARS else value[:_LABEL_CHARS - 1] + "…"
    return None


def is_below(pointer: str, prefix: str) -> bool:
    """Whether ``pointer`` is ``prefix`` or lies below it."""
    return prefix == "" or pointer == prefix or pointer.startswith(prefix + "/")


def _is_index(token: str) -> bool:
    return token == "-" or token.isdigit()


def _touched(patch: Iterable[dict[str, Any]]) -> list[str]:
    """The pointer prefixes a patch may have changed anything below."""
    found: list[str] = []
    for operation in patch:
        op = operation.get("op")
        if op == "test":
            continue
        paths = [operation.get("path", "")]
        if op == "move":
            paths.append(operation.get("from", ""))
        for path in paths:
            if not isinstance(path, str):
                return [""]
            tokens = parse(path) if path else []
            if tokens and op != "replace" and _is_index(tokens[-1]):
                path = path[:path.rfind("/")]  # the items after it shift: the array is the change
            found.append(path)
    return found


def _outermost(prefixes: Iterable[str]) -> list[str]:
    """The prefixes no other one of them lies above, in sorted order."""
    kept: list[str] = []
    for prefix in sorted(set(prefixes)):
        if not any(is_below(prefix, outer) for outer in kept):
            kept.append(prefix)
    return kept


def _node_at(content: Any, pointer: str) -> tuple[bool, Any]:
    node = content
    for token in parse(pointer) if pointer else []:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return False, None
    return True, node


def changed_units(content: Any, patch: Sequence[dict[str, Any]]) -> UnitChange:
    """What a write whose RFC 6902 ``patch`` made ``content`` (the new content) did to the document's units."""
    removed = _outermost(_touched(patch))
    added: list[TextUnit] = []
    for prefix in removed:
        found, node = _node_at(content, prefix)
        if found:
            added.extend(text_units(node, prefix))
    return UnitChange(tuple(removed), tuple(added), document_label(content))


def label_changed(patch: Iterable[dict[str, Any]]) -> bool:
    """Whether a patch may have changed the document's label (it reached the root or a label member)."""
    return any(prefix == "" or prefix.split("/")[1] in LABEL_MEMBERS for prefix in _touched(patch))
