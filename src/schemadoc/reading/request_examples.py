"""Request examples built from the served schema, so that the documented examples work on any schema.

Given the loaded schema, :func:`request_examples` finds, on the document ``document_create`` makes (the
schema's defaults, version 1), a node an update can change, a node a create can add, a node a delete can
remove, and builds every operation's example from them: values from the schema's own words (``examples``,
``const``, ``enum``, ``default``) or its types and constraints (:func:`schemadoc.reading.examples.example_for`),
each write checked against the whole schema before it is offered. So each example succeeds as written on a
freshly created document (``version`` 1); only ``doc_id`` is the reader's.

:func:`request_examples` is keyed by REST operationId (which is the MCP tool name, plus
``document_merge_patch_post``); :func:`tool_examples` gives MCP tool arguments; :func:`apply_to_openapi` writes
them into an OpenAPI document (request bodies and parameters) and :func:`with_request_examples` wraps an
application's ``openapi()`` so that it does so once.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from schemadoc.errors import SchemaDocError
from schemadoc.ops.apply import apply_patch
from schemadoc.pointer import format_pointer, resolve
from schemadoc.reading.examples import example_for
from schemadoc.reading.schemas import node_schema

if TYPE_CHECKING:
    from schemadoc.schema.loader import LoadedSchema

__all__ = ["EXAMPLE_DOC_ID", "apply_to_openapi", "request_examples", "tool_examples", "with_request_examples"]

EXAMPLE_DOC_ID = "01JC6Y0Z8K9M2N3P4Q5R6S7T8V"
_FIRST_VERSION = 1
_MAX_NODES = 2000  # nodes of the initial document looked at (it is the schema's defaults: small)


@dataclass(frozen=True)
class _Edit:
    tokens: tuple[str, ...]
    value: Any


@dataclass(frozen=True)
class _Found:
    initial: Any
    update: _Edit  # replace the node at tokens by value
    create: _Edit | None  # add value at tokens (an absent member, or '-' to append)
    delete: tuple[str, ...] | None
    container: tuple[str, ...]  # a container to read, outline or render
    text: str | None  # a string the initial document holds (search)


def _walk(document: Any) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(tokens, value) of every node, breadth first, the root first."""
    queue: deque[tuple[tuple[str, ...], Any]] = deque([((), document)])
    seen = 0
    while queue and seen < _MAX_NODES:
        tokens, value = queue.popleft()
        seen += 1
        yield tokens, value
        if isinstance(value, dict):
            queue.extend(((*tokens, key), child) for key, child in value.items())
        elif isinstance(value, list):
            queue.extend(((*tokens, str(index)), child) for index, child in enumerate(value))


def _after(document: Any, op: str, tokens: tuple[str, ...], **value: Any) -> Any:
    """``document`` after one RFC 6902 operation at ``tokens`` (on a structurally shared copy)."""
    return apply_patch(document, [{"op": op, "path": format_pointer(tokens), **value}]).document


def _get(document: Any, tokens: tuple[str, ...]) -> Any:
    return resolve(document, tokens, allow_negative=False)[0]


def _find(schema: LoadedSchema) -> _Found | None:
    try:
        initial = schema.defaults()
    except SchemaDocError:
        return None
    validator = schema.make_validator()
    if not validator.is_valid(initial):
        return None
    nodes = list(_walk(initial))
    update = create = delete = None
    container: tuple[str, ...] = ()
    text = None
    # leaves first (a title, a number), then containers; shallow before deep
    ordered = sorted(nodes[1:], key=lambda node: (isinstance(node[1], dict | list), len(node[0])))
    for tokens, value in ordered:
        if update is None:
            found, new = example_for(node_schema(schema, tokens), value)
            if found and new != value and validator.is_valid(_after(initial, "replace", tokens, value=new)):
                update = _Edit(tokens, new)
        if text is None and isinstance(value, str) and value.strip():
            text = value
    for tokens, value in nodes:
        if isinstance(value, dict | list) and tokens and not container:
            container = tokens
        if create is None and isinstance(value, dict | list):
            node = node_schema(schema, tokens)
            names = [name for name in (node.get("properties") or {}) if name not in value] \
                if isinstance(value, dict) and isinstance(node, dict) else ["-"]
            for name in names:
                child = (*tokens, name)
                found, new = example_for(node_schema(schema, child))
                if found and validator.is_valid(_after(initial, "add", child, value=new)):
                    create = _Edit(child, new)
                    break
        if delete is None and tokens and validator.is_valid(_after(initial, "remove", tokens)):
            delete = tokens
    # else the whole document, as it is: always valid
    return _Found(initial, update or _Edit((), initial), create, delete, container, text)


def _pointer(tokens: tuple[str, ...]) -> str:
    return format_pointer(tokens) or "/"


def _merge_patch(found: _Found) -> tuple[str, Any]:
    """(node path, merge patch) making the update's change."""
    tokens, value = found.update.tokens, found.update.value
    if tokens and isinstance(_get(found.initial, tokens[:-1]), dict):
        return _pointer(tokens[:-1]), {tokens[-1]: value}
    return _pointer(tokens), value


