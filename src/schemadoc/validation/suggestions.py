"""Guided repair: the failing keyword's schema excerpt and, where one follows mechanically, a fix.

A fix is an RFC 6902 patch an agent can send with ``document_apply_patch`` as it is:

- ``enum``: replace with the closest allowed value (by spelling for strings, by distance for numbers);
- ``const``: replace with the constant;
- ``type``: a lossless coercion (``"42"`` -> ``42``, ``42`` -> ``"42"``, ``"true"`` -> ``true``);
- ``required``: add the missing member with its default or an example built from its schema;
- ``additionalProperties``: move a misspelt member to the closest allowed name, else remove it.

Nothing is suggested where no fix follows from the schema alone (a pattern, a length, a range).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Protocol

from schemadoc.errors import SchemaDocError
from schemadoc.pointer import escape, parse
from schemadoc.reading.examples import example_for, is_placeholder
from schemadoc.validation.violations import Violation

__all__ = ["NodeSchemaSource", "combined_fix", "placeholders", "suggest"]

_EXCERPT_KEYWORDS = {
    "additionalProperties": ("additionalProperties", "properties"),
    "unevaluatedProperties": ("unevaluatedProperties", "properties"),
    "minimum": ("minimum", "exclusiveMinimum"),
    "maximum": ("maximum", "exclusiveMaximum"),
    "minContains": ("contains", "minContains"),
    "maxContains": ("contains", "maxContains"),
}
_MAX_EXCERPT_NAMES = 50


class NodeSchemaSource(Protocol):
    def shared_node_schema(self, tokens: Sequence[str]) -> dict[str, Any]: ...


def suggest(violation: Violation, instance: Any, schemas: NodeSchemaSource) -> Violation:
    """``violation`` with ``schema_excerpt`` and, when one follows, ``suggested_fix``."""
    try:
        tokens = parse(violation.path)
        node_schema: dict[str, Any] | None = schemas.shared_node_schema(tokens)
    except SchemaDocError:
        node_schema = None
    excerpt = _excerpt(violation, node_schema)
    fix = _fix(violation, instance, node_schema, tokens if node_schema is not None else [], schemas)
    return replace(violation, schema_excerpt=excerpt, suggested_fix=fix)


def _excerpt(violation: Violation, node_schema: dict[str, Any] | None) -> dict[str, Any] | None:
    keyword = violation.constraint
    excerpt: dict[str, Any] = {}
    for name in _EXCERPT_KEYWORDS.get(keyword, (keyword,)):
        if node_schema is not None and name in node_schema:
            value = node_schema[name]
            if name == "properties" and isinstance(value, dict):
                value = sorted(value)[:_MAX_EXCERPT_NAMES]  # the allowed names, not their schemas
            elif name == "required" and isinstance(value, list):
                value = list(value)
            excerpt[name] = value
    if not excerpt:
        return {keyword: violation.expected} if violation.expected is not None else None
    return excerpt


def _fix(violation: Violation, instance: Any, node_schema: dict[str, Any] | None, tokens: list[str],
         schemas: NodeSchemaSource) -> list[dict[str, Any]] | None:
    path = violation.path
    keyword = violation.constraint
    if keyword == "enum" and isinstance(violation.expected, list) and violation.expected:
        return [{"op": "replace", "path": path, "value": _closest(instance, violation.expected)}]
    if keyword == "const" and node_schema is not None and "const" in node_schema:
        return [{"op": "replace", "path": path, "value": node_schema["const"]}]
    if keyword == "type":
        coerced = _coerce(instance, violation.expected)
        return None if coerced is _NONE else [{"op": "replace", "path": path, "value": coerced}]
    if keyword == "required" and isinstance(violation.expected, str) and node_schema is not None:
        member = violation.expected
        try:
            member_schema: Any = schemas.shared_node_schema([*tokens, member])
        except SchemaDocError:
            return None
        if "default" in member_schema:  # the schema's own value before any example
            found, value = True, member_schema["default"]
        else:
            found, value = example_for(member_schema)
        return [{"op": "add", "path": f"{path}/{escape(member)}", "value": value}] if found else None
    if keyword == "additionalProperties" and isinstance(violation.actual, list) and isinstance(instance, dict):
        allowed = node_schema.get("properties", {}) if node_schema is not None else {}
        fix: list[dict[str, Any]] = []
        taken = set(instance)
        for name in violation.actual:
            if not isinstance(name, str):
                continue
            free = [candidate for candidate in allowed if candidate not in taken]
            close = difflib.get_close_matches(name, free, n=1, cutoff=0.6)
            if close:
                fix.append({"op": "move", "from": f"{path}/{escape(name)}", "path": f"{path}/{escape(close[0])}"})
                taken.add(close[0])
            else:
                fix.append({"op": "remove", "path": f"{path}/{escape(name)}"})
        return fix or None
    return None


def _closest(value: Any, options: list[Any]) -> Any:
    if isinstance(value, str):
        texts = [option for option in options if isinstance(option, str)]
        lowered = {option.lower(): option for option in texts}
        if value.lower() in lowered:
            return lowered[value.lower()]
        close = difflib.get_close_matches(value, texts, n=1, cutoff=0.0)
        if close:
            return close[0]
    if isinstance(value, int | float) and not isinstance(value, bool):
        numbers = [o for o in options if isinstance(o, int | float) and not isinstance(o, bool)]
        if numbers:
            return min(numbers, key=lambda option: abs(option - value))
    return options[0]


_NONE = object()


def _coerce(value: Any, expected: Any) -> Any:
    """``value`` turned into one of the ``expected`` types without losing anything, else ``_NONE``."""
    types = expected if isinstance(expected, list) else [expected]
    if isinstance(value, str):
        text = value.strip()
        if "integer" in types and text == value and _is_int_text(text):
            return int(text)
        if "number" in types and text == value:
            try:
                number = float(text)
            except ValueError:
                number = math.nan
            if math.isfinite(number):
                as_int = int(number) if number.is_integer() and _is_int_text(text) else None
                if as_int is not None:
                    return as_int
                if repr(number) == text:
                    return number
        if "boolean" in types and value in ("true", "false"):
            return value == "true"
        if "null" in types and value == "null":
            return None
    if isinstance(value, bool):
        if "string" in types:
            return "true" if value else "false"
        return _NONE
    if isinstance(value, int | float):
        if "string" in types:
            return str(value) if isinstance(value, int) else repr(value)
        if "integer" in types and isinstance(value, float) and value.is_integer():
            return int(value)
    return _NONE


def _is_int_text(text: str) -> bool:
    digits = text[1:] if text[:1] == "-" else text
    return digits.isdigit() and digits.isascii() and (digits == "0" or not digits.startswith("0"))


# -- one refusal, one fix -----------------------------------------------------------------------


def fold_fixes(violations: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A refusal's violations folded: their fixes as one patch (:func:`combined_fix`), and the violations without
    their own ``suggested_fix`` (each points into a document the refused write would have made)."""
    return combined_fix(violations), [{k: v for k, v in violation.items() if k != "suggested_fix"}
                                      for violation in violations]


