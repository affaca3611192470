"""Near-misses of Draft 2020-12 keywords: ``requird``, ``minLenght``, ``Pattern``, ``ref``.

JSON Schema ignores keywords it does not know, so a misspelt one is legal and enforces nothing: a schema with
``"requird": ["title"]`` loads and accepts a document without a title. :func:`near_misses` finds the unknown
members of every schema object (wherever a keyword is expected: the root, ``properties`` values, ``items``,
``allOf`` members, ``$defs`` entries, ...; never ``properties`` names or the values of ``const``, ``enum``,
``default``, ``examples`` or of an unknown keyword) that are close to a known keyword, and names the likely
intent. They are warnings, never errors: unknown keywords stay legal.

Close means: the same but for case (``readonly``) or a ``$`` (``ref``, ``$title``), or one edit away (an
insertion, a deletion, a substitution or two neighbours swapped: ``requird``, ``minLenght``, ``tpye``) for
names of four characters or more, two edits for names of nine or more, three for fourteen or more
(``additionalProperty``). Members starting ``x-`` are extensions by convention
and never reported.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from schemadoc.schema._keywords import format_pointer, iter_subschemas

__all__ = ["KEYWORDS", "closest_keyword", "near_misses"]

# Every keyword of the Draft 2020-12 vocabularies, and the older ones a 2020-12 schema may still carry.
KEYWORDS = frozenset({
    # core
    "$schema", "$id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary", "$comment", "$defs",
    # applicator and unevaluated
    "prefixItems", "items", "contains", "additionalProperties", "properties", "patternProperties",
    "dependentSchemas", "propertyNames", "if", "then", "else", "allOf", "anyOf", "oneOf", "not",
    "unevaluatedItems", "unevaluatedProperties",
    # validation
    "type", "const", "enum", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxContains", "minContains",
    "maxProperties", "minProperties", "required", "dependentRequired",
    # meta-data, format, content
    "title", "description", "default", "deprecated", "readOnly", "writeOnly", "examples", "format",
    "contentEncoding", "contentMediaType", "contentSchema",
    # earlier drafts, still understood by many tools
    "definitions", "dependencies", "additionalItems", "$recursiveRef", "$recursiveAnchor",
})
_FOLDED = {keyword.lower().lstrip("$"): keyword for keyword in KEYWORDS}


def _edits(a: str, b: str, limit: int) -> int:
    """The optimal string alignment distance of ``a`` and ``b`` (Damerau-Levenshtein without repeated edits of
    one substring), or ``limit + 1`` once it is certainly over ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    before: list[int] | None = None
    previous = list(range(len(b) + 1))
    for i, char in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, other in enumerate(b, 1):
            cost = char != other
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if before is not None and i > 1 and j > 1 and char == b[j - 2] and a[i - 2] == other:
                current[j] = min(current[j], before[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        before, previous = previous, current
    return previous[-1]


def closest_keyword(name: str) -> str | None:
    """The known keyword ``name`` most likely means, or ``None`` when it is known itself or close to none."""
    if name in KEYWORDS or name.startswith("x-"):
        return None
    folded = name.lower().lstrip("$")
    if folded in _FOLDED:
        return _FOLDED[folded]
    if len(folded) < 4:
        return None
    limit = 1 if len(folded) < 9 else 2 if len(folded) < 14 else 3
    best: tuple[int, str] | None = None
    for candidate, keyword in _FOLDED.items():
        distance = _edits(folded, candidate, limit)
        if distance <= limit and (best is None or (distance, keyword) < best):
            best = (distance, keyword)
    return best[1] if best is not None else None


def _walk(schema: Any, tokens: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], str, str]]:
    if not isinstance(schema, dict):
        return
    for name in schema:
        keyword = closest_keyword(name)
        if keyword is not None:
            yield (*tokens, name), name, keyword
    for relative, subschema, _in_place in iter_subschemas(schema):
        yield from _walk(subschema, tokens + relative)


def near_misses(documents: Iterable[tuple[str, Any]]) -> list[dict[str, str]]:
    """Every near-miss in ``documents`` (``(uri, schema)`` pairs: the root and the files its ``$ref`` s read), each
    ``{"file", "pointer", "keyword", "suggestion", "reason"}``: ``pointer`` is the JSON Pointer of the member in
    ``file``, ``keyword`` its name as written, ``suggestion`` the keyword it likely means."""
    found: list[dict[str, str]] = []
    for uri, contents in documents:
        file = uri.removeprefix("file://")
        for tokens, name, keyword in _walk(contents, ()):
            found.append({"file": file, "pointer": format_pointer(tokens), "keyword": name, "suggestion": keyword,
                          "reason": f"{name!r} is not a JSON Schema keyword, so it is ignored and checks nothing: "
                                    f"did you mean {keyword!r}?"})
    return found
