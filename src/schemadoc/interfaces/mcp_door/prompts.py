"""The MCP prompts: step-by-step guidance for agents, rendered from the schema and a document.

``fill-document`` walks an agent through populating a document node by node;
``fix-validation-errors`` turns a validation report into an ordered list of tool calls.
Both are plain text builders over the service; an argument they cannot use is INVALID_PARAMS.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

import orjson
from mcp import MCPError
from mcp.server.mcpserver import MCPServer
from mcp.types import INVALID_PARAMS
from pydantic import Field

from schemadoc.errors import SchemaDocError
from schemadoc.pointer import escape, parse
from schemadoc.reading.examples import example_for, made_up_leaves
from schemadoc.service import DocumentService, check_doc_id

__all__ = ["add_prompts", "fill_document_text", "fix_validation_errors_text", "parse_violations"]

_MAX_MEMBERS = 60


def _invalid(message: str) -> MCPError:
    """A prompt argument that cannot be used."""
    return MCPError(code=INVALID_PARAMS, message=message)


class _Slot:
    """A number the agent fills in: shown bare (``<the current version number>``), never as a quoted string."""

    def __init__(self, what: str) -> None:
        self.text = f"<{what}>"


def _json(value: Any) -> str:
    slots: dict[str, str] = {}

    def default(item: Any) -> str:
        if isinstance(item, _Slot):
            marker = f"\u0000slot{len(slots)}\u0000"
            slots[marker] = item.text
            return marker
        raise TypeError

    text = orjson.dumps(value, default=default).decode()
    for marker, slot in slots.items():
        text = text.replace(orjson.dumps(marker).decode(), slot)
    return text


def _call(tool: str, **arguments: Any) -> str:
    return f"{tool} {_json(arguments)}"


def _document_version(service: DocumentService, doc_id: str) -> tuple[str, int]:
    try:
        canonical = check_doc_id(doc_id)
        return canonical, service.version_of(canonical)
    except SchemaDocError as error:
        raise _invalid(f"doc_id {doc_id!r}: {error.message}") from None


def _type_of(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any" if schema is True else "nothing"
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(str(k) for k in kind)
    if isinstance(kind, str):
        return kind
    if "enum" in schema:
        return "one of " + _json(schema["enum"])
    if "const" in schema:
        return "constant " + _json(schema["const"])
    for combinator in ("oneOf", "anyOf", "allOf"):
        if combinator in schema:
            return combinator
    return "any"


def fill_document_text(service: DocumentService, doc_id: str) -> str:
    """The ``fill-document`` prompt for one existing document."""
    doc_id, version = _document_version(service, doc_id)
    root = service.node_schema("/", doc_id).schema
    content = service.read_node(doc_id, "/").node
    properties = root.get("properties") if isinstance(root, dict) else None
    required = set(root.get("required", [])) if isinstance(root, dict) else set()
    lines = [
        f"Populate document {doc_id} (now at version {version}) so that it holds real, complete content "
        f"and stays valid against the server's JSON Schema ({service.schema_uri}).",
        "",
        "Work top-down, one node at a time:",
        "",
        "1. Learn the shape. Read the resource schema://schema (the whole schema), or ask for one node with "
        + _call("schema_get_node", node_path="/", doc_id=doc_id)
        + ". For each object note its `required` members, the type of every member, and constraints such "
        "as enum, pattern, minLength, minimum, minItems and additionalProperties.",
        "2. Read what exists: " + _call("document_read_node", doc_id=doc_id, node_path="/")
        + ". The result's `version` is the one your next write must send.",
        "3. Create the root's members first (required ones first, then the optional ones the content needs), "
        "e.g. " + _call("document_create_node", doc_id=doc_id, node_path="/<member>", node_data="<value>",
                        version=version)
        + ". Replace existing default values with " + _call("document_update_node", doc_id=doc_id,
                                                            node_path="/<member>", node_data="<value>",
                                                            version=version)
        + ". Append to arrays with a node_path ending in `/-`.",
        "4. Every node you write must be valid on its own: when you create an object or an array item, "
        "include all of ITS required members in node_data (check them with schema_get_node on that path "
        "first). A write that would leave the document invalid is refused and changes nothing.",
        "5. Descend: fill each created node's optional members the same way, level by level.",
        "6. Each successful write returns the new `version`; always pass the latest one. On "
        "`version-conflict`, re-read the node (details.actual_version) and retry.",
        "7. On `validation-failed`, read error.details.violations: each entry has `path`, `code`, "
        "`expected`, `actual` and a `message` saying how to fix it. Correct node_data and retry; "
        "the fix-validation-errors prompt turns such a report into a plan. Use `dry_run: true` to "
        "check a write without applying it.",
        "8. To undo a write that went wrong, list the versions with "
        + _call("document_history", doc_id=doc_id)
        + " and make a new version equal to an earlier one with "
        + _call("document_revert", doc_id=doc_id, to_version=_Slot("an earlier version number"),
                version=_Slot("the current version number"))
        + "; document_diff shows what changed between two versions.",
        "9. When done, read schema://" + doc_id + " to review the whole document.",
    ]
    if isinstance(properties, dict) and properties:
        lines += ["", "The root's members (name: type; required?; present now?):"]
        for name, member in list(properties.items())[:_MAX_MEMBERS]:
            flags = ["required" if name in required else "optional",
                     "present" if isinstance(content, dict) and name in content else "missing"]
            description = member.get("description") if isinstance(member, dict) else None
            line = f"- /{escape(name)}: {_type_of(member)}; {', '.join(flags)}"
            lines.append(line + (f" - {description}" if isinstance(description, str) else ""))
        if len(properties) > _MAX_MEMBERS:
            lines.append(f"- ... and {len(properties) - _MAX_MEMBERS} more (see schema://schema)")
    return "\n".join(lines)


def suggested_call(text: str) -> dict[str, Any] | None:
    """The ``details.suggested_call`` of an error object given as JSON text, if it has one."""
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if isinstance(data, dict) and isinstance(data.get("error"), dict):
        data = data["error"]
    details = data.get("details") if isinstance(data, dict) else None
    found = details.get("suggested_call") if isinstance(details, dict) else None
    return found if isinstance(found, dict) and isinstance(found.get("arguments"), dict) else None


def parse_violations(text: str) -> list[dict[str, Any]]:
    """Violations from a JSON string: a list of violations, an error object, or a validation report."""
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as error:
        raise _invalid(f"violations is not JSON: {error}") from None
    if isinstance(data, dict) and isinstance(data.get("error"), dict):
        data = data["error"]
    if isinstance(data, dict) and isinstance(data.get("details"), dict):
        data = data["details"]
    if isinstance(data, dict):
        for key in ("violations", "errors"):
            if isinstance(data.get(key), list):
                data = data[key]
                break
        else:
            if "code" in data and "path" in data:
                data = [data]
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise _invalid(
            "violations must be the JSON of error.details.violations (a list of objects with code, path, "
            "message), of the whole error object, or of a validation_report.")
    return list(data)


@dataclass(frozen=True)
class _Step:
    rank: int           # removals first, then creations (shallow first), then replacements
    depth: int
    text: str


def _child(path: str, name: Any) -> str:
    return ("" if path in ("", "/") else path) + "/" + escape(str(name))


def _typed(service: DocumentService, pointer: str, fallback: str, avoid: Any = None) -> dict[str, Any]:
    """The ``node_data`` (and ``placeholders``) of a proposed write at ``pointer``: a value of the right type from
    the node's schema (an example, the default, a const or enum value, else a typed made-up value, marked as such),
    ``fallback`` (a description in angle brackets) only where the schema gives nothing to build one from."""
    def schema_at(tokens: Any) -> dict[str, Any] | None:
        try:
            return service.schema.shared_node_schema(["0" if t == "-" else str(t) for t in tokens])
        except SchemaDocError:
            return None

    try:
        tokens = [str(token) for token in parse(pointer)]
    except SchemaDocError:
        return {"node_data": fallback}
    schema = schema_at(tokens)
    found, value = example_for(schema, avoid) if schema is not None else (False, None)
    if not found:
        return {"node_data": fallback}
    marks = made_up_leaves(value, tokens, schema_at)
    return {"node_data": value, **({"placeholders": marks} if marks else {})}


def _step(service: DocumentService, doc_id: str, version: int, violation: dict[str, Any]) -> list[_Step]:
    code = str(violation.get("code", "schema-constraint"))
    raw_path = violation.get("path")
    path = raw_path if isinstance(raw_path, str) else ""
    where = path or "/"
    depth = where.count("/")
    expected = violation.get("expected")
    actual = violation.get("actual")
    message = violation.get("message") or code
    head = f"[{code}] at {where}: {message}"
    fix = violation.get("suggested_fix")
    if isinstance(fix, list) and fix and all(isinstance(op, dict) for op in fix):
        kinds = {op.get("op") for op in fix}
        rank = 0 if kinds & {"remove", "move"} else 1 if "add" in kinds else 2
        return [_Step(rank, depth, f"{head}\n  Fix (suggested from the schema; several may go in one call): "
                      + _call("document_apply_patch", doc_id=doc_id, patch=fix, version=version))]
    if code in ("required-missing", "dependent-required") and isinstance(expected, str):
        target = _child(path, expected)
        return [_Step(1, depth, f"{head}\n  Fix: add the member '{expected}'. Check its schema with "
                      + _call("schema_get_node", node_path=target, doc_id=doc_id) + ", then "
                      + _call("document_create_node", doc_id=doc_id, node_path=target, version=version,
                              **_typed(service, target, "<a value valid for that schema>")))]
    if code in ("additional-properties-forbidden", "unevaluated-properties") and isinstance(actual, list):
        return [_Step(0, depth, f"{head}\n  Fix: remove the member '{name}': "
                      + _call("document_delete_node", doc_id=doc_id, node_path=_child(path, name),
                              version=version)) for name in actual]
    if code == "min-items" and isinstance(expected, int) and isinstance(actual, int):
        return [_Step(1, depth, f"{head}\n  Fix: append {expected - actual} more item(s), one call each: "
                      + _call("document_create_node", doc_id=doc_id, node_path=_child(path, "-"), version=version,
                              **_typed(service, _child(path, "-"), "<an item valid for the items schema>")))]
    if code == "max-items" and isinstance(expected, int) and isinstance(actual, int):
        return [_Step(0, depth, f"{head}\n  Fix: remove {actual - expected} item(s), e.g. the last one: "
                      + _call("document_delete_node", doc_id=doc_id, node_path=_child(path, actual - 1),
                              version=version))]
    requirement = f" (the schema expects {_json(expected)})" if expected is not None else ""
    return [_Step(2, depth, f"{head}\n  Fix: replace the value{requirement}; check the node's schema with "
                  + _call("schema_get_node", node_path=where, doc_id=doc_id) + ", then "
                  + _call("document_update_node", doc_id=doc_id, node_path=where, version=version,
                          **_typed(service, path, "<a corrected value>", avoid=actual)))]


def fix_validation_errors_text(service: DocumentService, doc_id: str, violations: str) -> str:
    """The ``fix-validation-errors`` prompt: one ordered step per violation."""
    doc_id, version = _document_version(service, doc_id)
    parsed = parse_violations(violations)
    steps = sorted((step for violation in parsed for step in _step(service, doc_id, version, violation)),
                   key=lambda step: (step.rank, step.depth))
    lines = [
        f"A write to document {doc_id} was refused because the result would not validate; the document "
        f"is unchanged at version {version}. Fix the {len(parsed)} violation(s) below, in this order "
        "(removals first, then missing members top-down, then wrong values).",
        "",
        "Each violation's `path` points into the document as it WOULD have been after the refused write. "
        "If the violations are inside the node_data you sent, correct that node_data and send the write "
        "again. If several fixes must land together (each write must leave the document valid), send them "
        "as ONE document_apply_patch call, whose operations are validated together. After every successful "
        "write, use the `version` it returns for the next call; on version-conflict re-read and retry. "
        "To go back instead of fixing forward, document_revert returns the document to an earlier version "
        "(document_history lists them).",
        "",
    ]
    proposed = suggested_call(violations)
    if proposed is not None:
        arguments = {**proposed["arguments"], "version": version}
        marked = proposed.get("placeholders") or []
        lines += ["Fastest: the server built one call that applies every fix it could derive from the schema, "
                  + ("and that passes validation" if proposed.get("resolves") else "though some violations "
                     "below still need your own fix")
                  + ". Send it as it is"
                  + (f" after replacing the made-up values at {', '.join(map(str, marked))} with real content"
                     if marked else "") + ":",
                  "  " + f"{proposed.get('tool')} {_json(arguments)}", "", "Or step by step:"]
    lines += [f"{number}. {step.text}" for number, step in enumerate(steps, start=1)]
    if not steps:
        lines.append("(The report lists no violations: re-run the write with dry_run: true to see its report.)")
    return "\n".join(lines)


def add_prompts(server: MCPServer[Any], service: DocumentService) -> None:
    @server.prompt(name="fill-document", title="Fill a document from its schema")
    def fill_document(doc_id: Annotated[str, Field(description="The document to populate.")]) -> str:
        """Step-by-step guidance to populate a document from the schema, node by node, top-down."""
        return fill_document_text(service, doc_id)

    @server.prompt(name="fix-validation-errors", title="Fix validation errors")
    def fix_validation_errors(
        doc_id: Annotated[str, Field(description="The document the refused write targeted.")],
        violations: Annotated[str, Field(description="JSON of error.details.violations, or of the whole error "
                                                     "object or validation_report.")],
    ) -> str:
        """Turn a validation report into an ordered plan of edits, one tool call per violation."""
        return fix_validation_errors_text(service, doc_id, violations)
