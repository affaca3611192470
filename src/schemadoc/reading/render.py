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

import itertools
import re
from dataclasses import dataclass
from typing import Any

from schemadoc.pointer import escape
from schemadoc.reading.schemas import NodeSchemas
from schemadoc.reading.views import Window

__all__ = ["Rendered", "render_markdown", "words"]

_HEADING_MEMBERS = ("title", "name")
_PARAGRAPH_FROM = 80


@dataclass(frozen=True)
class Rendered:
    text: str
    truncated: bool
    window: Window | None
    continue_at: str | None = None
    """When the first child alone is over the budget: its pointer (render it to go on, a level deeper;
    the window counts it, so ``next_offset`` is the child after it)."""


def _label(schemas: NodeSchemas, tokens: list[str | int], name: str) -> str:
    """The schema's ``title``, else the words of the key: ``learningOutcomes`` and ``learning_outcomes`` read
    "Learning outcomes"."""
    return schemas.title(tokens) or words(name)


_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+|[^\W_]+")


def words(key: str) -> str:
    """A member name as words: camelCase, PascalCase, snake_case and kebab-case split, the first capitalised."""
    found = _WORD.findall(key)
    if not found:
        return key
    text = " ".join(word if word.isupper() and len(word) > 1 else word.lower() for word in found)
    return text[:1].upper() + text[1:]


def _ordered(value: dict[str, Any], tokens: list[str | int], schemas: NodeSchemas) -> list[tuple[str, Any]]:
    """The members of ``value`` in the schema's order of ``properties`` (the others after, as they are)."""
    schema = schemas.get(tokens)
    order: list[str] = []
    if isinstance(schema, dict):
        for part in [schema, *[p for p in schema.get("allOf", []) if isinstance(p, dict)]]:
            found = part.get("properties")
            if isinstance(found, dict):
                order += [name for name in found if name not in order]
    ranked = {name: index for index, name in enumerate(order)}
    return sorted(value.items(), key=lambda item: ranked.get(item[0], len(ranked)))


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _render(value: Any, tokens: list[str | int], level: int, schemas: NodeSchemas, out: list[str]) -> None:
    """``value`` with its heading (if it has one) at ``level``."""
    if isinstance(value, dict):
        heading = next((value[m] for m in _HEADING_MEMBERS if isinstance(value.get(m), str)), None)
        if heading is not None:
            out.append(f"{'#' * min(level, 6)} {heading}\n\n")
        inner = level + 1 if heading is not None else level
        for name, member in _ordered(value, tokens, schemas):
            if heading is not None and member is heading:
                continue
            _member(name, member, [*tokens, name], inner, schemas, out)
    elif isinstance(value, list):
        if all(not isinstance(item, dict | list) for item in value):
            out.extend(f"- {_scalar(item)}\n" for item in value)
            if value:
                out.append("\n")
        else:
            for index, item in enumerate(value):
                _render(item, [*tokens, index], level, schemas, out)
    else:
        out.append(f"{_scalar(value)}\n\n")


def _member(name: str, member: Any, tokens: list[str | int], level: int, schemas: NodeSchemas,
            out: list[str]) -> None:
    """A member of an object whose own members are at heading ``level``."""
    if isinstance(member, str) and (len(member) >= _PARAGRAPH_FROM or "\n" in member):
        out.append(f"**{_label(schemas, tokens, name)}**\n\n{member}\n\n")
    elif not isinstance(member, dict | list):
        out.append(f"**{_label(schemas, tokens, name)}**: {_scalar(member)}\n\n")
    elif isinstance(member, dict) and not any(isinstance(member.get(m), str) for m in _HEADING_MEMBERS):
        out.append(f"**{_label(schemas, tokens, name)}**\n\n")
        _render(member, tokens, level, schemas, out)
    elif isinstance(member, list) and all(not isinstance(item, dict | list) for item in member):
        if member:
            out.append(f"**{_label(schemas, tokens, name)}**\n\n")
            _render(member, tokens, level, schemas, out)
    elif isinstance(member, list) and not all(_headed(item) for item in member):
        # items without a title of their own: the array's label as a heading, each item numbered below it
        label = _label(schemas, tokens, name)
        out.append(f"{'#' * min(level, 6)} {label}\n\n")
        for index, item in enumerate(member):
            item_tokens = [*tokens, index]
            if isinstance(item, dict) and not _headed(item):
                out.append(f"{'#' * min(level + 1, 6)} {label} {index + 1}\n\n")
                _render(item, item_tokens, level + 2, schemas, out)
            else:
                _render(item, item_tokens, level + 1, schemas, out)
    else:
        _render(member, tokens, level, schemas, out)


def _headed(value: Any) -> bool:
    """Whether ``value`` is an object that makes its own heading (a title or name)."""
    return isinstance(value, dict) and any(isinstance(value.get(m), str) for m in _HEADING_MEMBERS)


def render_markdown(node: Any, tokens: list[str | int], schemas: NodeSchemas, *, offset: int = 0,
                    limit: int | None = None, max_bytes: int | None = None) -> Rendered:
    """Markdown of ``node`` (of its children from ``offset``, at most ``limit`` of them)."""
    if isinstance(node, str):  # a window of its characters: next_offset goes on where the budget stopped
        return _render_string(node, offset, limit, max_bytes)
    if not isinstance(node, dict | list):
        text = f"{_scalar(node)}\n"
        return Rendered(_cut(text, max_bytes), max_bytes is not None and len(text.encode()) > max_bytes, None)
    pointer = "".join(f"/{escape(t) if isinstance(t, str) else t}" for t in tokens)
    continue_at: str | None = None
    total = len(node)
    stop = None if limit is None else offset + limit
    pieces: list[str] = []
    used = 0
    shown = 0
    truncated = False
    if isinstance(node, dict):
        heading = next((node[m] for m in _HEADING_MEMBERS if isinstance(node.get(m), str)), None)
        # islice takes no index beyond sys.maxsize
        children: Any = itertools.islice(_ordered(node, tokens, schemas), min(offset, len(node)),
                                         None if stop is None else min(stop, len(node)))
        if heading is not None and offset == 0:
            pieces.append(f"# {heading}\n\n")
            used = len(pieces[0].encode())
        for name, member in children:
            part: list[str] = []
            if not (heading is not None and member is heading):
                _member(name, member, [*tokens, name], 2 if heading is not None else 1, schemas, part)
            chunk = "".join(part)
            size = len(chunk.encode())
            if max_bytes is not None and used + size > max_bytes:
                truncated = True
                if shown == 0:  # one child larger than the budget: its beginning, cut, and where to go deeper
                    pieces.append(_cut(chunk, max_bytes - used))
                    continue_at = f"{pointer}/{escape(name)}"
                break
            pieces.append(chunk)
            used += size
            shown += 1
    else:
        for index, item in enumerate(node[offset:stop], start=offset):
            part = []
            _render(item, [*tokens, index], 1, schemas, part) if isinstance(item, dict | list) \
                else part.append(f"- {_scalar(item)}\n")
            chunk = "".join(part)
            size = len(chunk.encode())
            if max_bytes is not None and used + size > max_bytes:
                truncated = True
                if shown == 0:
                    pieces.append(_cut(chunk, max_bytes - used))
                    continue_at = f"{pointer}/{index}"
                break
            pieces.append(chunk)
            used += size
            shown += 1
    # a child begun here and continued at its own pointer counts as shown: next_offset goes past it
    return Rendered("".join(pieces), truncated, Window(total, offset, shown + (continue_at is not None)), continue_at)


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
