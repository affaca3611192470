"""Example values built from a node schema: what an agent could write there.

Taken from the schema's own words first (``examples``, ``const``, ``enum``, ``default``), else
built from the type and its constraints (required members, ``minItems``, ``minimum``, string
``format`` and ``pattern``). The caller checks the example against the schema; here we only try
to make one that should pass. ``avoid`` asks for a value different from it (replacing a default).
"""

from __future__ import annotations

import copy
import re
import re._parser as _sre  # type: ignore[import-not-found]  # the standard library's own regular-expression parser (Python 3.11+)
from collections.abc import Callable, Sequence
from typing import Any

from schemadoc.reading.schemas import SchemaSource, node_schema, parts, properties

__all__ = ["example_for", "fill_defaults", "is_placeholder", "made_up", "made_up_leaves"]

_FORMATS: dict[str, str] = {
    "date-time": "2025-01-01T12:00:00Z", "date": "2025-01-01", "time": "12:00:00Z", "duration": "P1D",
    "email": "author@example.org", "idn-email": "author@example.org", "hostname": "example.org",
    "idn-hostname": "example.org", "uri": "https://example.org/", "iri": "https://example.org/",
    "uri-reference": "https://example.org/", "ipv4": "192.0.2.1", "ipv6": "2001:db8::1",
    "uuid": "123e4567-e89b-42d3-a456-426614174000",
}
_TEXT = "Example text"
_MAX_DEPTH = 12


