"""What an operation is (:class:`Operation`, its REST :class:`Route`), what an invocation runs with
(:class:`Call`), and the one call every door makes (:func:`invoke`: the argument check, the limits
walk, the run). The operations themselves are the entries of :mod:`schemadoc.operations.catalogue`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from schemadoc.errors import SchemaDocError
from schemadoc.operations.arguments import Arguments
from schemadoc.operations.budget import read_budget
from schemadoc.ops.limits import ArgumentScan
from schemadoc.pointer import format_pointer, parse
from schemadoc.service import DocumentService

__all__ = ["Call", "Kind", "Operation", "Route", "argument_error", "invoke", "prepare", "run"]

Kind = Literal["read", "write", "replace"]
"""read: changes nothing; write: adds without destroying (create, undelete); replace: may overwrite or remove."""


@dataclass(frozen=True)
class Route:
    """One REST route of an operation (under ``/api/v1``).

    Path parameters are fields of the arguments model. On ``GET`` every other argument is a query
    parameter; on a method with a body, ``node_path`` and ``dry_run`` are query parameters and the
    rest are members of the JSON body, the version also as ``If-Match``. ``node_path`` is spelt
    ``path`` over REST. ``whole``: the body is this argument itself (not an object holding it), as
    the merge patch of ``PATCH``; ``bare``: the body may also be this argument alone (a bare RFC 6902
    array). ``defaults``: what REST assumes for arguments a request leaves out.
    """

    method: str
    path: str
    operation_id: str = ""
    summary: str = ""
    description: str = ""
    status: int = 200
    whole: str | None = None
    bare: str | None = None
    media_types: tuple[str, ...] = ("application/json",)
    version_only_from_header: bool = False
    defaults: Mapping[str, Any] = field(default_factory=dict)

    def carries(self, name: str) -> Literal["path", "query", "body"]:
        """Where the argument ``name`` travels (the rule above; the door and the client both follow it)."""
        if f"{{{name}}}" in self.path:
            return "path"
        return "query" if self.method == "GET" or name in ("node_path", "dry_run") else "body"


@dataclass(slots=True)
class Call:
    """What an invocation runs with, as its door sets it up.

    ``budget``: the MCP result budget in bytes (``None`` over REST: whole answers, as the spec says);
    ``scans``: walks of written arguments a door already made (REST from the body's text, MCP with
    the surrogate check); ``document_uri``: where a document can be read at this door; ``actor``: who
    the write is made by, recorded in its journal entry: the name of the token the request came with,
    else the door (``rest``, ``mcp``, ``stdio``) or the command (``cli:import``). Only the door sets
    it, never an argument or a header.
    """

    service: DocumentService
    max_depth: int
    budget: int | None = None
    scans: Mapping[str, ArgumentScan] = field(default_factory=dict)
    document_uri: Callable[[str], str] = lambda doc_id: f"schema://{doc_id}"
    actor: str | None = None

    def scanned(self, name: str) -> ArgumentScan | None:
        return self.scans.get(name)

    def max_bytes(self, asked: int | None) -> int | None:
        """A bounded read's size: the caller's, within the result budget at a door that has one."""
        return asked if self.budget is None else read_budget(asked, self.budget)


@dataclass(frozen=True)
class Operation:
    name: str
    title: str
    description: str
    args: type[Arguments]
    result: type[BaseModel]
    run: Callable[[Call, Any], BaseModel]
    kind: Kind
    routes: tuple[Route, ...]
    tag: str
    errors: tuple[int, ...] = (400, 404)
    examples: tuple[dict[str, Any], ...] = ()
    written: tuple[str, ...] = ()
    no_dry_run: str = ""
    """Why a write has no dry run (refused with this reason rather than ignored)."""
    local: Callable[[DocumentService, Any], bool] | None = None
    """REST answers on the event loop when this says the service holds what it needs (else a worker thread)."""
    etag: bool = True
    rest_result: Any = None
    """The REST response model when it differs from ``result`` (a union)."""

    @functools.cached_property
    def fields(self) -> frozenset[str]:
        """The names of the arguments."""
        return frozenset(self.args.model_fields)

    @property
    def dry_run(self) -> bool:
        return "dry_run" in self.fields

    @property
    def writes(self) -> bool:
        return self.kind != "read"

    def agent_description(self, examples: tuple[dict[str, Any], ...] | None = None) -> str:
        """The tool description: the text, then one example call per line (``examples``: instead of the entry's)."""
        shown = self.examples if examples is None else examples
        lines = [self.description, *(f"Example: {self.name} {json.dumps(example)}" for example in shown)]
        return "\n".join(lines)


# -- the one argument check ----------------------------------------------------------------------


def argument_error(name: str, error: ValidationError) -> SchemaDocError:
    """``invalid-request`` for arguments the operation's model refuses, worded the same at every door."""
    problems: list[dict[str, Any]] = []
    for item in error.errors(include_url=False, include_input=False):
        argument = ".".join(str(part) for part in item["loc"]) or "arguments"
        problem = "missing" if item["type"] == "missing" else "wrong-type-or-value"
        problems.append({"argument": argument, "problem": problem, "message": item["msg"]})
    summary = "; ".join(
        (f"'{p['argument']}' is missing" + (_VERSION_HINT if p["argument"] == "version" else ""))
        if p["problem"] == "missing" else f"'{p['argument']}': {p['message']}" for p in problems)
    return SchemaDocError(
        "invalid-request", f"Invalid arguments for {name}: {summary}.",
        {"tool": name, "argument": problems[0]["argument"] if problems else None, "problems": problems},
        remediation=f"Send the arguments {name} declares, with those types (MCP: tools/list; REST: /openapi.json).")


_VERSION_HINT = (" (the version of your last read or write; over REST as \"version\" in the body or an If-Match "
                 "header)")


def invoke(call: Call, operation: Operation, raw: Mapping[str, Any]) -> BaseModel:
    """Check ``raw`` against the operation's arguments, walk its written arguments once, and run it."""
    call, args = prepare(call, operation, raw)
    return run(call, operation, args)


def run(call: Call, operation: Operation, args: Any) -> BaseModel:
    """Run the operation on checked arguments, in a tracing span named after it (when tracing is on). A write
    refused with ``version-conflict`` gets its ``suggested_call`` (:func:`conflict_suggestion`)."""
    try:
        with call.service.span(operation.name):
            return operation.run(call, args)
    except SchemaDocError as error:
        if error.code != "version-conflict" or not operation.writes or "suggested_call" in error.details:
            raise
        suggestion = conflict_suggestion(call.service, operation.name, args, error.details)
        if suggestion is None:
            raise
        raise SchemaDocError(error.code, error.message, {**error.details, "suggested_call": suggestion},
                             remediation=error.remediation) from None


_SAFE_AGAIN = frozenset({"document_update_node", "document_create_node", "document_delete_node",
                         "document_apply_patch", "document_move_node", "document_merge_patch"})
"""Writes that mean the same when sent again at a later version, if nothing near what they write changed."""


def conflict_suggestion(service: DocumentService, tool: str, args: Any, details: Mapping[str, Any]) -> \
        dict[str, Any] | None:
    """A ``version-conflict``'s ``suggested_call``: the same call with the current version when the versions in
    between wrote nothing at, above or below the places it writes (array writes count from the array: an insert
    or removal elsewhere in it shifts indices); else a read of the node it writes (or the document), to send the
    write again with the version that read returns."""
    doc_id, sent, actual = details.get("doc_id"), details.get("expected_version"), details.get("actual_version")
    if not isinstance(doc_id, str) or not isinstance(sent, int) or not isinstance(actual, int):
        return None
    mine = _written_places(tool, args)
    changed = service.paths_changed(doc_id, sent, actual) if sent < actual and tool in _SAFE_AGAIN else None
    if mine is not None and changed is not None and not any(_near(a, b) for a in mine for b in changed):
        arguments = {name: getattr(args, name) for name in sorted(args.model_fields_set)}
        return {"tool": tool, "arguments": {**arguments, "version": actual},
                "reason": f"version{'s' if actual > sent + 1 else ''} {sent + 1}"
                          f"{f'-{actual}' if actual > sent + 1 else ''} changed nothing this call writes: send it "
                          "as it is"}
    read = {"doc_id": doc_id, "node_path": format_pointer(mine[0]) or "/" if mine and len(mine) == 1 else "/",
            "max_depth": 2}
    return {"tool": "document_read_node", "arguments": read,
            "reason": "the document changed where this call writes (or too much to tell): read it, then send "
                      "your write again with the version the read returns"}


def _written_places(tool: str, args: Any) -> list[list[str]] | None:
    """The token lists of the places a write touches, taken at their array when an index is involved."""
    if tool == "document_apply_patch":
        pointers = [p for op in args.patch for p in (op.get("path"), op.get("from")) if isinstance(p, str)]
    elif tool == "document_move_node":
        pointers = [args.from_path, args.to_path]
    elif tool in _SAFE_AGAIN:
        pointers = [args.node_path]
    else:
        return None
    places = []
    for pointer in pointers:
        try:
            tokens = [str(token) for token in parse(pointer if pointer != "/" else "")]
        except SchemaDocError:
            return None
        if tokens and (tokens[-1] == "-" or tokens[-1].lstrip("-").isdigit()):
            tokens = tokens[:-1]  # an index: the array's other items may shift
        places.append(tokens)
    return places


def _near(mine: list[str], pointer: str) -> bool:
    try:
        theirs = [str(token) for token in parse(pointer)]
    except SchemaDocError:
        return True
    common = min(len(mine), len(theirs))
    return mine[:common] == theirs[:common]


def prepare(call: Call, operation: Operation, raw: Mapping[str, Any]) -> tuple[Call, Any]:
    """The checked arguments of ``raw`` (and the call holding the walks of its written arguments)."""
    if not operation.dry_run and "dry_run" in raw and raw["dry_run"] is not False:
        raise SchemaDocError("invalid-request", f"{operation.title} has no dry run; {operation.no_dry_run}",
                             {"tool": operation.name, "argument": "dry_run"})
    known = operation.fields
    if not known.issuperset(raw):
        _refuse_unknown(operation, raw)
        raw = {name: value for name, value in raw.items() if name in known}
    try:
        args = operation.args.model_validate(raw)
    except ValidationError as error:
        raise argument_error(operation.name, error) from None
    if not operation.written:
        return call, args
    scans = dict(call.scans)
    for name in operation.written:
        value = getattr(args, name)
        scan = scans.get(name)
        if scan is None or scan.value is not value:
            scan = scans[name] = call.service.scan_argument(value)
        scan.check_depth(call.max_depth, name)
    return Call(call.service, call.max_depth, call.budget, scans, call.document_uri, call.actor), args


def _refuse_unknown(operation: Operation, raw: Mapping[str, Any]) -> None:
    """``invalid-request`` naming the arguments the operation does not take (a ``dry_run: false`` it has no dry run
    for is tolerated: it asks for what happens anyway)."""
    known = operation.fields
    unknown = sorted(str(name) for name in raw if name not in known and not (name == "dry_run" and not raw[name]))
    if unknown:
        raise SchemaDocError(
            "invalid-request", f"Unknown argument(s) for {operation.name}: {', '.join(unknown)}.",
            {"tool": operation.name, "argument": unknown[0], "unknown": unknown, "accepted": sorted(known)},
            remediation=f"Send only the arguments {operation.name} declares (MCP: tools/list; REST: /openapi.json).")
