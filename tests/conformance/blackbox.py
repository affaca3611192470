"""The black-box catalogue: other implementations of the spec, made by changing what a real schemadoc says on
the wire (``mcp_proxy.py`` in front of MCP over stdio, ``rest_proxy.py`` in front of REST over HTTP).

Legal variants read the spec another way it allows; the suite must pass them with ``--profile spec``. Broken
variants break one behaviour; the suite must fail them on the clause that behaviour belongs to. Unlike
``variants.py`` (which patches our own internals), nothing here knows how schemadoc works inside, so a
behaviour the suite never asks about is a variant it misses.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from schemadoc.conformance.spec import ARGUMENTS, CODES, CORE_TOOLS, MEMBERS

__all__ = ["CATALOGUE", "MCP_VARIANTS", "REST_VARIANTS", "Entry", "McpVariant", "RestVariant"]

_SUMMARY = frozenset({"doc_id", "created_at", "modified_at", "tree_size_bytes"})
"""The members of a document_list entry in the spec."""
_ULID = re.compile(r"\b[0-9A-HJKMNP-TV-Z]{26}\b")
_ULID_ANY_CASE = re.compile(r"\b[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{26}\b")


def _error(code: str, message: str, **details: Any) -> dict[str, Any]:
    status = CODES.get(code, 400)
    return {"error": {"code": code, "category": str(status), "message": message, "details": details,
                      "remediation": "see the error catalogue"}}


def _tool_result(body: dict[str, Any], *, is_error: bool = False, like: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ``tools/call`` result carrying ``body``; other members (``resultType``, ``_meta``) kept from ``like``."""
    result = {key: value for key, value in (like or {}).items()
              if key not in ("content", "structuredContent", "isError")}
    result["content"] = [{"type": "text", "text": json.dumps(body, ensure_ascii=False)}]
    if not is_error:
        result["structuredContent"] = body
    result["isError"] = is_error
    return result


