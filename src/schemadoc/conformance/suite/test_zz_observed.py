"""What the whole suite observed: every error code is catalogued and every reachable one was seen.

These tests run last (``conftest.py`` moves them there) and read :data:`OBSERVED`, where every
door records what it saw. The "was seen" check needs the whole suite: it is skipped when only
a part runs (a single file, ``-k``) or when the suite is spread over processes: with pytest-xdist, use
``--dist loadfile`` (``conftest.py`` then gives the whole suite to one worker).
"""

from __future__ import annotations

import json
from itertools import combinations

import pytest
from mcp import MCPError

from schemadoc.errors import CATALOG

from ..spec import CODES, is_kebab_code
from .doors import OBSERVED, TARGET, Door, McpDoor, RestDoor, in_process, not_applicable, text_of

pytestmark = pytest.mark.anyio

REACHABLE = frozenset({
    "invalid-request", "invalid-doc-id", "path-invalid", "patch-invalid", "root-not-deletable",
    "document-not-found", "path-not-found", "conflict", "version-conflict",
    "patch-test-failed", "validation-failed", "document-too-deep", "version-not-found", "filter-not-indexed",
})
"""Codes a client can provoke through every door with the bundled schema and default settings."""

REACHABLE_OVER_HTTP = frozenset({"route-not-found", "method-not-allowed", "request-too-deep", "unsupported-media-type"})
"""Codes only the REST door can produce (unknown URLs, wrong methods, over-deep bodies, bodies not declared as
JSON)."""

REACHABLE_IN_PROCESS = frozenset({"required-field-without-default"})
"""Codes only a server started on one of the shipped test schemas can produce (``test_nested_defaults``: in
process, or given the command that starts a server)."""

NOT_PROVOKED = {
    "request-too-large": "needs a body over max_body_bytes (64 MiB by default), a string over max_string_length "
                         "(1 MiB characters) or a patch over max_patch_operations (1,000); tested with small limits "
                         "elsewhere",
    "too-many-subscribers": "needs more than max_subscribers_per_document (100) live subscribers of one document; "
                            "tested with small limits elsewhere",
    "too-many-sessions": "needs more than max_mcp_sessions (1,000) open MCP sessions; tested with a small limit "
                         "elsewhere",
    "lock-timeout": "needs a write lock held for 10 seconds",
    "number-out-of-range": "the bundled schema bounds every number it allows (tests/unit/test_service.py)",
    "resource-not-found": "an unknown resource is JSON-RPC -32602 with data.uri (test_mcp_wire)",
    "schema-load-failed": "a start-up failure (tests/e2e, tests/unit)",
    "schema-resolution-failed": "a start-up failure (tests/e2e, tests/unit)",
    "config-invalid": "a start-up failure (tests/unit/test_config.py)",
    "storage-read-failed": "needs a corrupted storage directory",
    "storage-write-failed": "needs an unwritable storage directory",
    "internal-error": "a bug",
    "storage-unavailable": "needs the database of a PostgreSQL server to be down (tests/e2e/test_postgres_outage.py)",
    "commit-outcome-unknown": "needs the database connection to break during a commit "
                              "(tests/unit/test_storage_postgres_outage.py)",
    "host-not-allowed": "needs a Host the server does not answer for; the suite calls by the server's own name "
                        "(tests/unit/test_access.py, tests/e2e/test_access_server.py)",
    "origin-not-allowed": "needs a browser Origin from another site (tests/unit/test_access.py)",
    "token-missing": "needs a server with access tokens (tests/e2e/test_access_server.py)",
    "token-invalid": "needs a server with access tokens (tests/e2e/test_access_server.py)",
    "token-read-only": "needs a server with access tokens (tests/e2e/test_access_server.py)",
    "session-not-found": "needs a session opened with another access token (tests/e2e/test_mcp_hostile.py)",
    "shutting-down": "needs the server to be stopping (tests/e2e/test_shutdown.py)",
    "store-format-unsupported": "a start-up failure on a store a newer version wrote (tests/e2e/test_store_format.py)",
    "archive-invalid": "raised by schemadoc import, not by a door (tests/unit/test_archive.py)",
    "migration-invalid": "raised by schemadoc migrate-documents, not by a door (tests/e2e/test_migrate_documents.py)",
    "semantic-search-unavailable": "needs a server installed without the semantic extra (tests/e2e/"
                                   "test_installed_wheel.py, tests/unit/test_search_semantic_doors.py)",
    "import-conflict": "raised by schemadoc import, not by a door (tests/unit/test_archive.py)",
    "subscriber-too-slow": "needs an event-stream reader that stops reading under heavy writes "
                           "(tests/e2e/test_hostile_clients.py)",
    "too-many-connections": "needs more open connections than max_connections_per_client (64); tested with a small "
                            "limit elsewhere (tests/e2e/test_hostile_clients.py)",
    "headers-too-large": "needs request headers over max_header_bytes (32 KiB) (tests/e2e/test_hostile_clients.py)",
    "request-timeout": "needs a client that stops in the middle of a request for header_timeout_seconds "
                       "(tests/e2e/test_hostile_clients.py)",
}
"""Catalogued request-level codes this suite does not provoke, and why."""


