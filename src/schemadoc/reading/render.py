"""A readable Markdown rendering of a node, driven by the schema.

Objects with a ``title`` (or ``name``) member become headings one level below their parent; other
members follow, in the schema's order, as labelled paragraphs (long text) or ``**Label**: value``
lines, every label the schema's ``title`` or else the words of the key ("Learning outcomes" for
``learningOutcomes``); arrays of scalars become bullet lists, arrays of titled objects a sequence of
sub-sections, other arrays of objects a heading with their label and one numbered sub-section per
item. Rendering stops before the byte budget; ``next_offset`` says which child of the node to render
from next.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from schemadoc.pointer import format_pointer
from schemadoc.reading.schemas import NodeSchemas, properties
from schemadoc.reading.views import Window, child_pointer

__all__ = ["Rendered", "heading", "render_markdown", "words"]

_PARAGRAPH_FROM = 80


@dataclass(frozen=True)
class Rendered:
    text: str
    truncated: bool
    window: Window | None
    continue_at: str | None = None
    """When the first child alone is over the budget: its pointer (render it to go on, a level deeper;
    the window counts it, so ``next_offset`` is the child after it)."""


_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+|[^\W_]+")


def words(key: str) -> str:
    """A member name as words: camelCase, PascalCase, snake_case and kebab-case split, the first capitalised."""
    found = _WORD.findall(key)
    if not found:
        return key
    text = " ".join(word if word.isupper() and len(word) > 1 else word.lower() for word in found)
    return text[:1].upper() + text[1:]


def heading(value: Any) -> str | None:
    """The ``title`` (else ``name``) string member of an object: the heading it makes of its own."""
    if isinstance(value, dict):
        return next((value[m] for m in ("title", "name") if isinstance(value.get(m), str)), None)
    return None


def _ordered(value: dict[str, Any], tokens: list[str | int], schemas: NodeSchemas) -> list[tuple[str, Any]]:
    """The members of ``value`` in the schema's order of ``properties`` (the others after, as they are)."""
    ranked = {name: index for index, name in enumerate(properties(schemas.get(tokens)))}
    return sorted(value.items(), key=lambda item: ranked.get(item[0], len(ranked)))


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _is_scalar_list(value: Any) -> bool:
    return isinstance(value, list) and all(not isinstance(item, dict | list) for item in value)


def _render(value: Any, tokens: list[str | int], level: int, schemas: NodeSchemas, out: list[str]) -> None:
    """``value`` with its heading (if it has one) at ``level``."""
    if isinstance(value, dict):
        title = heading(value)
        if title is not None:
            out.append(f"{'#' * min(level, 6)} {title}\n\n")
        for name, member in _ordered(value, tokens, schemas):
            if title is None or member is not title:
                _member(name, member, [*tokens, name], level + (title is not None), schemas, out)
    elif _is_scalar_list(value):
        out.extend(f"- {_scalar(item)}\n" for item in value)
        if value:
            out.append("\n")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _render(item, [*tokens, index], level, schemas, out)
    else:
        out.append(f"{_scalar(value)}\n\n")


def _member(name: str, member: Any, tokens: list[str | int], level: int, schemas: NodeSchemas,
            out: list[str]) -> None:
    """A member of an object whose own members are at heading ``level``; its label is the schema's ``title``,
    else the words of its name."""
    label = schemas.title(tokens) or words(name)
    if isinstance(member, str) and (len(member) >= _PARAGRAPH_FROM or "\n" in member):
        out.append(f"**{label}**\n\n{member}\n\n")
    elif not isinstance(member, dict | list):
        out.append(f"**{label}**: {_scalar(member)}\n\n")
    elif (isinstance(member, dict) and heading(member) is None) or (_is_scalar_list(member) and member):
        out.append(f"**{label}**\n\n")
        _render(member, tokens, level, schemas, out)
    elif isinstance(member, list) and not all(heading(item) is not None for item in member):
        # items without a title of their own: the array's label as a heading, each item numbered below it
        out.append(f"{'#' * min(level, 6)} {label}\n\n")
        for index, item in enumerate(member):
            if isinstance(item, dict) and heading(item) is None:
                out.append(f"{'#' * min(level + 1, 6)} {label} {index + 1}\n\n")
                _render(item, [*tokens, index], level + 2, schemas, out)
            else:
                _render(item, [*tokens, index], level + 1, schemas, out)
    elif not _is_scalar_list(member):
        _render(member, tokens, level, schemas, out)


def render_markdown(node: Any, tokens: list[str | int], schemas: NodeSchemas, *, offset: int = 0,
                    limit: int | None = None, max_bytes: int | None = None) -> Rendered:
    """Markdown of ``node`` (of its children from ``offset``, at most ``limit`` of them)."""
    if isinstance(node, str):  # a window of its characters: next_offset goes on where the budget stopped
        return _render_string(node, offset, limit, max_bytes)
    if not isinstance(node, dict | list):
        text = f"{_scalar(node)}\n"
        return Rendered(_cut(text, max_bytes), max_bytes is not None and len(text.encode()) > max_bytes, None)
    pointer = format_pointer(tokens)
    stop = None if limit is None else offset + limit
    title = heading(node)
    pieces = [f"# {title}\n\n"] if title is not None and offset == 0 else []
    used = len(pieces[0].encode()) if pieces else 0
    shown = 0
    truncated = False
    continue_at: str | None = None
    children = _ordered(node, tokens, schemas)[offset:stop] if isinstance(node, dict) \
        else enumerate(node[offset:stop], start=offset)
    for key, child in children:
        part: list[str] = []
        if isinstance(key, str):
            if title is None or child is not title:
                _member(key, child, [*tokens, key], 1 + (title is not None), schemas, part)
        elif isinstance(child, dict | list):
            _render(child, [*tokens, key], 1, schemas, part)
        else:
            part.append(f"- {_scalar(child)}\n")
        chunk = "".join(part)
        size = len(chunk.encode())
        if max_bytes is not None and used + size > max_bytes:
            truncated = True
            if shown == 0:  # one child larger than the budget: its beginning, cut, and where to go deeper
                pieces.append(_cut(chunk, max_bytes - used))
                continue_at = child_pointer(pointer, key)
                shown = 1  # begun here and continued at its own pointer, it counts: next_offset goes past it
            break
        pieces.append(chunk)
        used += size
        shown += 1
    return Rendered("".join(pieces), truncated, Window(len(node), offset, shown), continue_at)


def _render_string(node: str, offset: int, limit: int | None, max_bytes: int | None) -> Rendered:
    """Characters ``offset`` to ``offset + limit`` of a string node, as many as fit ``max_bytes`` (one at least)."""
    start = min(offset, len(node))
    part = node[start: None if limit is None else start + limit]
    if max_bytes is not None and len(part.encode(errors="surrogatepass")) + 1 > max_bytes:
        data = part.encode(errors="surrogatepass")[: max(max_bytes - 1, 4)]
        cut = data.decode(errors="ignore")
        part = cut if cut else part[:1]
    end = start + len(part)
    text = part + "\n" if end >= len(node) else part
    return Rendered(text, end < len(node) and (limit is None or end < start + limit),
                    Window(len(node), start, len(part)))


def _cut(text: str, max_bytes: int | None) -> str:
    if max_bytes is None:
        return text
    data = text.encode()
    if len(data) <= max_bytes:
        return text
    return data[: max(max_bytes - 3, 0)].decode(errors="ignore") + "…"