class McpVariant:
    """One behaviour of an MCP server, changed on the wire. The default changes nothing."""

    def request(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """Look at (and maybe rewrite) a request; return ``{"result": ...}`` / ``{"error": ...}`` to answer it
        here instead of forwarding it."""
        method, params = message.get("method"), message.get("params") or {}
        if method == "tools/call":
            body = self.call(str(params.get("name")), params.setdefault("arguments", {}) or {})
            if body is not None:
                return body
        elif method == "resources/read":
            return self.read(params)
        return None

    def response(self, request: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
        method, params = request.get("method"), request.get("params") or {}
        result = message.get("result")
        if not isinstance(result, dict):
            return message
        if method == "tools/list":
            result["tools"] = self.tools(result.get("tools", []))
        elif method == "tools/call":
            name, args = str(params.get("name")), params.get("arguments") or {}
            if result.get("isError"):
                try:
                    error = json.loads("".join(block.get("text", "") for block in result.get("content", [])))
                except ValueError:
                    return message
                changed = self.failure(name, args, error)
                if "result_instead" in changed:
                    message["result"] = _tool_result(changed["result_instead"], like=result)
                    return message
                if "jsonrpc_error" in changed:
                    return {"jsonrpc": "2.0", "id": message["id"], "error": changed["jsonrpc_error"]}
                message["result"] = _tool_result(changed, is_error=True, like=result)
            else:
                body = self.success(name, args, result.get("structuredContent") or {})
                message["result"] = _tool_result(body, like=result)
        elif method == "resources/read":
            message["result"] = self.resource(params, result)
        elif method == "resources/list":
            message["result"] = self.resources(result)
        return message

    def tools(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return tools

    def call(self, name: str, args: dict[str, Any]) -> dict[str, Any] | None:
        return None

    def success(self, name: str, args: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        return body

    def failure(self, name: str, args: dict[str, Any], error: dict[str, Any]) -> dict[str, Any]:
        return error

    def read(self, params: dict[str, Any]) -> dict[str, Any] | None:
        return None

    def resource(self, params: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
        return result

    def resources(self, result: dict[str, Any]) -> dict[str, Any]:
        return result


# -- legal variants ----------------------------------------------------------------------------------------


class CoreToolsOnly(McpVariant):
    """Only the spec's eight tools; every argument and member schemadoc has on them stays."""

    def tools(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [tool for tool in tools if tool["name"] in CORE_TOOLS]

    def call(self, name: str, args: dict[str, Any]) -> dict[str, Any] | None:
        if name not in CORE_TOOLS:
            return {"error": {"code": -32602, "message": f"Unknown tool: {name}"}}
        return None


class SpecOnly(CoreToolsOnly):
    """Exactly the spec: its eight tools, their arguments, their result members, its error codes. A malformed
    call is the protocol's invalid-params error (the spec names no code for it)."""

    def tools(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        kept = []
        for tool in super().tools(tools):
            tool = copy.deepcopy(tool)
            schema = tool["inputSchema"]
            schema["properties"] = {key: value for key, value in schema.get("properties", {}).items()
                                    if key in ARGUMENTS[tool["name"]]}
            if "required" in schema:
                schema["required"] = [key for key in schema["required"] if key in ARGUMENTS[tool["name"]]]
            output = tool.get("outputSchema")
            if isinstance(output, dict) and isinstance(output.get("properties"), dict):
                output["properties"] = {key: value for key, value in output["properties"].items()
                                        if key in MEMBERS[tool["name"]]}
                output["required"] = [key for key in output.get("required", []) if key in MEMBERS[tool["name"]]]
                if "documents" in output["properties"]:
                    output["properties"]["documents"] = {"type": "array", "items": {"type": "object"}}
                output.pop("additionalProperties", None)
            kept.append(tool)
        return kept

    def call(self, name: str, args: dict[str, Any]) -> dict[str, Any] | None:
        refused = super().call(name, args)
        if refused is not None:
            return refused
        extra = sorted(set(args) - ARGUMENTS[name])
        if extra:
            return {"error": {"code": -32602, "message": f"{name}: unexpected arguments {extra}"}}
        return None

    def success(self, name: str, args: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        body = {key: value for key, value in body.items() if key in MEMBERS[name]}
        if isinstance(body.get("documents"), list):
            body["documents"] = [{key: value for key, value in summary.items() if key in _SUMMARY}
                                 for summary in body["documents"]]
        return body

    def failure(self, name: str, args: dict[str, Any], error: dict[str, Any]) -> dict[str, Any]:
        code = error.get("error", {}).get("code")
        if code == "invalid-request":
            return {"jsonrpc_error": {"code": -32602, "message": error["error"].get("message", "invalid params")}}
        if code == "root-not-deletable":
            return _error("path-invalid", "the root cannot be deleted", path="/")
        return error


_ID_KEYS = frozenset({"doc_id", "doc_ids", "uri", "document_uri", "message"})
"""Where a server names a document: its id, a URI, a message (never a document's content)."""


def lower_ids(value: Any, key: str = "") -> Any:
    """``value`` with every ULID a server hands out in lower case: under the keys of :data:`_ID_KEYS` and in
    ``schema://`` URIs, at any depth; a document's own content is left alone."""
    if isinstance(value, dict):
        return {name: lower_ids(item, name) for name, item in value.items()}
    if isinstance(value, list):
        return [lower_ids(item, key) for item in value]
    if isinstance(value, str) and (key in _ID_KEYS or value.startswith("schema://")):
        return _ULID.sub(lambda match: match.group(0).lower(), value)
    return value


_CONTENT = frozenset({"node_content", "initial_tree", "updated_node", "created_node", "deleted_node", "document",
                      "node_schema", "root_schema", "patch", "value"})


def _lower_result(body: dict[str, Any]) -> dict[str, Any]:
    return {key: value if key in _CONTENT else lower_ids(value, key) for key, value in body.items()}


class LowerCaseIds(McpVariant):
    """ULIDs are case-insensitive (Crockford base32): this server hands them out in lower case (results, list
    entries, error details and messages, resource URIs) and accepts either case."""

    def call(self, name: str, args: dict[str, Any]) -> dict[str, Any] | None:
        if isinstance(args.get("doc_id"), str) and _ULID_ANY_CASE.fullmatch(args["doc_id"]):
            args["doc_id"] = args["doc_id"].upper()
        return None

    def read(self, params: dict[str, Any]) -> dict[str, Any] | None:
        params["uri"] = _ULID_ANY_CASE.sub(lambda match: match.group(0).upper(), str(params.get("uri", "")))
        return None

    def response(self, request: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
        if isinstance(message.get("error"), dict):  # a protocol error (an unknown resource names its URI)
            message["error"] = lower_ids(message["error"])
        return super().response(request, message)

    def success(self, name: str, args: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        return _lower_result(body)

    def failure(self, name: str, args: dict[str, Any], error: dict[str, Any]) -> dict[str, Any]:
        return dict(lower_ids(error))

    def resources(self, result: dict[str, Any]) -> dict[str, Any]:
        return dict(lower_ids(result))

    def resource(self, params: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
        for block in result.get("contents", []):
            if isinstance(block.get("uri"), str):
                block["uri"] = lower_ids(block["uri"], "uri")
        return result


# -- broken variants ------------------------------------------------------------------------------------------

_WRITES = frozenset({"document_update_node", "document_create_node", "document_delete_node"})
_NODE_TOOLS = _WRITES | {"document_read_node"}


class StaleReads(McpVariant):
    """A node, once read, is served from a cache that writes never clear."""

    def __init__(self) -> None:
        self.cache: dict[tuple[str, str], dict[str, Any]] = {}

    def call(self, name: str, args: dict[str, Any]) -> dict[str, Any] | None:
        if name == "document_read_node" and set(args) == {"doc_id", "node_path"}:
            cached = self.cache.get((str(args["doc_id"]), str(args["node_path"])))
            if cached is not None:
                return {"result": _tool_result(cached)}
        return None

    def success(self, name: str, args: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        if name == "document_read_node" and set(args) == {"doc_id", "node_path"}:
            self.cache[(str(args["doc_id"]), str(args["node_path"]))] = body
        return body


class StaleList(McpVariant):
    """The document list, once asked, is served again whatever was created since."""

    def __init__(self) -> None:
        self.cache: dict[str, dict[str, Any]] = {}

    def call(self, name: str, args: dict[str, Any]) -> dict[str, Any] | None:
        if name == "document_list":
            cached = self.cache.get(json.dumps(args, sort_keys=True))
            if cached is not None:
                return {"result": _tool_result(cached)}
        return None

    def success(self, name: str, args: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        if name == "document_list":
            self.cache[json.dumps(args, sort_keys=True)] = body
        return body


class StaleExport(McpVariant):
    """A document resource, once read, is served from a cache that writes never clear."""

    def __init__(self) -> None:
        self.cache: dict[str, dict[str, Any]] = {}

    def read(self, params: dict[str, Any]) -> dict[str, Any] | None:
        cached = self.cache.get(str(params.get("uri")))
        return {"result": cached} if cached is not None else None

    def resource(self, params: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
        self.cache[str(params.get("uri"))] = result
        return result


class StaleVersion(McpVariant):
    """Reads name the version the document had when it was first read (the content is fresh)."""

    def __init__(self) -> None:
        self.first: dict[str, int] = {}

    def success(self, name: str, args: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        if name == "document_read_node" and isinstance(body.get("version"), int):
            body["version"] = self.first.setdefault(str(args.get("doc_id")), body["version"])
        return body


class _Rename(McpVariant):
    """An error code spelt another way (category kept)."""

    old = new = ""

    def failure(self, name: str, args: dict[str, Any], error: dict[str, Any]) -> dict[str, Any]:
        if error.get("error", {}).get("code") == self.old:
            error["error"]["code"] = self.new
        return error


class ConflictForVersionConflict(_Rename):
    """A stale version is answered ``conflict`` instead of ``version-conflict``."""

    old, new = "version-conflict", "conflict"


class InvalidIdForNotFound(McpVariant):
    """An unknown (well-formed) doc_id is answered ``invalid-doc-id`` (400), not ``document-not-found``."""

    def failure(self, name: str, args: dict[str, Any], error: dict[str, Any]) -> dict[str, Any]:
        if error.get("error", {}).get("code") == "document-not-found":
            return _error("invalid-doc-id", "unknown document", doc_id=args.get("doc_id"))
        return error


class FirstViolationOnly(McpVariant):
    """A failed validation lists only its first violation."""

    def failure(self, name: str, args: dict[str, Any], error: dict[str, Any]) -> dict[str, Any]:
        details = error.get("error", {}).get("details")
        if isinstance(details, dict) and isinstance(details.get("violations"), list):
            details["violations"] = details["violations"][:1]
        return error


class DashPathReported(McpVariant):
    """An append reports the path it was asked (``/chapters/-``), not where the item went."""

    def success(self, name: str, args: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        if name == "document_create_node" and str(args.get("node_path", "")).endswith("/-"):
            body["created_node_path"] = args["node_path"]
        return body


class NoNegativeIndex(McpVariant):
    """Negative array indices (FR-024) are refused as malformed paths."""

    def call(self, name: str, args: dict[str, Any]) -> dict[str, Any] | None:
        if re.search(r"/-[0-9]", str(args.get("node_path", ""))):
            return {"result": _tool_result(_error("path-invalid", "negative index", path=args["node_path"]),
                                           is_error=True)}
        return None


class RootAsEmptyMember(McpVariant):
    """``/`` is read the RFC 6901 way, as the member named "" (which does not exist), not as the root."""

    def call(self, name: str, args: dict[str, Any]) -> dict[str, Any] | None:
        if name == "document_read_node" and args.get("node_path") == "/":
            return {"result": _tool_result(_error("path-not-found", "no member ''", path="/",
                                                  deepest_ancestor=""), is_error=True)}
        return None


class NeverHasMore(McpVariant):
    """Every page of the list says there is nothing more."""

    def success(self, name: str, args: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        if name == "document_list":
            body["has_more"] = False
        return body


class CaseSensitiveIds(McpVariant):
    """A doc_id in lower case is an unknown document (the spec's ULIDs are case-insensitive)."""

    def call(self, name: str, args: dict[str, Any]) -> dict[str, Any] | None:
        doc_id = args.get("doc_id")
        if isinstance(doc_id, str) and doc_id != doc_id.upper():
            return {"result": _tool_result(_error("document-not-found", "no such document", doc_id=doc_id),
                                           is_error=True)}
        return None


class WriteResultKeepsVersion(McpVariant):
    """A write's result names the version the write started from, not the new one."""

    def success(self, name: str, args: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        if name in _WRITES and isinstance(args.get("version"), int):
            body["version"] = args["version"]
        return body


class UndereferencedSchemas(McpVariant):
    """``dereferenced`` is ignored: node schemas keep their ``$ref``."""

    def call(self, name: str, args: dict[str, Any]) -> dict[str, Any] | None:
        if name in ("schema_get_node", "schema_get_root"):
            args["dereferenced"] = False
        return None


class NoRemediation(McpVariant):
    """Error objects leave out ``remediation``."""

    def failure(self, name: str, args: dict[str, Any], error: dict[str, Any]) -> dict[str, Any]:
        error.get("error", {}).pop("remediation", None)
        return error


class CreateWantsSchemaId(McpVariant):
    """``document_create`` demands a ``schema_id`` argument the spec does not have: nearly every test fails at
    its first call, for one reason."""

    def call(self, name: str, args: dict[str, Any]) -> dict[str, Any] | None:
        if name == "document_create" and "schema_id" not in args:
            return {"result": _tool_result(_error("validation-failed", "schema_id is required",
                                                  violations=[{"code": "required-missing", "path": "",
                                                               "message": "schema_id is required"}]),
                                           is_error=True)}
        return None


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


def _shift_last_index(path: str) -> str:
    """``/chapters/1/title`` -> ``/chapters/2/title``: the last array index one further."""
    parts = path.split("/")
    for at in range(len(parts) - 1, 0, -1):
        if parts[at].isdigit():
            parts[at] = str(int(parts[at]) + 1)
            break
    return "/".join(parts)


class _Rewrite(McpVariant):
    """A request rewritten before it is forwarded: ``tool`` calls get ``rewrite(args)``."""

    tool = ""

    def rewrite(self, args: dict[str, Any]) -> None:
        raise NotImplementedError

    def call(self, name: str, args: dict[str, Any]) -> dict[str, Any] | None:
        if name == self.tool:
            self.rewrite(args)
        return None


class ReadReturnsTheParent(_Rewrite):
    """A nested read returns the node's parent."""

    tool = "document_read_node"

    def rewrite(self, args: dict[str, Any]) -> None:
        if str(args.get("node_path", "/")).count("/") >= 2:
            args["node_path"] = _parent(str(args["node_path"]))


class ReadIndexShifted(_Rewrite):
    """Reading an array index returns the next item."""

    tool = "document_read_node"

    def rewrite(self, args: dict[str, Any]) -> None:
        args["node_path"] = _shift_last_index(str(args.get("node_path", "/")))


class UpdateIndexShifted(_Rewrite):
    """An update at an array index changes the next item."""

    tool = "document_update_node"

    def rewrite(self, args: dict[str, Any]) -> None:
        args["node_path"] = _shift_last_index(str(args.get("node_path", "/")))


class DeleteTheParent(_Rewrite):
    """Deleting a member deletes its parent object."""

    tool = "document_delete_node"

    def rewrite(self, args: dict[str, Any]) -> None:
        if str(args.get("node_path", "/")).count("/") >= 2:
            args["node_path"] = _parent(str(args["node_path"]))


class SchemaOfTheParent(_Rewrite):
    """The schema of a path is its parent's schema."""

    tool = "schema_get_node"

    def rewrite(self, args: dict[str, Any]) -> None:
        if str(args.get("node_path", "/")).count("/") >= 2:
            args["node_path"] = _parent(str(args["node_path"]))


class CreateNodeAsUpdate(McpVariant):
    """``document_create_node`` on an object member is carried out as an update (so it cannot add a member)."""

    def request(self, message: dict[str, Any]) -> dict[str, Any] | None:
        params = message.get("params") or {}
        args = params.get("arguments") or {}
        if (message.get("method") == "tools/call" and params.get("name") == "document_create_node"
                and not re.search(r"/(-|[0-9]+)$", str(args.get("node_path", "")))):
            params["name"] = "document_update_node"
        return super().request(message)


class DeleteMissingSucceeds(McpVariant):
    """Deleting a path that does not exist succeeds (and changes nothing)."""

    def failure(self, name: str, args: dict[str, Any], error: dict[str, Any]) -> dict[str, Any]:
        if name == "document_delete_node" and error.get("error", {}).get("code") == "path-not-found":
            return {"result_instead": {"success": True, "deleted_node": None, "version": args.get("version")}}
        return error


class PathInvalidAsNotFound(_Rename):
    """A malformed path is answered ``path-not-found``, not ``path-invalid``."""

    old, new = "path-invalid", "path-not-found"

    def failure(self, name: str, args: dict[str, Any], error: dict[str, Any]) -> dict[str, Any]:
        error = super().failure(name, args, error)
        if error.get("error", {}).get("code") == "path-not-found":
            error["error"]["category"] = "404"
        return error


class RootUpdateRefused(McpVariant):
    """An update of the root ``/`` is refused as a malformed path."""

    def call(self, name: str, args: dict[str, Any]) -> dict[str, Any] | None:
        if name == "document_update_node" and args.get("node_path") == "/":
            return {"result": _tool_result(_error("path-invalid", "cannot replace the root", path="/"),
                                           is_error=True)}
        return None


class ToolsWithoutOutputSchemas(McpVariant):
    """Tools are declared without output schemas."""

    def tools(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for tool in tools:
            tool.pop("outputSchema", None)
        return tools


class BadArgumentsAre500(McpVariant):
    """A malformed call is answered as a server error (``internal-error``, 500)."""

    def failure(self, name: str, args: dict[str, Any], error: dict[str, Any]) -> dict[str, Any]:
        if error.get("error", {}).get("code") == "invalid-request":
            return _error("internal-error", "unexpected arguments")
        return error


class CreateWithoutDefaults(McpVariant):
    """A new document's ``initial_tree`` is reported empty (the stored document has its defaults)."""

    def success(self, name: str, args: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        if name == "document_create":
            body["initial_tree"] = {}
        return body


class DashReadsTheLastItem(_Rewrite):
    """Reading an array's ``-`` returns its last item (``-`` read as ``-1``) instead of an error."""

    tool = "document_read_node"

    def rewrite(self, args: dict[str, Any]) -> None:
        parts = str(args.get("node_path", "/")).split("/")
        args["node_path"] = "/".join("-1" if part == "-" else part for part in parts)


class EscapesDecodedBeforeSplit(McpVariant):
    """A path is unescaped before it is split: ``~1`` becomes a step down (``/metadata/author~1name`` reads
    ``/metadata/author/name``)."""

    def call(self, name: str, args: dict[str, Any]) -> dict[str, Any] | None:
        if name in _NODE_TOOLS and isinstance(args.get("node_path"), str):
            args["node_path"] = args["node_path"].replace("~1", "/").replace("~0", "~")
        return None


class ServerVersionAsSchemaVersion(McpVariant):
    """``schema_get_root`` names the server's own version as ``schema_version``, not the schema's."""

    def success(self, name: str, args: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        if name == "schema_get_root":
            body["schema_version"] = "0.9.0"
        return body


class CreateAnswersTwice(McpVariant):
    """Every other ``document_create`` is answered with the previous one's result: two creates, one id."""

    def __init__(self) -> None:
        self.last: dict[str, Any] | None = None
        self.count = 0

    def call(self, name: str, args: dict[str, Any]) -> dict[str, Any] | None:
        if name == "document_create":
            self.count += 1
            if self.count % 2 == 0 and self.last is not None:
                return {"result": _tool_result(self.last)}
        return None

    def success(self, name: str, args: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        if name == "document_create":
            self.last = body
        return body


class TopLevelDefaultsOnly(McpVariant):
    """A new document's ``initial_tree`` shows the defaults of the top level only: nested objects come out
    empty."""

    def success(self, name: str, args: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        if name == "document_create" and isinstance(body.get("initial_tree"), dict):
            body["initial_tree"] = {key: {} if isinstance(value, dict) else value
                                    for key, value in body["initial_tree"].items()}
        return body


class FirstMissingDefaultOnly(McpVariant):
    """A create refused for required fields without defaults names only the first of them."""

    def failure(self, name: str, args: dict[str, Any], error: dict[str, Any]) -> dict[str, Any]:
        details = error.get("error", {}).get("details")
        if isinstance(details, dict) and isinstance(details.get("paths"), list):
            details["paths"] = details["paths"][:1]
        return error


class ItemSchemaIsTheArrays(_Rewrite):
    """The schema of an array item (``/chapters/0``) is the array's schema."""

    tool = "schema_get_node"

    def rewrite(self, args: dict[str, Any]) -> None:
        path = str(args.get("node_path", "/"))
        if re.search(r"/-?[0-9]+$", path):
            args["node_path"] = _parent(path)


def _first_alternatives(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {key: (value[:1] if key in ("oneOf", "anyOf") and isinstance(value, list) else
                      _first_alternatives(value)) for key, value in schema.items()}
    if isinstance(schema, list):
        return [_first_alternatives(item) for item in schema]
    return schema


class FirstAlternativeOnly(McpVariant):
    """A polymorphic node's schema lists only its first alternative."""

    def success(self, name: str, args: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        if name == "schema_get_node":
            body["node_schema"] = _first_alternatives(body.get("node_schema"))
        return body


class AnyPathHasASchema(McpVariant):
    """A path the schema does not allow gets the schema that allows anything (``{}``), not an error."""

    def failure(self, name: str, args: dict[str, Any], error: dict[str, Any]) -> dict[str, Any]:
        if name == "schema_get_node" and error.get("error", {}).get("code") == "path-not-found":
            return {"result_instead": {"success": True, "node_schema": {}}}
        return error


class NullUpdateAcknowledged(McpVariant):
    """An update to ``null`` is acknowledged as written (and not stored) instead of refused."""

    def call(self, name: str, args: dict[str, Any]) -> dict[str, Any] | None:
        if name == "document_update_node" and "node_data" in args and args["node_data"] is None:
            version = args.get("version")
            return {"result": _tool_result({
                "success": True, "updated_node": None,
                "version": version + 1 if isinstance(version, int) else version,
                "validation_report": {"valid": True, "error_count": 0, "errors": []}})}
        return None


class MissingAncestorIsTheParent(McpVariant):
    """A write below a missing path names the path's parent as the deepest existing ancestor."""

    def failure(self, name: str, args: dict[str, Any], error: dict[str, Any]) -> dict[str, Any]:
        details = error.get("error", {}).get("details")
        if name in _WRITES and error["error"].get("code") == "path-not-found" and isinstance(details, dict):
            details["deepest_ancestor"] = _parent(str(args.get("node_path", "/")))
        return error


class LoserToldItWon(McpVariant):
    """A write that lost the race (``version-conflict``) is acknowledged as written."""

    def failure(self, name: str, args: dict[str, Any], error: dict[str, Any]) -> dict[str, Any]:
        if name == "document_update_node" and error.get("error", {}).get("code") == "version-conflict":
            actual = error["error"].get("details", {}).get("actual_version")
            return {"result_instead": {"success": True, "updated_node": args.get("node_data"), "version": actual,
                                       "validation_report": {"valid": True, "error_count": 0, "errors": []}}}
        return error


class RequiredDeleteIsAConflict(McpVariant):
    """Deleting a required member is refused as ``conflict`` instead of a validation report."""

    def failure(self, name: str, args: dict[str, Any], error: dict[str, Any]) -> dict[str, Any]:
        violations = error.get("error", {}).get("details", {}).get("violations")
        if (name == "document_delete_node" and isinstance(violations, list)
                and any(violation.get("code") == "required-missing" for violation in violations)):
            return _error("conflict", "a required member cannot be deleted", path=args.get("node_path"))
        return error


class ArrayDeleteTakesTheLast(_Rewrite):
    """Deleting an array item removes the array's last item, whichever was named."""

    tool = "document_delete_node"

    def rewrite(self, args: dict[str, Any]) -> None:
        path = str(args.get("node_path", "/"))
        if re.search(r"/[0-9]+$", path):
            args["node_path"] = f"{_parent(path)}/-1"


class MinItemsNamesTheItem(McpVariant):
    """A delete refused for ``minItems`` names the deleted item as the violation's path, not the array."""

    def failure(self, name: str, args: dict[str, Any], error: dict[str, Any]) -> dict[str, Any]:
        violations = error.get("error", {}).get("details", {}).get("violations")
        if name == "document_delete_node" and isinstance(violations, list):
            for violation in violations:
                if violation.get("code") == "min-items":
                    violation["path"] = args.get("node_path")
        return error


class TotalCountsFromOne(McpVariant):
    """The list's ``total_documents`` is one more than the documents there are."""

    def success(self, name: str, args: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        if name == "document_list" and isinstance(body.get("total_documents"), int):
            body["total_documents"] += 1
        return body


MCP_VARIANTS: dict[str, Callable[[], McpVariant]] = {
    "spec-only": SpecOnly, "core-tools-only": CoreToolsOnly, "lower-case-ids": LowerCaseIds,
    "stale-reads": StaleReads, "stale-list": StaleList, "stale-export": StaleExport,
    "stale-version": StaleVersion, "conflict-for-version-conflict": ConflictForVersionConflict,
    "invalid-id-for-not-found": InvalidIdForNotFound, "first-violation-only": FirstViolationOnly,
    "dash-path-reported": DashPathReported, "no-negative-index": NoNegativeIndex,
    "root-as-empty-member": RootAsEmptyMember, "never-has-more": NeverHasMore,
    "case-sensitive-ids": CaseSensitiveIds, "write-result-keeps-version": WriteResultKeepsVersion,
    "undereferenced-schemas": UndereferencedSchemas, "no-remediation": NoRemediation,
    "create-wants-schema-id": CreateWantsSchemaId, "read-returns-the-parent": ReadReturnsTheParent,
    "read-index-shifted": ReadIndexShifted, "update-index-shifted": UpdateIndexShifted,
    "delete-the-parent": DeleteTheParent, "schema-of-the-parent": SchemaOfTheParent,
    "create-node-as-update": CreateNodeAsUpdate, "delete-missing-succeeds": DeleteMissingSucceeds,
    "path-invalid-as-not-found": PathInvalidAsNotFound, "root-update-refused": RootUpdateRefused,
    "tools-without-output-schemas": ToolsWithoutOutputSchemas, "bad-arguments-are-500": BadArgumentsAre500,
    "create-without-defaults": CreateWithoutDefaults, "dash-reads-the-last-item": DashReadsTheLastItem,
    "escapes-decoded-before-split": EscapesDecodedBeforeSplit,
    "server-version-as-schema-version": ServerVersionAsSchemaVersion, "create-answers-twice": CreateAnswersTwice,
    "top-level-defaults-only": TopLevelDefaultsOnly, "first-missing-default-only": FirstMissingDefaultOnly,
    "item-schema-is-the-arrays": ItemSchemaIsTheArrays, "first-alternative-only": FirstAlternativeOnly,
    "any-path-has-a-schema": AnyPathHasASchema, "null-update-acknowledged": NullUpdateAcknowledged,
    "missing-ancestor-is-the-parent": MissingAncestorIsTheParent, "loser-told-it-won": LoserToldItWon,
    "required-delete-is-a-conflict": RequiredDeleteIsAConflict, "array-delete-takes-the-last": ArrayDeleteTakesTheLast,
    "min-items-names-the-item": MinItemsNamesTheItem, "total-counts-from-one": TotalCountsFromOne,
}


class RestVariant:
    """One behaviour of a REST server, changed on the wire (see ``rest_proxy.py``)."""

    def request(self, method: str, path: str, query: dict[str, str]) -> tuple[int, Any] | None:
        """Answer here instead of forwarding: (status, JSON body)."""
        return None

    def response(self, method: str, path: str, query: dict[str, str], status: int, body: Any) -> tuple[int, Any]:
        return status, body


class RestStaleReads(RestVariant):
    """A node, once read, is served from a cache that writes never clear."""

    def __init__(self) -> None:
        self.cache: dict[str, Any] = {}

    def _key(self, method: str, path: str, query: dict[str, str]) -> str | None:
        if method == "GET" and re.fullmatch(r"/api/v1/documents/[^/]+", path) and set(query) <= {"path"}:
            return path + "?" + query.get("path", "/")
        return None

    def request(self, method: str, path: str, query: dict[str, str]) -> tuple[int, Any] | None:
        key = self._key(method, path, query)
        return (200, self.cache[key]) if key in self.cache else None

    def response(self, method: str, path: str, query: dict[str, str], status: int, body: Any) -> tuple[int, Any]:
        key = self._key(method, path, query)
        if key is not None and status == 200:
            self.cache[key] = body
        return status, body


class RestConflictIs400(RestVariant):
    """A version conflict is answered with status 400 instead of 409."""

    def response(self, method: str, path: str, query: dict[str, str], status: int, body: Any) -> tuple[int, Any]:
        if isinstance(body, dict) and body.get("error", {}).get("code") == "version-conflict":
            body["error"]["category"] = "400"
            return 400, body
        return status, body


class RestOffsetIgnored(RestVariant):
    """The list ignores ``offset``: every page is the first."""

    def request(self, method: str, path: str, query: dict[str, str]) -> tuple[int, Any] | None:
        query.pop("offset", None)
        return None


class RestCreatedIs200(RestVariant):
    """A new document is answered 200 instead of 201 Created."""

    def response(self, method: str, path: str, query: dict[str, str], status: int, body: Any) -> tuple[int, Any]:
        return (200, body) if method == "POST" and path == "/api/v1/documents" and status == 201 else (status, body)


class RestLowerCaseIds(RestVariant):
    """ULIDs are case-insensitive: this REST API hands them out in lower case (results, list entries, error
    details and messages, URIs) and accepts either case."""

    def response(self, method: str, path: str, query: dict[str, str], status: int, body: Any) -> tuple[int, Any]:
        return status, _lower_result(body) if isinstance(body, dict) else body


class RestOpenApi30(RestVariant):
    """The OpenAPI document is OpenAPI 3.0, not 3.1."""

    def response(self, method: str, path: str, query: dict[str, str], status: int, body: Any) -> tuple[int, Any]:
        if path == "/openapi.json" and isinstance(body, dict):
            body["openapi"] = "3.0.3"
        return status, body


class RestOwnMessages(RestVariant):
    """REST words its error messages its own way (MCP keeps the server's): the doors' answers differ."""

    def response(self, method: str, path: str, query: dict[str, str], status: int, body: Any) -> tuple[int, Any]:
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            body["error"]["message"] = f"HTTP {status}: {body['error'].get('message')}"
        return status, body


REST_VARIANTS: dict[str, Callable[[], RestVariant]] = {
    "rest-unchanged": RestVariant, "rest-lower-case-ids": RestLowerCaseIds, "rest-stale-reads": RestStaleReads,
    "rest-conflict-is-400": RestConflictIs400,
    "rest-offset-ignored": RestOffsetIgnored, "rest-created-is-200": RestCreatedIs200,
    "rest-openapi-3-0": RestOpenApi30, "rest-own-messages": RestOwnMessages,
}


@dataclass(frozen=True)
class Entry:
    """One variant of the catalogue: legal (must pass ``--profile spec``) or broken (caught on ``clause``)."""

    name: str
    door: str
    """``mcp`` (``mcp_proxy.py`` over stdio), ``rest`` (``rest_proxy.py`` over HTTP, the suite given its REST API
    only) or ``http`` (``rest_proxy.py``, the suite given the whole server: REST and MCP of one URL)."""
    clause: str | None
    """The clause that must fail; ``None`` for a legal variant."""
    what: str
    also: tuple[str, ...] = ()
    """More clauses the same behaviour breaks, which must fail too."""

    @property
    def clauses(self) -> tuple[str, ...]:
        """Every clause the variant must fail (none for a legal one)."""
        return () if self.clause is None else (self.clause, *self.also)


def _entry(name: str, door: str, clause: str | None, *also: str) -> Entry:
    factory = (MCP_VARIANTS if door == "mcp" else REST_VARIANTS)[name]
    doc = (factory.__doc__ or name).split("\n\n")[0]
    return Entry(name, door, clause, " ".join(doc.split()), also)


CATALOGUE: tuple[Entry, ...] = (
    _entry("spec-only", "mcp", None),
    _entry("core-tools-only", "mcp", None),
    _entry("lower-case-ids", "mcp", None),
    _entry("rest-lower-case-ids", "rest", None),
    _entry("stale-reads", "mcp", "US4.1"),
    _entry("stale-list", "mcp", "US7.1"),
    _entry("stale-export", "mcp", "US8.1"),
    _entry("stale-version", "mcp", "US4.1"),
    _entry("conflict-for-version-conflict", "mcp", "US4.7"),
    _entry("invalid-id-for-not-found", "mcp", "US2.4"),
    _entry("first-violation-only", "mcp", "FR-059", "US4.6", "US5.4"),
    _entry("dash-path-reported", "mcp", "US5.1"),
    _entry("no-negative-index", "mcp", "FR-024"),
    _entry("root-as-empty-member", "mcp", "US2.3"),
    _entry("never-has-more", "mcp", "US7.3"),
    _entry("case-sensitive-ids", "mcp", "US1.1"),
    _entry("write-result-keeps-version", "mcp", "US4.1"),
    _entry("undereferenced-schemas", "mcp", "US3.2"),
    _entry("no-remediation", "mcp", "FR-096"),
    _entry("create-wants-schema-id", "mcp", "US1.1"),
    _entry("read-returns-the-parent", "mcp", "US2.1"),
    _entry("read-index-shifted", "mcp", "US2.2"),
    _entry("update-index-shifted", "mcp", "US4.5"),
    _entry("delete-the-parent", "mcp", "US6.1"),
    _entry("schema-of-the-parent", "mcp", "US3.1"),
    _entry("create-node-as-update", "mcp", "US5.2"),
    _entry("delete-missing-succeeds", "mcp", "US6.4"),
    _entry("path-invalid-as-not-found", "mcp", "US2.5"),
    _entry("root-update-refused", "mcp", "FR-025"),
    _entry("tools-without-output-schemas", "mcp", "FR-069"),
    _entry("bad-arguments-are-500", "mcp", "EDGE-requests"),
    _entry("create-without-defaults", "mcp", "US1.5"),
    _entry("dash-reads-the-last-item", "mcp", "EDGE-pointers"),
    _entry("escapes-decoded-before-split", "mcp", "FR-021"),
    _entry("server-version-as-schema-version", "mcp", "US0.4"),
    _entry("create-answers-twice", "mcp", "US1.4"),
    _entry("top-level-defaults-only", "mcp", "US1.2"),
    _entry("first-missing-default-only", "mcp", "US1.3"),
    _entry("item-schema-is-the-arrays", "mcp", "US3.3"),
    _entry("first-alternative-only", "mcp", "US3.4"),
    _entry("any-path-has-a-schema", "mcp", "US3.5"),
    _entry("null-update-acknowledged", "mcp", "US4.3"),
    _entry("missing-ancestor-is-the-parent", "mcp", "US4.4", "US5.5"),
    _entry("loser-told-it-won", "mcp", "US4.8"),
    _entry("required-delete-is-a-conflict", "mcp", "US6.2"),
    _entry("array-delete-takes-the-last", "mcp", "US6.3"),
    _entry("min-items-names-the-item", "mcp", "US6.5"),
    _entry("total-counts-from-one", "mcp", "US7.2"),
    _entry("rest-stale-reads", "rest", "US4.1"),
    _entry("rest-conflict-is-400", "rest", "US4.7"),
    _entry("rest-offset-ignored", "rest", "US7.3"),
    _entry("rest-created-is-200", "rest", "US1.1"),
    _entry("rest-openapi-3-0", "rest", "FR-070"),
    _entry("rest-own-messages", "http", "FR-065a"),
)