def test_every_error_code_any_door_returned_is_in_the_catalog() -> None:
    """Every error carries a kebab-case code (FR-097); schemadoc's own are in its catalogue. Another
    implementation may have codes of its own (FR-100): their spelling is judged, their set is its own."""
    seen = {code for codes in OBSERVED.codes.values() for code in codes}
    assert {code for code in seen if not is_kebab_code(code)} == set(), f"codes that are no kebab-case code: {seen}"
    if TARGET.in_process:
        assert seen - set(CATALOG) == set(), f"codes outside the catalog: {sorted(seen - set(CATALOG))}"


def test_the_code_lists_are_catalogued_and_disjoint() -> None:
    lists = {"REACHABLE": REACHABLE, "REACHABLE_OVER_HTTP": REACHABLE_OVER_HTTP,
             "REACHABLE_IN_PROCESS": REACHABLE_IN_PROCESS, "NOT_PROVOKED": frozenset(NOT_PROVOKED)}
    for name, codes in lists.items():
        assert codes - set(CATALOG) == set(), f"{name} names codes the catalog lacks: {sorted(codes - set(CATALOG))}"
    for (name, codes), (other, others) in combinations(lists.items(), 2):
        assert codes & others == set(), f"{sorted(codes & others)} in both {name} and {other}"


def test_no_door_returned_a_code_said_not_to_be_provoked() -> None:
    judged = [code for code in NOT_PROVOKED if code in CODES or not TARGET.spec_only]
    seen = {code: sorted(door for door, codes in OBSERVED.codes.items() if code in codes)
            for code in judged}
    provoked = {code: doors for code, doors in seen.items() if doors}
    assert provoked == {}, "returned after all (a bug, or a stale NOT_PROVOKED entry to move to REACHABLE)"


def test_every_catalogued_code_is_either_reachable_or_explained() -> None:
    validation_codes = {code for code, entry in CATALOG.items() if entry.kind == "validation"}
    accounted = REACHABLE | REACHABLE_OVER_HTTP | REACHABLE_IN_PROCESS | set(NOT_PROVOKED) | validation_codes
    assert set(CATALOG) - accounted == set(), "new catalog codes: add them to REACHABLE or NOT_PROVOKED"


def _reachable(door_name: str) -> frozenset[str]:
    return REACHABLE | (REACHABLE_OVER_HTTP if door_name.endswith("rest") else frozenset()) | (
        REACHABLE_IN_PROCESS if in_process(door_name) else frozenset())


def test_each_door_returned_every_reachable_spec_code(door_name: str, whole_suite: bool) -> None:
    """The spec's codes for the situations the suite provokes, through every door."""
    if not whole_suite:
        pytest.skip("needs the whole suite to have run in this process")
    expected = _reachable(door_name) & set(CODES)
    seen = OBSERVED.codes.get(door_name, set())
    assert expected - seen == set(), f"{door_name} never returned {sorted(expected - seen)}"


_NEEDS = {"patch-invalid": "document_apply_patch", "patch-test-failed": "document_apply_patch",
          "version-not-found": "document_history"}
"""Extension codes only a server with that extension tool can return."""


async def test_each_door_returned_every_reachable_extension_code(door: Door, whole_suite: bool) -> None:
    """schemadoc's codes beyond the spec, from a server that publishes them in its error catalogue (the MCP
    resource ``schema://errors``, REST ``GET /api/v1/errors``)."""
    if not whole_suite:
        pytest.skip("needs the whole suite to have run in this process")
    published = await _published_codes(door)
    used = OBSERVED.succeeded.get(door.name, set())
    expected = {code for code in _reachable(door.name) - set(CODES) & published
                if code not in _NEEDS or _NEEDS[code] in used}
    if not expected:
        not_applicable("the server publishes none of schemadoc's codes beyond the spec")
    seen = OBSERVED.codes.get(door.name, set())
    assert expected - seen == set(), f"{door.name} publishes but never returned {sorted(expected - seen)}"


async def _published_codes(door: Door) -> set[str]:
    if TARGET.spec_only:
        not_applicable("codes beyond the spec (--profile spec)")
    listed: object = None
    if isinstance(door, McpDoor):
        try:
            listed = json.loads(text_of((await door.client.read_resource("schema://errors")).contents))
        except (MCPError, ValueError):
            listed = None
    elif isinstance(door, RestDoor):
        outcome = await door.request("GET", f"{door.prefix}/errors")
        listed = outcome.body if outcome.ok else None
    if isinstance(listed, dict):
        listed = listed.get("errors", list(listed.values()))
    if not isinstance(listed, list):
        not_applicable("the server publishes no error catalogue")
    return {entry["code"] for entry in listed if isinstance(entry, dict) and isinstance(entry.get("code"), str)}


def test_no_door_broke_the_shape_of_the_wire() -> None:
    assert OBSERVED.anomalies == []
