"""What a validation finds: each violation mapped to a catalog code, and the report listing them.

A runtime validator's error (``jsonschema-rs``, or one the incremental walk placed in the whole
document) becomes a :class:`Violation` by :func:`violation_of`; a report lists its violations in
document order (:func:`report_order`), however they were found.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from schemadoc.errors import KEYWORD_CODES, SchemaDocError, keyword_code
from schemadoc.pointer import format_pointer, json_type, parse

__all__ = ["VALID", "ValidationReport", "Violation", "report_order", "summarise", "violation_of"]

_MAX_ACTUAL_BYTES = 512
_GENERIC_KINDS = frozenset({"required", "contains", "falseSchema"})
# a violation's members on the wire: the first always, the others when they are set
_ALWAYS = ("code", "message", "path", "constraint", "expected", "actual", "schema_path")
_WHEN_SET = ("alternatives", "schema_excerpt", "suggested_fix")


@dataclass(frozen=True)
class Violation:
    code: str
    message: str
    path: str
    constraint: str
    expected: Any = None
    actual: Any = None
    schema_path: str = ""
    alternatives: list[list[dict[str, Any]]] | None = None
    schema_excerpt: dict[str, Any] | None = None
    """The failing keyword(s) as the node's schema states them (see :mod:`schemadoc.validation.suggestions`)."""
    suggested_fix: list[dict[str, Any]] | None = None
    """An RFC 6902 patch that repairs this violation, where one follows mechanically."""

    def to_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in _ALWAYS}
        out.update((name, value) for name in _WHEN_SET if (value := getattr(self, name)) is not None)
        return out


@dataclass(frozen=True)
class ValidationReport:
    valid: bool
    violations: tuple[Violation, ...] = field(default_factory=tuple)
    truncated: bool = False
    total: int | None = None
    """Every violation found, listed or not (``None``: the ones listed are all); counting stops at
    :data:`COUNT_VIOLATIONS_UP_TO`."""

    @property
    def count(self) -> int:
        return self.total if self.total is not None else len(self.violations)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "valid": self.valid,
            "error_count": len(self.violations),
            "errors": [v.to_dict() for v in self.violations],
        }
        if self.truncated:
            out["truncated"] = True
            out["total_error_count"] = self.count
        return out

    def raise_if_invalid(self, **context: Any) -> None:
        """``validation-failed`` carrying every violation."""
        if self.valid:
            return
        count = self.count
        details: dict[str, Any] = {**context, "violations": [v.to_dict() for v in self.violations]}
        remediation = None
        if self.truncated:
            listed = len(self.violations)
            more = "+" if count >= COUNT_VIOLATIONS_UP_TO else ""
            details.update(truncated=True, violation_count=count, violations_listed=listed,
                           violations_not_listed=f"{count - listed}{more}")
            remediation = (f"The first {listed} of {count}{more} violations are listed, in document order. Fix "
                           "them (or write a smaller part of the change) and try again, with dry_run to see the "
                           "next ones without writing.")
        raise SchemaDocError(
            "validation-failed",
            f"Document validation failed with {count}{'+' if count >= COUNT_VIOLATIONS_UP_TO else ''} "
            f"error{'s' if count != 1 else ''}; nothing was changed.",
            details, remediation=remediation,
        )


VALID = ValidationReport(True)
COUNT_VIOLATIONS_UP_TO = 100_000
"""Violations beyond the listed ones are counted up to this many (each costs the validator an error object)."""


def report_order(violation: Violation) -> tuple[Any, ...]:
    """The order of a report's violations: by place in the document (array positions as
    numbers), then by place in the schema, code and message.

    It is the same however the violations were found (whole validation walks the schema,
    a change's report walks the change), so one document's report never depends on how it
    was made.
    """
    return (
        [(0, int(token), token) if token.isdigit() else (1, 0, token) for token in parse(violation.path)],
        violation.schema_path, violation.code, violation.message, repr(violation.expected), repr(violation.actual),
    )


def summarise(value: Any) -> Any:
    """A value small enough for a report: scalars as they are, big containers as a summary."""
    if isinstance(value, dict | list):
        encoded = orjson.dumps(value)
        if len(encoded) <= _MAX_ACTUAL_BYTES:
            return value
        if isinstance(value, dict):
            names = list(value)[:10]
            return {"summary": f"object with {len(value)} members", "members": names}
        return {"summary": f"array of {len(value)} items"}
    if isinstance(value, str) and len(value) > _MAX_ACTUAL_BYTES:
        return value[:_MAX_ACTUAL_BYTES] + "…"
    return value


