"""Why ``document_create`` can never succeed on a schema: the problems of the document built from its defaults."""

from __future__ import annotations

from typing import Any

from schemadoc.errors import SchemaDocError
from schemadoc.schema import LoadedSchema
from schemadoc.validation import DocumentValidator

__all__ = ["creation_problems"]


def creation_problems(schema: LoadedSchema) -> list[dict[str, Any]]:
    """Why ``document_create`` (which takes no arguments) can never succeed on ``schema``, or ``[]`` when it can.

    Each problem is ``{"pointer", "keyword", "reason"}``: a required field with no default anywhere
    (``required-field-without-default``), or a violation of the document built from the defaults.
    """
    try:
        document = schema.defaults()
    except SchemaDocError as error:
        paths = error.details.get("paths") or [error.details.get("path", "")]
        return [{"pointer": str(path), "keyword": "required",
                 "reason": f"{error.code}: required, and no default anywhere in the schema"} for path in paths]
    report = DocumentValidator(schema).validate(document)
    problems: list[dict[str, Any]] = []
    for violation in report.violations:
        item = violation.to_dict()
        problems.append({"pointer": str(item.get("path") or ""), "keyword": item.get("constraint") or item.get("code"),
                         "reason": f"{item.get('code')}: {item.get('message')}"})
    return problems
