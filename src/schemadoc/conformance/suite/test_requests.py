"""Malformed requests: every door answers with the catalogued error object, never a framework message."""

from __future__ import annotations

from typing import Any

import pytest

from ..readings import category_matches, value_matches
from ..spec import CODES, is_kebab_code
from .doors import UNKNOWN_DOC_ID, Door, NotRepresentable, Outcome, book_doc, failed, ok

pytestmark = pytest.mark.anyio

_WRITE = {"node_path": "/title", "node_data": "x"}

# (tool, arguments without doc_id, what is wrong); "{doc}" marks where the test puts a doc_id
_INVALID: list[tuple[str, dict[str, Any], str]] = [
    ("document_update_node", {**_WRITE, "version": "five"}, "version-is-a-word"),
    ("document_update_node", {**_WRITE, "version": 2.5}, "version-is-a-fraction"),
    ("document_update_node", {**_WRITE, "version": None}, "version-is-null"),
    ("document_update_node", {**_WRITE, "version": 0}, "version-is-zero"),
    ("document_update_node", {**_WRITE, "version": True}, "version-is-a-boolean"),
    ("document_update_node", {**_WRITE}, "version-is-missing"),
    ("document_update_node", {"node_data": "x", "version": "{version}"}, "node-path-is-missing"),
    ("document_update_node", {"node_path": "/title", "version": "{version}"}, "node-data-is-missing"),
    ("document_update_node", {**_WRITE, "version": "{version}", "dry_run": "maybe"}, "dry-run-is-a-word"),
    ("document_create_node", {"node_path": "/chapters/-", "version": [1]}, "version-is-a-list"),
    ("document_delete_node", {"node_path": "/tags/0", "version": {"v": 2}}, "version-is-an-object"),
    ("document_apply_patch", {"version": "{version}"}, "patch-is-missing"),
    ("document_read_node", {"node_path": ["metadata", "title"]}, "node-path-is-a-list"),
    ("document_update_node", {"node_path": 7, "node_data": "x", "version": "{version}"}, "node-path-is-a-number"),
    ("document_list", {"limit": "many"}, "limit-is-a-word"),
    ("document_list", {"limit": 0}, "limit-is-zero"),
    ("document_list", {"limit": 2.5}, "limit-is-a-fraction"),
    ("document_list", {"limit": True}, "limit-is-a-boolean"),
    ("document_list", {"limit": 5000}, "limit-is-too-big"),
    ("document_list", {"offset": -1}, "offset-is-negative"),
    ("schema_get_root", {"dereferenced": "maybe"}, "dereferenced-is-a-word"),
    ("schema_get_node", {"node_path": "/title", "dereferenced": "maybe"}, "node-dereferenced-is-a-word"),
    ("document_history", {"since_version": "start"}, "since-version-is-a-word"),
    ("document_diff", {"from_version": 1}, "to-version-is-missing"),
    ("document_revert", {"to_version": "1", "version": "{version}"}, "to-version-is-a-string"),
    ("document_delete", {"version": "five"}, "delete-version-is-a-word"),
    ("document_changes", {"since": "later"}, "since-is-a-word"),
]
_WITHOUT_DOC_ID = frozenset({"document_list", "document_changes", "schema_get_root", "schema_get_node"})


@pytest.mark.parametrize(("tool", "args"), [(tool, args) for tool, args, _ in _INVALID],
                         ids=[name for _, _, name in _INVALID])
async def test_a_wrong_or_missing_argument_is_invalid_request(door: Door, tool: str, args: dict[str, Any]) -> None:
    doc = await book_doc(door)
    before = await doc.snapshot()
    call = {key: (doc.version if value == "{version}" else value) for key, value in args.items()}
    if tool not in _WITHOUT_DOC_ID:
        call["doc_id"] = doc.doc_id
    try:
        outcome = await door.call(tool, call)
    except NotRepresentable as reason:
        pytest.skip(f"not expressible through {door.name}: {reason}")
    error = _refused_as_malformed(outcome)
    assert error["message"]
    assert "Traceback" not in error["message"]
    assert "pydantic" not in error["message"].lower(), "a framework message leaked"
    assert await doc.snapshot() == before


def _refused_as_malformed(outcome: Outcome) -> dict[str, Any]:
    """The spec names no code for a malformed call: any catalogued client error (4xx) will do, or the MCP
    protocol's invalid-params error. schemadoc says ``invalid-request`` (400)."""
    assert not outcome.ok, f"a malformed call succeeded: {outcome!r}"
    if outcome.rpc_error is not None:
        assert outcome.rpc_error == -32602, f"JSON-RPC error {outcome.rpc_error}, not invalid params (-32602)"
        return outcome.error
    assert is_kebab_code(outcome.code), f"no kebab-case error code: {outcome!r}"
    assert 400 <= outcome.status < 500, f"a malformed call is a client error, not {outcome.status}: {outcome!r}"
    if outcome.code == "invalid-request":
        assert outcome.status == 400
    return outcome.error


