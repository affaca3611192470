"""``docs/tools.md``: the reference of every operation, generated from the catalogue.

``python -m schemadoc.operations.reference > docs/tools.md`` (``make docs``) writes it; a test
checks that the committed copy is what the catalogue says today.
"""

from __future__ import annotations

import json
from typing import Any

from schemadoc.operations.catalogue import CATALOGUE
from schemadoc.operations.operation import Operation
from schemadoc.service.checks import LARGEST_INTEGER

__all__ = ["reference"]

_STATUS_CODES = {
    400: "invalid-request, invalid-doc-id, path-invalid, patch-invalid, root-not-deletable, request-too-deep",
    404: "document-not-found, path-not-found, version-not-found",
    408: "lock-timeout",
    409: "version-conflict, conflict, patch-test-failed",
    413: "request-too-large",
    422: "validation-failed, document-too-deep",
    500: "internal-error, storage-read-failed, storage-write-failed",
}


def _type(schema: dict[str, Any]) -> str:
    if "anyOf" in schema:
        return " or ".join(_type(choice) for choice in schema["anyOf"])
    kind = schema.get("type")
    if kind == "array" and isinstance(schema.get("items"), dict) and "type" in schema["items"]:
        return f"array of {schema['items']['type']}"
    return str(kind) if kind else "any JSON"


def _bounds(schema: dict[str, Any]) -> str:
    parts = []
    for choice in schema.get("anyOf", [schema]):
        if "minimum" in choice:
            parts.append(f">= {choice['minimum']}")
        if "maximum" in choice and choice["maximum"] != LARGEST_INTEGER:  # every count's: the reference says it once
            parts.append(f"<= {choice['maximum']}")
        if "minLength" in choice:
            parts.append(f"at least {choice['minLength']} character(s)")
    return ", ".join(parts)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _operation(operation: Operation) -> list[str]:
    schema = operation.args.model_json_schema()
    required = set(schema.get("required", ()))
    routes = ", ".join(f"`{route.method} /api/v1{route.path}`" for route in operation.routes)
    traits = {"read": "reads only", "write": "writes (adds)", "replace": "writes (may overwrite or remove)"}
    lines = [f'<a id="{operation.name}"></a>', "", f"## `{operation.name}`: {operation.title}", "",
             f"REST: {routes} · {traits[operation.kind]}"
             + (" · dry run" if operation.dry_run else "") + f" · result: `{operation.result.__name__}`", "",
             operation.description.replace("\n", "\n\n"), ""]
    properties: dict[str, Any] = schema.get("properties", {})
    if properties:
        lines += ["| argument | type | required | default | bounds | description |", "|---|---|---|---|---|---|"]
        for name, field in properties.items():
            default = "" if name in required else f"`{json.dumps(field.get('default'))}`"
            lines.append(f"| `{name}` | {_type(field)} | {'yes' if name in required else 'no'} | {default} | "
                         f"{_bounds(field)} | {_cell(str(field.get('description', '')))} |")
    else:
        lines.append("No arguments.")
    statuses = [status for status in operation.errors if status in _STATUS_CODES]
    codes = "; ".join(f"{status}: {_STATUS_CODES[status]}" for status in statuses)
    lines += ["", f"Errors (HTTP status: codes): {codes}", ""]
    for example in operation.examples:
        lines += ["```json", f"{operation.name} {json.dumps(example)}", "```", ""]
    return lines


def reference() -> str:
    """The whole page."""
    lines = ["# Tool and endpoint reference", "",
             "Generated from the operation catalogue (`src/schemadoc/operations/catalogue.py`) by "
             "`make docs`; do not edit by hand. Each operation is one MCP tool and one or more REST routes with "
             "the same arguments, results and errors. Over REST, `node_path` is the query parameter `path`; on a "
             "route with a body, `path` and `dry_run` are query parameters and the other arguments members of the "
             "JSON body, and the version may come as an `If-Match` header. Every error is the object described in "
             "[errors.md](errors.md).", "",
             "Node paths (every `node_path`, `from_path` and `to_path`) are RFC 6901 JSON Pointers with one "
             "extension: a negative array index counts from the end (`/chapters/-1` is the last chapter; where a "
             "node is inserted, `-k` is the position `len - k`, as Python's `list.insert` counts it, so `-1` inserts "
             "before the last item; a move's `to_path` counts in the array without the moved node). Results report, "
             "and the history keeps, the concrete index. The paths inside an RFC 6902 patch "
             "(`document_apply_patch`) are strict RFC 6901: no negative indices, as the patch is journaled as sent. "
             "An array index, like every integer argument, is at most 2^63 - 1 (a signed 64-bit integer); beyond is "
             "`path-invalid` for an index and `invalid-request` otherwise. Over REST a request body must be declared "
             "as JSON (`Content-Type: application/json`, or a `+json` type such as `application/merge-patch+json`), "
             "or it is `unsupported-media-type` (415) and nothing happens; a request without a body needs no type.",
             "",
             "| tool | title | REST |", "|---|---|---|"]
    lines += [f"| [`{op.name}`](#{op.name}) | {op.title} | "
              + ", ".join(f"`{route.method} {route.path}`" for route in op.routes) + " |" for op in CATALOGUE]
    lines.append("")
    for operation in CATALOGUE:
        lines += _operation(operation)
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":  # pragma: no cover - make docs
    print(reference(), end="")
