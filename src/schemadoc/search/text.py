"""The full-text query language and the highlighted snippets, the same whichever database ranks.

A query is words, ``"quoted phrases"`` and prefixes (``light*``); every part must match (AND). Words are
runs of letters and digits, compared without case. ``state-of-the-art`` (several words in one part) is a
phrase. Snippets are made here from the unit's text: HTML-escaped, each matching word in ``<mark>``.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from schemadoc.errors import SchemaDocError

__all__ = ["Part", "TextQuery", "parse_text_query", "snippet", "words_of"]

_WORD = re.compile(r"[^\W_]+")
_PART = re.compile(r'"([^"]*)"(\*?)|(\S+)')
_SNIPPET_WORDS = 24
MAX_PARTS = 16


@dataclass(frozen=True)
class Part:
    words: tuple[str, ...]
    prefix: bool
    """The last word is a prefix."""


@dataclass(frozen=True)
class TextQuery:
    parts: tuple[Part, ...]

    def fts5(self) -> str:
        """The SQLite FTS5 MATCH expression (every word quoted: nothing of the query is FTS5 syntax)."""
        return " ".join('"' + " ".join(p.words) + '"' + ("*" if p.prefix else "") for p in self.parts)

    def tsquery(self) -> str:
        """The PostgreSQL ``to_tsquery('simple', ...)`` expression (words are letters and digits only)."""
        def part(p: Part) -> str:
            words = [f"'{w}'" for w in p.words]
            if p.prefix:
                words[-1] += ":*"
            return "(" + " <-> ".join(words) + ")"
        return " & ".join(part(p) for p in self.parts)

    def matches(self, word: str) -> bool:
        """Whether one word of a text is one the query looks for (for the snippet)."""
        for p in self.parts:
            for i, w in enumerate(p.words):
                last = p.prefix and i == len(p.words) - 1
                if word == w or (last and word.startswith(w)):
                    return True
        return False


def words_of(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def parse_text_query(query: str) -> TextQuery:
    """The parts of a query; ``invalid-request`` when it has no word."""
    parts: list[Part] = []
    for match in _PART.finditer(query):
        if match.group(3) is not None:
            raw = match.group(3)
            prefix = raw.endswith("*")
        else:
            raw, prefix = match.group(1), bool(match.group(2))
        words = tuple(words_of(raw))
        if words:
            parts.append(Part(words, prefix))
    if not parts:
        raise SchemaDocError("invalid-request", "The query has no word to look for (letters or digits).",
                             {"argument": "query"})
    if len(parts) > MAX_PARTS:
        raise SchemaDocError("invalid-request", f"At most {MAX_PARTS} words or phrases in a query.",
                             {"argument": "query"})
    return TextQuery(tuple(parts))


def snippet(text: str, query: TextQuery) -> str:
    """About 24 words of ``text`` around its first match, escaped, the matching words in ``<mark>``."""
    spans = [(m.start(), m.end(), query.matches(m.group().lower())) for m in _WORD.finditer(text)]
    first = next((i for i, span in enumerate(spans) if span[2]), 0)
    start = max(first - _SNIPPET_WORDS // 3, 0)
    end = min(start + _SNIPPET_WORDS, len(spans))
    if not spans:
        return html.escape(text[:160])
    left = spans[start][0] if start else 0
    right = spans[end - 1][1] if end < len(spans) else len(text)
    out: list[str] = ["…" if left else ""]
    at = left
    for s, e, hit in spans[start:end]:
        if hit:
            out.append(html.escape(text[at:s]) + "<mark>" + html.escape(text[s:e]) + "</mark>")
            at = e
    out.append(html.escape(text[at:right]) + ("…" if right < len(text) else ""))
    return "".join(out)
