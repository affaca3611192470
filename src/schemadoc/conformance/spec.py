"""The spec's wire contract, as the suite reads it: its tools, their arguments, their result members, its codes.

Written from the specification text (its "MCP Tools Specification" and "Standard Error Codes"), not from
schemadoc's own operation catalogue: the suite judges other implementations by the spec, and schemadoc's
extensions (more tools, more arguments, more result members, more codes) by clauses of their own.
"""

from __future__ import annotations

__all__ = ["ARGUMENTS", "CODES", "CORE_TOOLS", "MEMBERS", "VIOLATION_CODES", "code_status", "is_kebab_code"]

import re

ARGUMENTS: dict[str, frozenset[str]] = {
    "document_create": frozenset(),
    "document_read_node": frozenset({"doc_id", "node_path"}),
    "schema_get_node": frozenset({"doc_id", "node_path", "dereferenced"}),
    "document_update_node": frozenset({"doc_id", "node_path", "node_data", "version"}),
    "document_create_node": frozenset({"doc_id", "node_path", "node_data", "version"}),
    "document_delete_node": frozenset({"doc_id", "node_path", "version"}),
    "document_list": frozenset({"limit", "offset"}),
    "schema_get_root": frozenset({"dereferenced"}),
}
"""Each of the spec's eight tools and the arguments its input schema names."""

CORE_TOOLS = frozenset(ARGUMENTS)

MEMBERS: dict[str, frozenset[str]] = {
    "document_create": frozenset({"success", "doc_id", "document_uri", "schema_uri", "initial_tree", "version",
                                  "validation_report"}),
    "document_read_node": frozenset({"success", "node_content", "version", "node_type"}),
    "schema_get_node": frozenset({"success", "node_schema", "node_exists"}),
    "document_update_node": frozenset({"success", "updated_node", "version", "validation_report"}),
    "document_create_node": frozenset({"success", "created_node_path", "created_node", "version",
                                       "validation_report"}),
    "document_delete_node": frozenset({"success", "deleted_node", "version", "validation_report"}),
    "document_list": frozenset({"success", "schema_uri", "documents", "total_documents", "has_more"}),
    "schema_get_root": frozenset({"success", "schema_uri", "root_schema", "schema_version"}),
}
"""Each tool's result members (its output schema's properties)."""

CODES: dict[str, int] = {
    "invalid-doc-id": 400, "document-not-found": 404, "path-not-found": 404, "path-invalid": 400,
    "conflict": 409, "version-conflict": 409, "lock-timeout": 408, "validation-failed": 422,
    "required-field-without-default": 422, "type-mismatch": 422, "required-missing": 422, "min-length": 422,
    "max-length": 422, "pattern-failed": 422, "enum-mismatch": 422, "min-items": 422, "max-items": 422,
    "minimum": 422, "maximum": 422, "format-invalid": 422, "additional-properties-forbidden": 422,
    "schema-load-failed": 500, "schema-resolution-failed": 500, "storage-read-failed": 500,
    "storage-write-failed": 500, "internal-error": 500,
}
"""The spec's error codes and their HTTP categories (``validation-failed`` from its error-format example)."""

VIOLATION_CODES = frozenset(code for code, status in CODES.items() if status == 422) - {"validation-failed"}

_KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def is_kebab_code(code: object) -> bool:
    """FR-097: a machine-readable identifier, a kebab-case string."""
    return isinstance(code, str) and bool(_KEBAB.match(code))


def code_status(code: object) -> int | None:
    """The spec's status of ``code``, or ``None`` for a code the spec does not name."""
    return CODES.get(code) if isinstance(code, str) else None
