"""What every door shares: the tools and their arguments, an :class:`Outcome`, the :class:`Door` protocol, the
transcript and the observations every outcome passes through, and the target the suite runs against."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, NoReturn, Protocol

import pytest

from schemadoc.errors import CATALOG

from ...readings import category_matches
from ...spec import ARGUMENTS, code_status
from ...target import current

CALL_TIMEOUT = 30.0
"""Seconds one call may take before the test fails (keeps a hung door from hanging the suite)."""

TOOLS = (
    "document_create",
    "document_read_node",
    "document_update_node",
    "document_create_node",
    "document_delete_node",
    "document_apply_patch",
    "document_list",
    "schema_get_root",
    "schema_get_node",
    "document_history",
    "document_diff",
    "document_revert",
    "document_merge_patch",
    "document_delete",
    "document_undelete",
    "document_purge",
    "document_changes",
    "document_outline",
    "document_next_incomplete",
    "document_move_node",
    "document_search",
    "document_stats",
    "document_render",
)

CORE_TOOLS = frozenset(ARGUMENTS)
"""The spec's operations: every implementation must offer them through every door it has."""
OPTIONAL_TOOLS = frozenset(TOOLS) - CORE_TOOLS
"""Beyond the spec: a server without one of these makes its tests not applicable (detected per call: MCP
``tools/list`` does not declare it, or the REST route answers 404/405 without a catalogued error)."""
NA_PREFIX = "not applicable: "

_CREATED = frozenset({"document_create", "document_create_node"})
_ERROR_MEMBERS = ("code", "category", "message", "details", "remediation")


def not_applicable(reason: str) -> NoReturn:
    """End the test as not applicable: the server does not offer what it tests (reported as such)."""
    pytest.skip(NA_PREFIX + reason)


def offers(body: dict[str, Any], member: str) -> bool:
    """Whether to judge ``member``, a result member beyond the spec: the server returned it, and the profile
    judges extensions. A spec clause never fails for an extension member the server leaves out."""
    return not TARGET.spec_only and member in body


def extension_arguments(tool: str, args: dict[str, Any]) -> list[str]:
    """The arguments of a call that the spec does not give ``tool`` (all of them for a tool beyond the spec)."""
    spec = ARGUMENTS.get(tool)
    return sorted(args) if spec is None else sorted(set(args) - spec)


def _beyond_the_spec(tool: str, args: dict[str, Any], declared: frozenset[str] | None = None) -> None:
    """Not applicable: a call that needs a tool or an argument beyond the spec, under ``--profile spec`` or
    when the server does not declare it (``declared``: the tool's declared arguments, if known)."""
    if tool not in CORE_TOOLS and TARGET.spec_only:
        not_applicable(f"{tool} is beyond the spec (--profile spec)")
    extra = extension_arguments(tool, args) if tool in CORE_TOOLS else []
    if extra and TARGET.spec_only:
        not_applicable(f"{tool} with {', '.join(extra)}: beyond the spec (--profile spec)")
    missing = [name for name in extra if declared is not None and name not in declared]
    if missing:
        not_applicable(f"the server's {tool} declares no argument {', '.join(missing)}")


def _no_route(status: int, body: Any) -> bool:
    """A 404/405 that is not one of the catalog's own answers: the route does not exist on this server."""
    if status not in (404, 405):
        return False
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code not in CATALOG or code in ("route-not-found", "method-not-allowed")


def _text(content: Any) -> Any:
    if isinstance(content, bytes):
        return content[:2000].decode("utf-8", errors="replace")
    return content


@dataclass
class Transcript:
    """The exchanges of the current test, newest last: a failure reports the one that failed."""

    exchanges: list[dict[str, Any]] = field(default_factory=list)
    keep: int = 8

    def add(self, door: str, request: dict[str, Any], response: dict[str, Any]) -> None:
        self.exchanges.append({"door": door, "request": request, "response": response})
        del self.exchanges[:-self.keep]

    def clear(self) -> None:
        self.exchanges.clear()