def example_for(schema: Any, avoid: Any = None, *, nonempty: bool = False, _depth: int = 0) -> tuple[bool, Any]:
    """(found, value): an example for ``schema`` different from ``avoid`` (when ``avoid`` is given). ``nonempty``:
    an array gets one item at least (when its items can be built), so the value is not unfinished at once."""
    if _depth > _MAX_DEPTH or not isinstance(schema, dict):
        return (schema is True and avoid is None, None) if isinstance(schema, bool) else (False, None)

    def different(value: Any) -> bool:
        return avoid is None or value != avoid

    for candidate in schema.get("examples", []) if isinstance(schema.get("examples"), list) else []:
        if different(candidate):
            return True, candidate
    if "const" in schema:
        return different(schema["const"]), schema["const"]
    if isinstance(schema.get("enum"), list):
        if "default" in schema and schema["default"] in schema["enum"] and different(schema["default"]):
            return True, schema["default"]  # the schema's own choice before the first option
        options = [option for option in schema["enum"] if different(option)]
        if avoid is not None:  # prefer a replacement at least as long as what it replaces
            longer = [o for o in options if len(repr(o)) >= len(repr(avoid))]
            options = longer or options
        return (True, options[0]) if options else (False, None)
    if "default" in schema and different(schema["default"]):
        return True, schema["default"]
    for combinator in ("oneOf", "anyOf"):
        branches = schema.get(combinator)
        if isinstance(branches, list):
            for branch in branches:
                found, value = example_for(branch, avoid, nonempty=nonempty, _depth=_depth + 1)
                if found:
                    return True, value
            return False, None
    if isinstance(schema.get("allOf"), list):
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            if isinstance(part, dict):
                for key, value in part.items():
                    if key == "properties" and isinstance(value, dict):
                        merged["properties"] = {**merged.get("properties", {}), **value}
                    elif key == "required" and isinstance(value, list):
                        merged["required"] = [*merged.get("required", []), *value]
                    else:
                        merged.setdefault(key, value)
        return example_for(merged, avoid, nonempty=nonempty, _depth=_depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    if kind is None:
        kind = "object" if "properties" in schema else "array" if "items" in schema else "string"
    if kind == "object":
        return _object(schema, _depth, nonempty)
    if kind == "array":
        return _array(schema, _depth, nonempty)
    if kind == "string":
        return _string(schema, different)
    if kind in ("integer", "number"):
        return _number(schema, kind, different)
    if kind == "boolean":
        return True, avoid is not True
    if kind == "null":
        return different(None), None
    return False, None


def is_placeholder(schema: Any, value: Any) -> bool:
    """Whether ``value`` (an example for ``schema``) was made up rather than taken from the schema's words
    (``default``, ``const``, ``examples``, ``enum``): a made-up value stands in for real content."""
    if not isinstance(schema, dict):
        return True
    if any(word in schema and schema[word] == value for word in ("default", "const")):
        return False
    if any(isinstance(schema.get(word), list) and value in schema[word] for word in ("examples", "enum")):
        return False
    if isinstance(value, bool) or value is None or (isinstance(value, list) and not value):
        return False  # a boolean or null is a choice, not a stand-in for content
    if isinstance(value, dict):
        members = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
        return any(is_placeholder(members.get(name, {}), member) for name, member in value.items())
    if isinstance(value, list):
        prefix = schema["prefixItems"] if isinstance(schema.get("prefixItems"), list) else []
        return any(is_placeholder(prefix[i] if i < len(prefix) else schema.get("items", {}), item)
                   for i, item in enumerate(value))
    return True


def made_up(schema: Any, value: Any) -> bool:
    """Whether the scalar ``value`` is the one this module makes up for ``schema`` (not a word of the schema): the
    value a suggested call proposes there as a placeholder."""
    if isinstance(value, dict | list) or not is_placeholder(schema, value):
        return False
    found, example = example_for(schema)
    return found and example == value and type(example) is type(value)


def made_up_leaves(value: Any, tokens: Sequence[str], schemas: Callable[[Sequence[str]], dict[str, Any] | None], *,
                   _depth: int = 0) -> list[str]:
    """The pointers (relative to ``value``, a node at ``tokens``) of the scalars in ``value`` that are made-up
    values (:func:`made_up`): where an example written as it is leaves placeholder content. ``schemas``: the node
    schema at some tokens (None where the schema allows nothing)."""
    if _depth > 64:
        return []
    if not isinstance(value, dict | list):
        schema = schemas(tokens)
        return [""] if schema is not None and made_up(schema, value) else []
    found: list[str] = []
    entries = value.items() if isinstance(value, dict) else ((str(i), item) for i, item in enumerate(value))
    for key, child in entries:
        here = "/" + key.replace("~", "~0").replace("/", "~1")
        found.extend(here + below for below in made_up_leaves(child, [*tokens, key], schemas, _depth=_depth + 1))
    return found


def fill_defaults(value: Any, tokens: Sequence[str], schemas: SchemaSource, *, _depth: int = 0) -> Any:
    """``value`` (a node at ``tokens``) with the defaults the schema gives its absent members filled in, the way
    ``document_create`` builds a document: a member with a ``default`` takes it, a required object member without
    one is built from its own schema; members present are kept (and filled inside), nothing is replaced. Array
    items are filled by the items' schema. A new value: ``value`` itself is not changed."""
    if _depth > 64 or not isinstance(value, dict | list):
        return value
    if isinstance(value, list):
        return [fill_defaults(item, [*tokens, str(index)], schemas, _depth=_depth + 1)
                for index, item in enumerate(value)]
    schema = node_schema(schemas, tokens)
    if schema is None:
        return value
    filled = {name: fill_defaults(member, [*tokens, name], schemas, _depth=_depth + 1)
              for name, member in value.items()}
    required = {name for part in parts(schema) if isinstance(part.get("required"), list)
                for name in part["required"] if isinstance(name, str)}
    for name in properties(schema):
        member_schema = None if name in filled else node_schema(schemas, [*tokens, name])
        if not isinstance(member_schema, dict):
            continue
        kind = member_schema.get("type", "object" if "properties" in member_schema else None)
        if "default" in member_schema:
            filled[name] = fill_defaults(copy.deepcopy(member_schema["default"]), [*tokens, name], schemas,
                                         _depth=_depth + 1)
        elif name in required and kind == "object":
            filled[name] = fill_defaults({}, [*tokens, name], schemas, _depth=_depth + 1)
    return filled


def _each(schemas: list[Any], depth: int, nonempty: bool = False) -> list[Any] | None:
    """An example for each of ``schemas``, or None when one has none."""
    values = []
    for schema in schemas:
        found, value = example_for(schema, nonempty=nonempty, _depth=depth + 1)
        if not found:
            return None
        values.append(value)
    return values


def _object(schema: dict[str, Any], depth: int, nonempty: bool = False) -> tuple[bool, Any]:
    found = schema.get("properties")
    members: dict[str, Any] = found if isinstance(found, dict) else {}
    names = schema["required"] if isinstance(schema.get("required"), list) else []
    values = _each([members.get(name, {"type": "string"}) for name in names], depth, nonempty)
    return (False, None) if values is None else (True, dict(zip(names, values, strict=True)))


def _array(schema: dict[str, Any], depth: int, nonempty: bool = False) -> tuple[bool, Any]:
    need = schema.get("minItems", 0)
    need = need if isinstance(need, int) and need > 0 else 0
    prefix = schema["prefixItems"] if isinstance(schema.get("prefixItems"), list) else []
    if nonempty and need == 0 and schema.get("items") is not False and schema.get("maxItems") != 0 \
            and ("items" in schema or prefix):
        values = _each([prefix[0] if prefix else schema.get("items", {})], depth, nonempty)
        if values is not None:
            return True, values
    if need == 0:
        return True, []
    values = _each([prefix[index] if index < len(prefix) else schema.get("items", {}) for index in range(need)],
                   depth, nonempty)
    return (False, None) if values is None else (True, values)


def _string(schema: dict[str, Any], different: Callable[[Any], bool]) -> tuple[bool, Any]:
    candidates: list[str] = []
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt in _FORMATS:
        candidates.append(_FORMATS[fmt])
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        generated = _from_pattern(pattern)
        if generated is not None:
            candidates.append(generated)
    low = schema.get("minLength", 0) if isinstance(schema.get("minLength"), int) else 0
    high = schema.get("maxLength") if isinstance(schema.get("maxLength"), int) else None
    text = _TEXT if different(_TEXT) else _TEXT + " (revised)"
    text = text + "x" * max(low - len(text), 0)
    candidates.append(text if high is None else text[:high])
    for candidate in candidates:
        if not different(candidate) or len(candidate) < low or (high is not None and len(candidate) > high):
            continue
        if isinstance(pattern, str) and not _matches(pattern, candidate):
            continue
        return True, candidate
    return False, None


def _matches(pattern: str, value: str) -> bool:
    try:
        return re.search(pattern, value) is not None
    except re.error:
        return False


def _number(schema: dict[str, Any], kind: str, different: Callable[[Any], bool]) -> tuple[bool, Any]:
    low = schema.get("minimum")
    if not isinstance(low, int | float) or isinstance(low, bool):
        exclusive = schema.get("exclusiveMinimum")
        low = exclusive + 1 if isinstance(exclusive, int | float) and not isinstance(exclusive, bool) else 1
    high = schema.get("maximum")
    step = schema.get("multipleOf")
    value: Any = low
    if isinstance(step, int | float) and not isinstance(step, bool) and step > 0:
        value = -(-low // step) * step
    for candidate in (value, value + (step if isinstance(step, int | float) else 1)):
        candidate = int(candidate) if kind == "integer" and float(candidate).is_integer() else candidate
        if different(candidate) and (not isinstance(high, int | float) or candidate <= high):
            return True, candidate
    return False, None


# -- strings from a regular expression -------------------------------------------------------


def _from_pattern(pattern: str) -> str | None:
    """A short string matching ``pattern`` (searched, as JSON Schema does), or None."""
    try:
        parsed = _sre.parse(pattern)
        out = _emit(list(parsed))
    except (re.error, _Unsupported, RecursionError, TypeError, ValueError):
        return None
    return out if out is not None and _matches(pattern, out) else None


class _Unsupported(Exception):
    pass


_CATEGORY_CHARS = {
    "CATEGORY_DIGIT": "0", "CATEGORY_NOT_DIGIT": "a", "CATEGORY_SPACE": " ", "CATEGORY_NOT_SPACE": "a",
    "CATEGORY_WORD": "a", "CATEGORY_NOT_WORD": "-",
}


def _emit(items: list[tuple[Any, Any]]) -> str:
    out: list[str] = []
    for op, arg in items:
        emit = _EMIT.get(str(op))
        if emit is None:
            raise _Unsupported(str(op))
        out.append(emit(arg))
    return "".join(out)


def _repeat(arg: Any) -> str:
    low, _high, sub = arg
    return _emit(list(sub)) * max(int(low), 0)


def _in(items: list[tuple[Any, Any]]) -> str:
    if items and str(items[0][0]) == "NEGATE":
        excluded = {chr(a) for op, a in items[1:] if str(op) == "LITERAL"}
        return next(ch for ch in "aA0-_x" if ch not in excluded)
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            return chr(arg)
        if name == "RANGE":
            return chr(arg[0])
        if name == "CATEGORY":
            return _CATEGORY_CHARS.get(str(arg), "a")
    raise _Unsupported("IN")


_EMIT: dict[str, Callable[[Any], str]] = {
    "LITERAL": chr,
    "NOT_LITERAL": lambda arg: "a" if chr(arg) != "a" else "b",
    "ANY": lambda arg: "a",
    "IN": _in,
    "MAX_REPEAT": _repeat, "MIN_REPEAT": _repeat, "POSSESSIVE_REPEAT": _repeat,
    "SUBPATTERN": lambda arg: _emit(list(arg[-1])),
    "BRANCH": lambda arg: _emit(list(arg[1][0])),
    "AT": lambda arg: "", "ASSERT": lambda arg: "", "ASSERT_NOT": lambda arg: "",
    "CATEGORY": lambda arg: _CATEGORY_CHARS.get(str(arg), "a"),
}
