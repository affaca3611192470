"""The MCP tools of the operation catalogue: one :class:`Tool` per operation, described once per process.

Input schemas are the arguments models without what only costs an agent bytes (titles, patterns, the
shared arguments described once in the server's instructions); output schemas are the result models,
one level deep; the examples that carry document content are built from the served schema.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import orjson
from mcp.server.mcpserver.tools import Tool
from mcp.types import ToolAnnotations
from pydantic import BaseModel

from schemadoc.operations.catalogue import BY_NAME, CATALOGUE
from schemadoc.operations.operation import Operation
from schemadoc.reading.request_examples import tool_examples
from schemadoc.schema import LoadedSchema
from schemadoc.service.checks import LARGEST_INTEGER

__all__ = ["bound_tools"]

_ANNOTATIONS: dict[str, ToolAnnotations] = {  # hints equal to the protocol's defaults are left out
    "read": ToolAnnotations(read_only_hint=True, open_world_hint=False),
    "write": ToolAnnotations(destructive_hint=False, open_world_hint=False),
    "replace": ToolAnnotations(destructive_hint=True, open_world_hint=False),  # said, though it is the default
}

def _tool(operation: Operation) -> Tool:
    """The tool of an operation: its arguments model as the input schema, its result model as the output
    schema (the SDK derives it from the return annotation), its description and examples, its annotations.
    The function is never called: :meth:`SchemaDocMCPServer.call_tool` runs the operation."""

    def never_called() -> BaseModel:  # pragma: no cover - call_tool runs the catalogue's operation
        raise NotImplementedError(operation.name)

    never_called.__signature__ = inspect.Signature(return_annotation=operation.result)  # type: ignore[attr-defined]
    tool = Tool.from_function(never_called, name=operation.name, title=operation.title,
                              description=operation.agent_description(), annotations=_ANNOTATIONS[operation.kind],
                              structured_output=True)
    tool.parameters = _input_schema(operation.args.model_json_schema())
    output = tool.fn_metadata.output_schema
    if output is not None:
        tool.fn_metadata = tool.fn_metadata.model_copy(update={"output_schema": _outline_schema(output)})
    return tool


# What tools/list carries is paid for by every agent on every session: the schemas are kept to what a client
# needs to call a tool and check its result (the REST door's OpenAPI document has the full models).
_INPUT_NOISE = frozenset({"title", "pattern"})
"""Left out of input schemas: pydantic's titles repeat the names; the patterns of ids and pointers are
documentation only (the service checks them and answers with its own codes)."""
_SCHEMA_MAPS = frozenset({"properties", "$defs", "patternProperties", "dependentSchemas"})
_SCHEMA_ONE = frozenset({"items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else",
                         "unevaluatedProperties", "unevaluatedItems"})
_SCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})


_SHARED_ARGUMENTS = frozenset({"doc_id", "version", "dry_run", "node_path", "limit", "offset", "placeholders"})
"""Arguments many tools take, described once in the server's instructions rather than in every tool."""


def _input_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """An arguments model's schema for tools/list: no titles or patterns, the shared arguments without their
    description (see the server instructions), an optional argument as its type alone (leaving it out is the way to
    say nothing), a JSON Patch as a list of operation objects."""
    compact: dict[str, Any] = _compact(schema, _INPUT_NOISE)
    properties: dict[str, Any] = compact.get("properties", {})
    for name, member in list(properties.items()):
        member = _no_largest(member)
        if name in _SHARED_ARGUMENTS:
            member.pop("description", None)
        branches = member.get("anyOf")
        if isinstance(branches, list) and member.get("default", 0) is None:
            kept = [branch for branch in branches if branch != {"type": "null"}]
            if len(kept) == 1:
                member = {**{k: v for k, v in member.items() if k not in ("anyOf", "default")}, **kept[0]}
        if name == "patch" and member.get("type") == "array":
            member["items"] = {"type": "object", "required": ["op", "path"]}
        properties[name] = member
    return compact


def _no_largest(member: dict[str, Any]) -> dict[str, Any]:
    """A count's schema without its ``maximum`` of :data:`LARGEST_INTEGER` (what every count's is: said once)."""
    out = {key: value for key, value in member.items() if not (key == "maximum" and value == LARGEST_INTEGER)}
    if isinstance(out.get("anyOf"), list):
        out["anyOf"] = [_no_largest(choice) if isinstance(choice, dict) else choice for choice in out["anyOf"]]
    return out


def _compact(schema: Any, drop: frozenset[str]) -> Any:
    """``schema`` without the keywords in ``drop`` (at every level; a property *named* like one stays)."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in drop:
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _compact(member, drop) for name, member in value.items()}
        elif key in _SCHEMA_ONE:
            out[key] = _compact(value, drop)
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_compact(member, drop) for member in value]
        else:
            out[key] = value
    return out


def _outline_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A result model's schema, one level deep: each member's JSON type(s), the required members; nested objects
    and array items are left open (their shape is in docs/tools.md and the OpenAPI document). Nothing is repeated
    from tool to tool, and every result the model allows still validates against it."""
    definitions = schema.get("$defs", {})
    properties = {name: _json_types(member, definitions) for name, member in schema.get("properties", {}).items()
                  if name != "success"}  # always true on a result (a failure is an isError result)
    return {"type": "object", "properties": properties}


def _json_types(schema: Any, definitions: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(schema, dict):
        return {}
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _json_types(definitions.get(ref.removeprefix("#/$defs/"), {}), definitions)
    if isinstance(schema.get("anyOf"), list):
        types: list[str] = []
        for member in schema["anyOf"]:
            kind = _json_types(member, definitions).get("type")
            if kind is None:
                return {}
            types += [kind] if isinstance(kind, str) else list(kind)
        return {"type": types[0] if len(types) == 1 else types}
    kind = schema.get("type")
    return {"type": kind} if isinstance(kind, str | list) else {}


@functools.cache
def _tool_templates() -> tuple[Tool, ...]:
    """The tools, described once per process (building their JSON schemas is most of what building a
    server costs, and none of it depends on the service)."""
    return tuple(_tool(operation) for operation in CATALOGUE)


def _copy_json(value: Any) -> Any:
    """A deep copy of a JSON value (~10x faster than ``copy.deepcopy``)."""
    return orjson.loads(orjson.dumps(value))


_SHOWS_NODE_DATA = frozenset(operation.name for operation in CATALOGUE if operation.written)
"""The tools whose examples carry document content: theirs are built from the served schema."""


def bound_tools(schema: LoadedSchema) -> list[Tool]:
    """The tools of one server, each with its own copy of the JSON schemas; the examples that carry document
    content are the served schema's (:func:`~schemadoc.reading.request_examples.tool_examples`), so they succeed
    on a new document whatever the schema."""
    examples = tool_examples(schema)
    tools: list[Tool] = []
    for template in _tool_templates():
        metadata = template.fn_metadata
        update: dict[str, Any] = {
            "parameters": _copy_json(template.parameters),
            "fn_metadata": metadata.model_copy(update={"output_schema": _copy_json(metadata.output_schema)}),
        }
        if template.name in _SHOWS_NODE_DATA and template.name in examples:
            update["description"] = BY_NAME[template.name].agent_description((examples[template.name],))
        tools.append(template.model_copy(update=update))
    return tools