TRANSCRIPT = Transcript()


class NotRepresentable(Exception):
    """The arguments cannot be expressed through this door (e.g. a list as a REST path segment)."""


@dataclass
class Outcome:
    """What one call through a door produced."""

    ok: bool
    body: dict[str, Any]
    """Success: the result body. Failure: the error object ``{"error": {...}}``."""
    status: int
    """REST: the HTTP status. MCP: 200 (201 for creations) on success, else the error's catalog status."""
    headers: dict[str, str] = field(default_factory=dict)
    """REST response headers (lower-case names); ``{}`` for MCP."""
    rpc_error: int | None = None
    """MCP only: the JSON-RPC error code when the server answered with a protocol error."""
    rpc_data: Any = None
    """MCP only: the ``data`` of that JSON-RPC error."""

    @property
    def error(self) -> dict[str, Any]:
        error = self.body.get("error") if not self.ok else None
        return error if isinstance(error, dict) else {}

    @property
    def code(self) -> str | None:
        code = self.error.get("code")
        return code if isinstance(code, str) else None

    @property
    def details(self) -> dict[str, Any]:
        details = self.error.get("details")
        return details if isinstance(details, dict) else {}

    def __repr__(self) -> str:
        text = json.dumps(self.body, default=str)
        if len(text) > 1500:
            text = text[:1500] + "…"
        return f"Outcome(ok={self.ok}, status={self.status}, body={text})"


class Door(Protocol):
    """One way into a server."""

    name: str
    """The pytest id: ``rest``, ``mcp-auto``, ``mcp-legacy``, ``remote-rest``, …"""
    kind: str
    """``rest`` or ``mcp``."""

    async def call(self, tool: str, args: dict[str, Any]) -> Outcome:
        """Call one tool (by its MCP name) with its MCP arguments."""
        ...

    async def read_document(self, doc_id: str) -> Outcome:
        """The whole document (export): success body ``{"document": <content>}``."""
        ...

    async def read_version(self, doc_id: str, version: int | str) -> Outcome:
        """The whole document at a past version: success body ``{"document": <content>}``."""
        ...


@dataclass
class Observations:
    """What every door saw during the session (one pytest process)."""

    codes: dict[str, set[str]] = field(default_factory=dict)
    anomalies: list[str] = field(default_factory=list)
    calls: dict[str, int] = field(default_factory=dict)
    succeeded: dict[str, set[str]] = field(default_factory=dict)
    """The tools (and reads) each door called with success at least once."""

    def record(self, door: str, tool: str, outcome: Outcome) -> None:
        self.calls[door] = self.calls.get(door, 0) + 1
        if outcome.ok:
            self.succeeded.setdefault(door, set()).add(tool)
            return
        code = outcome.code
        if outcome.rpc_error is not None and code is None:
            return  # a protocol error (invalid params): no error object to judge
        self.codes.setdefault(door, set()).add(code if code is not None else "<no code>")
        error = outcome.error
        missing = [member for member in _ERROR_MEMBERS if member not in error]
        if missing:
            self.anomaly(door, tool, f"error object lacks {missing}: {outcome!r}")
        entry = CATALOG.get(code or "")
        status = code_status(code) or (entry.status if entry is not None else None)
        if status is not None and not category_matches(error.get("category"), status):
            self.anomaly(door, tool, f"{code}: category {error.get('category')!r}, catalog says {status}")
        if status is not None and outcome.status != status and outcome.rpc_error is None:
            self.anomaly(door, tool, f"{code}: status {outcome.status}, catalog says {status}")

    def anomaly(self, door: str, tool: str, text: str) -> None:
        self.anomalies.append(f"[{door}] {tool}: {text}")


OBSERVED = Observations()


TARGET = current()
"""What the suite runs against (:mod:`schemadoc.conformance.target`): fresh in-process servers by default."""
REMOTE_URL = TARGET.rest_url
"""A running server's REST base URL, if any (kept for tests that ask whether the server is shared)."""
DOOR_NAMES = TARGET.door_names
