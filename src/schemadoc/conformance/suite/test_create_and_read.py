"""Stories 1 and 2: create a document, read it by path."""

from __future__ import annotations

import re
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from ..readings import same_id
from .doors import (
    ULID_PATTERN,
    UNKNOWN_DOC_ID,
    Door,
    book_doc,
    failed,
    offers,
    ok,
    sample_book,
)

pytestmark = pytest.mark.anyio


def _validator(root_schema: dict[str, Any]) -> Draft202012Validator:
    return Draft202012Validator(root_schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


# -- story 1: create -------------------------------------------------------------------------------


async def test_create_returns_a_ulid_at_version_1_with_a_valid_report(door: Door) -> None:
    outcome = await door.call("document_create", {})
    body = ok(outcome)
    assert outcome.status == 201
    assert body["success"] is True
    assert re.match(ULID_PATTERN, body["doc_id"])
    assert body["version"] == 1
    assert body["validation_report"]["valid"] is True
    assert body["validation_report"].get("error_count", 0) == 0
    assert body["validation_report"].get("errors", []) == []
    if "document_uri" in body:  # optional in the spec's output schema
        assert body["doc_id"].upper() in body["document_uri"].upper()


async def test_a_doc_id_names_the_same_document_in_either_case(door: Door) -> None:
    """Identifiers are ULIDs, which are case-insensitive: the id in upper and in lower case is one document."""
    doc = await book_doc(door)
    content = await doc.content("/title")
    for spelling in (doc.doc_id.upper(), doc.doc_id.lower()):
        body = ok(await door.call("document_read_node", {"doc_id": spelling, "node_path": "/title"}))
        assert body["node_content"] == content and body["version"] == doc.version


async def test_the_initial_tree_holds_the_schema_defaults_and_validates(door: Door,
                                                                        book_schema: dict[str, Any]) -> None:
    body = ok(await door.call("document_create", {}))
    tree = body["initial_tree"]
    assert list(_validator(book_schema).iter_errors(tree)) == []
    for name, member in book_schema.get("properties", {}).items():
        if isinstance(member, dict) and "default" in member:
            assert tree[name] == member["default"], f"default of {name} not applied"
    for name in book_schema.get("required", []):
        assert name in tree, f"required member {name} missing from the initial tree"


async def test_create_reports_the_servers_schema_uri(door: Door) -> None:
    created = ok(await door.call("document_create", {}))
    root = ok(await door.call("schema_get_root", {}))
    assert created["schema_uri"] == root["schema_uri"]


async def test_reading_the_root_of_a_new_document_returns_the_initial_tree(door: Door) -> None:
    created = ok(await door.call("document_create", {}))
    read = ok(await door.call("document_read_node", {"doc_id": created["doc_id"], "node_path": "/"}))
    assert read["node_content"] == created["initial_tree"]
    assert read["version"] == 1
    assert read["node_type"] == "object"


async def test_many_creates_never_reuse_a_doc_id(door: Door) -> None:
    doc_ids = [ok(await door.call("document_create", {}))["doc_id"] for _ in range(12)]
    assert len(set(doc_ids)) == 12


# -- story 2: read by path -------------------------------------------------------------------------


async def test_reading_a_nested_member_returns_only_that_value(door: Door) -> None:
    doc = await book_doc(door)
    body = ok(await doc.read("/metadata/author"))
    assert body["node_content"] == sample_book()["metadata"]["author"]
    assert body["node_type"] == "object"
    assert body["version"] == doc.version
    assert ok(await doc.read("/metadata/edition"))["node_type"] == "number"
    assert ok(await doc.read("/title"))["node_type"] == "string"
    assert ok(await doc.read("/chapters"))["node_type"] == "array"


async def test_reading_an_array_index_returns_that_item(door: Door) -> None:
    doc = await book_doc(door)
    body = ok(await doc.read("/chapters/0"))
    assert body["node_content"] == sample_book()["chapters"][0]
    if offers(body, "node_path"):
        assert body["node_path"] == "/chapters/0"


async def test_a_negative_index_counts_from_the_end_and_reports_the_concrete_path(door: Door) -> None:
    doc = await book_doc(door)
    body = ok(await doc.read("/chapters/-1"))
    assert body["node_content"] == sample_book()["chapters"][-1]
    if offers(body, "node_path"):
        assert body["node_path"] == "/chapters/2"
    assert ok(await doc.read("/chapters/-3/id"))["node_content"] == "ch-1"


async def test_reading_the_root_returns_the_whole_document_at_its_version(door: Door) -> None:
    doc = await book_doc(door)
    assert await doc.content("/") == sample_book()
    assert doc.version == 2


async def test_reading_an_unknown_document_is_document_not_found(door: Door) -> None:
    outcome = await door.call("document_read_node", {"doc_id": UNKNOWN_DOC_ID, "node_path": "/"})
    error = failed(outcome, "document-not-found")
    assert outcome.status == 404
    assert same_id(error["details"]["doc_id"], UNKNOWN_DOC_ID)


async def test_a_doc_id_that_is_not_a_ulid_is_invalid_doc_id(door: Door) -> None:
    outcome = await door.call("document_read_node", {"doc_id": "book-123", "node_path": "/"})
    failed(outcome, "invalid-doc-id")
    assert outcome.status == 400


@pytest.mark.parametrize("node_path", ["metadata/title", "/chapters/01", "/metadata/a~2b"])
async def test_a_malformed_path_is_path_invalid_with_guidance(door: Door, node_path: str) -> None:
    doc = await book_doc(door)
    outcome = await doc.read(node_path)
    error = failed(outcome, "path-invalid")
    assert outcome.status == 400
    assert error["details"]["path"] == node_path
    assert error["remediation"]


async def test_a_path_without_leading_slash_suggests_the_fixed_path(door: Door) -> None:
    doc = await book_doc(door)
    error = failed(await doc.read("metadata"), "path-invalid")
    assert error["details"].get("suggestion") == "/metadata"


async def test_a_missing_member_is_path_not_found_naming_the_deepest_ancestor(door: Door) -> None:
    doc = await book_doc(door)
    outcome = await doc.read("/metadata/homepage")
    error = failed(outcome, "path-not-found")
    assert outcome.status == 404
    assert error["details"]["path"] == "/metadata/homepage"
    assert error["details"]["deepest_ancestor"] == "/metadata"


async def test_an_index_out_of_range_is_path_not_found_with_the_array_length(door: Door) -> None:
    doc = await book_doc(door)
    for node_path in ("/chapters/3", "/chapters/7/title"):
        error = failed(await doc.read(node_path), "path-not-found")
        assert error["details"]["array_length"] == 3, node_path
        assert error["details"]["deepest_ancestor"] == "/chapters", node_path


async def test_a_negative_index_out_of_range_is_path_not_found_like_any_other(door: Door) -> None:
    doc = await book_doc(door)
    error = failed(await doc.read("/chapters/-4"), "path-not-found")
    assert error["details"]["array_length"] == 3
    assert error["details"]["deepest_ancestor"] == "/chapters"
    assert error["details"]["path"] == "/chapters/-4"


async def test_a_missing_intermediate_names_what_to_create_first(door: Door) -> None:
    doc = await book_doc(door)
    error = failed(await doc.read("/chapters/1/sections/0/sections/0/title"), "path-not-found")
    assert error["details"]["deepest_ancestor"] == "/chapters/1/sections/0/sections"
    assert error["details"]["create_first"] == "/chapters/1/sections/0/sections/0"