def combined_fix(violations: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``suggested_fix`` patches of a report's violations as one patch whose operations never conflict.

    A member moved to a corrected name (a misspelling) is not also added with an example value; one path is
    written once (the first violation's fix wins); a removal is not followed by writes below what it removed.
    """
    fixes = [op for violation in violations for op in violation.get("suggested_fix") or ()]
    moved_to = {op["path"] for op in fixes if op.get("op") == "move"}
    ops: list[dict[str, Any]] = []
    written: set[str] = set()
    for op in fixes:
        path = op.get("path")
        if not isinstance(path, str):
            continue
        if op.get("op") == "add" and any(path == t or path.startswith(t + "/") for t in moved_to):
            continue  # the renamed member already brings a value
        if path in written or any(path.startswith(w + "/") for w in written):
            continue
        written.add(path)
        ops.append(op)
    return ops


def placeholders(ops: Sequence[dict[str, Any]], schemas: NodeSchemaSource, prefix: str = "") -> list[str]:
    """The paths (relative to ``prefix``) of the values in ``ops`` that are made up rather than taken from the
    schema (a default, an enum value, a const, an example): content the agent should replace."""
    found: list[str] = []
    for op in ops:
        if op.get("op") != "add" or "value" not in op:  # replacements (coercions, enum values) keep what was meant
            continue
        try:
            schema: Any = schemas.shared_node_schema(parse(op["path"]))
        except SchemaDocError:
            schema = {}
        if is_placeholder(schema, op["value"]):
            found.append(op["path"][len(prefix):] or "/")
    return found