def request_examples(schema: LoadedSchema) -> dict[str, dict[str, Any]]:
    """Per REST operationId: ``{"parameters": {name: value}, "body": request body}`` (either may be absent).

    Every example succeeds on a document just created (version 1) by ``document_create``, with its own
    ``doc_id``. When ``document_create`` cannot succeed on ``schema``, only the operations without a
    document get examples.
    """
    examples: dict[str, dict[str, Any]] = {"document_create": {"body": {}},
                                           "schema_get_root": {"parameters": {"dereferenced": False}},
                                           "document_list": {"parameters": {"limit": 20, "offset": 0}},
                                           "document_changes": {"parameters": {"since": 0, "limit": 100}}}
    found = _find(schema)
    if found is None:
        examples["schema_get_node"] = {"parameters": {"path": "/"}}
        return examples
    update_path, update_pointer = _pointer(found.update.tokens), format_pointer(found.update.tokens)
    container = _pointer(found.container)
    v = {"version": _FIRST_VERSION}
    examples.update({
        "document_read_node": {"parameters": {"path": container}},
        "schema_get_node": {"parameters": {"path": update_path}},
        "document_update_node": {"parameters": {"path": update_path},
                                 "body": {"node_data": found.update.value, **v}},
        # the verdict a write would get, without writing (where the server has the operation)
        "document_validate_node": {"parameters": {"path": update_path}, "body": {"node_data": found.update.value}},
        "document_apply_patch": {"body": {"patch": [
            {"op": "test", "path": update_pointer, "value": _get(found.initial, found.update.tokens)},
            {"op": "replace", "path": update_pointer, "value": found.update.value}], **v}},
        "document_move_node": {"body": {"from_path": update_path, "to_path": update_path, **v}}
        if found.update.tokens else {},
        "document_revert": {"body": {"to_version": _FIRST_VERSION, **v}},
        "document_delete": {"body": dict(v)},
        "document_history": {"parameters": {"since_version": 0, "limit": 50}},
        "document_diff": {"parameters": {"from_version": _FIRST_VERSION, "to_version": _FIRST_VERSION}},
        "document_read_version": {"parameters": {"version": _FIRST_VERSION}},
        "document_outline": {"parameters": {"path": "/", "depth": 2}},
        "document_next_incomplete": {"parameters": {"path": "/", "limit": 10}},
        "document_render": {"parameters": {"path": "/", "format": "markdown"}},
    })
    merge_path, merge = _merge_patch(found)
    examples["document_merge_patch"] = {"parameters": {"path": merge_path}, "body": merge}
    examples["document_merge_patch_post"] = {"parameters": {"path": merge_path}, "body": {"merge_patch": merge, **v}}
    if found.create is not None:
        examples["document_create_node"] = {"parameters": {"path": _pointer(found.create.tokens)},
                                            "body": {"node_data": found.create.value, **v}}
    if found.delete is not None:
        examples["document_delete_node"] = {"parameters": {"path": _pointer(found.delete)}, "body": dict(v)}
    if found.text is not None:
        examples["document_search"] = {"parameters": {"query": found.text[:40], "limit": 10}}
    return {name: example for name, example in examples.items() if example}


def tool_examples(schema: LoadedSchema, doc_id: str = EXAMPLE_DOC_ID) -> dict[str, dict[str, Any]]:
    """Example arguments per MCP tool name, built as :func:`request_examples` (``doc_id`` where a tool takes one)."""
    tools: dict[str, dict[str, Any]] = {}
    for operation, example in request_examples(schema).items():
        if operation == "document_merge_patch_post":  # REST only: the tool is document_merge_patch
            continue
        # REST's query parameter `path` is the tool's `node_path`; the body's members are arguments
        arguments = {"node_path" if name == "path" else name: value
                     for name, value in example.get("parameters", {}).items()}
        body = example.get("body")
        if operation == "document_merge_patch":
            arguments.update({"merge_patch": body, "version": _FIRST_VERSION})
        elif isinstance(body, dict):
            arguments.update(body)
        if operation not in _NO_DOCUMENT:
            arguments = {"doc_id": doc_id, **arguments}
        tools[operation] = arguments
    return tools


_NO_DOCUMENT = frozenset({"document_create", "document_list", "document_changes", "document_search",
                          "schema_get_root", "schema_get_node"})


# the same for every operation that takes them: a document's id, the version a fresh document is at
_SHARED_PARAMETERS: dict[str, Any] = {"doc_id": EXAMPLE_DOC_ID, "if-match": f'"{_FIRST_VERSION}"', "dry_run": False}


def apply_to_openapi(spec: dict[str, Any], schema: LoadedSchema) -> dict[str, Any]:
    """Put the served schema's examples into ``spec`` (an OpenAPI document whose operationIds are ours):
    each request body's ``example`` and each named parameter's ``example``. Returns ``spec``, changed in place.

    A request body's example from another schema is removed where this schema offers none, so nothing
    documented belongs to a schema that is not served.
    """
    examples = request_examples(schema)
    for operations in spec.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict):
                continue
            example = examples.get(str(operation.get("operationId")), {})
            values = {**_SHARED_PARAMETERS, **example.get("parameters", {})}
            for parameter in operation.get("parameters", []):
                if parameter.get("name") in values:
                    parameter["example"] = values[parameter["name"]]
            for content in operation.get("requestBody", {}).get("content", {}).values():
                content.pop("examples", None)
                if "body" in example:
                    content["example"] = example["body"]
                else:
                    content.pop("example", None)
    return spec


def with_request_examples(openapi: Callable[[], dict[str, Any]],
                          schema: LoadedSchema) -> Callable[[], dict[str, Any]]:
    """``openapi`` (an application's ``openapi()``, which caches its document) with :func:`apply_to_openapi`
    applied the first time."""
    applied: list[int] = []

    def build() -> dict[str, Any]:
        spec = openapi()
        if id(spec) not in applied:
            apply_to_openapi(spec, schema)
            applied.append(id(spec))
        return spec

    return build