def violation_of(error: Any) -> Violation:
    kind = error.kind
    name: str = kind.name
    schema_tokens = list(error.schema_path)
    last = schema_tokens[-1] if schema_tokens else name
    # jsonschema-rs reports dependentRequired as "required", min/maxContains as "contains" and items: false
    # as "falseSchema"; the keyword at the end of the schema path tells them apart.
    constraint = last if name in _GENERIC_KINDS and isinstance(last, str) and last in KEYWORD_CODES else name
    path = format_pointer([str(t) for t in error.instance_path])
    data = _kind_data(kind)
    expected, actual = _expected_actual(constraint, data, error)
    alternatives = None
    branches = getattr(kind, "context", None)
    if constraint in ("oneOf", "anyOf") and branches:
        alternatives = [[violation_of(sub).to_dict() for sub in branch] for branch in branches]
    message = _message(constraint, path, error.message, expected, actual)
    return Violation(
        code=keyword_code(constraint),
        message=message,
        path=path,
        constraint=constraint,
        expected=expected,
        actual=actual,
        schema_path=format_pointer([str(t) for t in schema_tokens]),
        alternatives=alternatives,
    )


def _kind_data(kind: Any) -> dict[str, Any]:
    try:
        data = kind.as_dict()
    except Exception:  # pragma: no cover - kinds without data
        return {}
    return data if isinstance(data, dict) else {}


# constraint -> the member of the error's data that it expected, and the container type whose size is the actual value
_EXPECTED = {"enum": "options", "const": "expected_value", "pattern": "pattern", "format": "format",
             "minLength": "limit", "maxLength": "limit", "minItems": "limit", "maxItems": "limit",
             "minProperties": "limit", "maxProperties": "limit"}
_SIZED = {"minLength": str, "maxLength": str, "minItems": list, "maxItems": list, "minProperties": dict,
          "maxProperties": dict}


def _expected_actual(constraint: str, data: dict[str, Any], error: Any) -> tuple[Any, Any]:
    instance = error.instance
    if constraint == "type":
        types = data.get("types")
        return types if types is not None else data, json_type(instance)
    if constraint in ("required", "dependentRequired"):
        present = sorted(instance)[:20] if isinstance(instance, dict) else json_type(instance)
        return data.get("property"), {"present": present}
    if constraint in ("additionalProperties", "unevaluatedProperties", "unevaluatedItems"):
        return False, data.get("unexpected")
    if constraint in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
        return data.get("limit", data.get("multiple_of")), instance
    sized = _SIZED.get(constraint)
    actual = len(instance) if sized is not None and isinstance(instance, sized) else summarise(instance)
    if constraint in _EXPECTED:
        return data.get(_EXPECTED[constraint]), actual
    if constraint in ("oneOf", "anyOf"):
        return f"exactly one alternative of {constraint}" if constraint == "oneOf" else "at least one alternative", \
            actual
    if constraint == "uniqueItems":
        return True, actual
    if constraint == "propertyNames":
        nested = data.get("error")
        return getattr(nested, "message", None), actual
    clean = {k: v for k, v in data.items() if k not in ("context", "error")}
    return (clean or None), actual


_MESSAGES = {
    "type": "{where}: expected {types}, got {actual}.",
    "required": "{where}: required property {expected!r} is missing; add it.",
    "dependentRequired": "{where}: property {expected!r} is required when its dependent member is present; add it.",
    "additionalProperties": "{where}: properties {actual} are not allowed here; remove them (see schema_get_node for "
                            "allowed ones).",
    "enum": "{where}: {actual!r} is not one of {expected}.",
    "minLength": "{where}: string has {actual} characters, at least {expected} required.",
    "maxLength": "{where}: string has {actual} characters, at most {expected} allowed.",
    "minItems": "{where}: array has {actual} items, at least {expected} required.",
    "maxItems": "{where}: array has {actual} items, at most {expected} allowed.",
    "pattern": "{where}: {actual!r} does not match the pattern {expected}.",
    "format": "{where}: {actual!r} is not a valid {expected}.",
    "uniqueItems": "{where}: array items must be unique; remove the duplicates.",
    "minContains": "{where}: too few items match the 'contains' schema (minContains).",
    "maxContains": "{where}: too many items match the 'contains' schema (maxContains).",
    "items": "{where}: no items are allowed after the prefixItems positions; remove this one.",
    "oneOf": "{where}: value must match exactly one alternative of oneOf ({raw}); see 'alternatives'.",
    "anyOf": "{where}: value must match at least one alternative of anyOf; see 'alternatives'.",
}


def _message(constraint: str, path: str, raw: str, expected: Any, actual: Any) -> str:
    types = " or ".join(str(x) for x in expected) if isinstance(expected, list) else str(expected)
    return _MESSAGES.get(constraint, "{where}: {raw}.").format(where=path or "/", raw=raw, expected=expected,
                                                                actual=actual, types=types)