async def test_a_patch_that_is_not_a_list_is_rejected_as_a_bad_request(door: Door) -> None:
    doc = await book_doc(door)
    outcome = await doc.patch({"op": "replace", "path": "/title", "value": "x"})
    assert outcome.code in {"invalid-request", "patch-invalid"}, outcome
    assert outcome.status == 400


async def test_writing_to_an_unknown_document_is_document_not_found(door: Door) -> None:
    outcome = await door.call("document_update_node", {"doc_id": UNKNOWN_DOC_ID, "node_path": "/title",
                                                        "node_data": "x", "version": 1})
    failed(outcome, "document-not-found")
    assert outcome.status == 404


async def test_every_error_object_has_every_member_with_the_specs_category(door: Door) -> None:
    """FR-097 and the spec's error format: code, category, message, details and remediation, the category being
    the spec's for its code; one of each kind of error the spec names for the eight tools."""
    doc = await book_doc(door)
    provoked = {
        "document-not-found": await door.call("document_read_node", {"doc_id": UNKNOWN_DOC_ID, "node_path": "/"}),
        "invalid-doc-id": await door.call("document_read_node", {"doc_id": "not-a-ulid!", "node_path": "/"}),
        "path-invalid": await doc.read("title"),
        "path-not-found": await doc.read("/nothing/here"),
        "version-conflict": await doc.update("/title", "Stale", version=doc.version + 5),
        "validation-failed": await doc.update("/metadata/edition", 0),
        "conflict": await doc.create("/title", "Twice"),
    }
    for code, outcome in provoked.items():
        error = failed(outcome, code)
        missing = {"code", "category", "message", "details", "remediation"} - set(error)
        assert not missing, f"{code}: the error object lacks {sorted(missing)}: {outcome!r}"
        assert category_matches(error["category"], CODES[code]), f"{code}: category {error['category']!r}"
        assert isinstance(error["message"], str) and error["message"], code
        assert isinstance(error["remediation"], str) and error["remediation"], code
        assert isinstance(error["details"], dict), code


async def test_writing_with_a_malformed_doc_id_is_invalid_doc_id(door: Door) -> None:
    outcome = await door.call("document_delete_node", {"doc_id": "01ARZ3NDEKTSV4RRFFQ69G5FA*", "node_path": "/tags",
                                                        "version": 1})
    failed(outcome, "invalid-doc-id")


# -- values at the edges of JSON -------------------------------------------------------------------


@pytest.mark.parametrize("number", [2**70, -(2**64), 2**64], ids=["2^70", "-2^64", "2^64"])
async def test_integers_beyond_64_bits_travel_exactly(door: Door, number: int) -> None:
    doc = await book_doc(door)
    error = failed(await doc.update("/metadata/edition", number), "validation-failed")
    violation = error["details"]["violations"][0]
    assert "actual" not in violation or value_matches(violation["actual"], number), \
        f"sent {number}, the report says {violation['actual']!r}"


def _section_chain(levels: int) -> dict[str, Any]:
    """Sections nested ``levels`` deep (two JSON levels each: the section and its ``sections`` array)."""
    node: dict[str, Any] = {"title": "Deep", "paragraphs": [], "sections": []}
    for _ in range(levels - 1):
        node = {"title": "Deep", "paragraphs": [], "sections": [node]}
    return node


async def test_growing_a_document_deeper_than_any_limit_is_refused_as_a_client_error(door: Door) -> None:
    """Each write is small (100 JSON levels), but together they nest the document past 300 levels:
    the server must either store it or refuse with a catalogued 4xx error, never fail with a 5xx."""
    doc = await book_doc(door)
    parent = "/chapters/0/sections/0"
    for _ in range(4):
        # only shallow reads: the MCP SDK's client cannot parse a response nested ~200 levels deep
        before = ok(await doc.read("/title"))["version"]
        outcome = await doc.create(parent + "/sections/-", _section_chain(50))
        assert outcome.ok or outcome.status < 500, outcome
        if not outcome.ok:
            assert is_kebab_code(outcome.code), outcome
            assert ok(await doc.read("/title"))["version"] == before
            return
        parent = outcome.body["created_node_path"] + "/sections/0" * 49
    assert ok(await door.read_document(doc.doc_id))["document"] == await doc.content()
