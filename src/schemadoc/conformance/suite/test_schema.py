"""Stories 0 and 3: the server's schema, and the schema of any node."""

from __future__ import annotations

from typing import Any

import pytest

from .doors import UNKNOWN_DOC_ID, Door, book_doc, failed, ok

pytestmark = pytest.mark.anyio


def _refs(schema: Any) -> list[str]:
    """Every ``$ref`` value anywhere in ``schema``."""
    found: list[str] = []
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "$ref" and isinstance(value, str):
                found.append(value)
            else:
                found += _refs(value)
    elif isinstance(schema, list):
        for item in schema:
            found += _refs(item)
    return found


async def _node_schema(door: Door, node_path: str, **args: Any) -> dict[str, Any]:
    body = ok(await door.call("schema_get_node", {"node_path": node_path, **args}))
    schema = body["node_schema"]
    assert isinstance(schema, dict)
    return schema


# -- story 0: the configured schema ------------------------------------------------------------------


async def test_the_root_schema_is_the_configured_schema_with_its_uri(door: Door, book_schema: dict[str, Any]) -> None:
    body = ok(await door.call("schema_get_root", {"dereferenced": False}))
    assert body["success"] is True
    # the schema's $id, or the file it was loaded from
    assert body["schema_uri"] == book_schema["$id"] or (
        body["schema_uri"].startswith("file:///") and body["schema_uri"].endswith("/book.schema.json"))
    assert body["root_schema"] == book_schema
    assert body["schema_version"] == book_schema["version"]


async def test_the_dereferenced_root_schema_inlines_references_but_keeps_recursion_finite(door: Door) -> None:
    root = ok(await door.call("schema_get_root", {}))["root_schema"]
    metadata = root["properties"]["metadata"]
    assert metadata["properties"]["status"]["enum"] == ["draft", "review", "published"]
    assert _refs(metadata) == []
    chapter = root["properties"]["chapters"]["items"]
    assert chapter["properties"]["id"]["pattern"] == "^ch-[0-9]+$"
    refs = _refs(root)
    assert refs, "a recursive schema needs at least one $ref to stay finite"
    assert all(ref.endswith("section") for ref in refs), refs


# -- story 3: the schema of a node -------------------------------------------------------------------


async def test_the_schema_of_metadata_is_its_object_schema_with_every_constraint(door: Door) -> None:
    schema = await _node_schema(door, "/metadata")
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert sorted(schema["required"]) == ["edition", "language", "status"]
    properties = schema["properties"]
    assert set(properties) == {"language", "status", "author", "created", "homepage", "contact", "edition",
                               "isbn", "keywords"}
    assert properties["status"]["enum"] == ["draft", "review", "published"]
    assert (properties["edition"]["minimum"], properties["edition"]["maximum"]) == (1, 100)
    assert properties["isbn"]["pattern"] == "^[0-9]{13}$"
    assert properties["created"]["format"] == "date-time"
    assert properties["homepage"]["format"] == "uri"
    assert properties["contact"]["format"] == "email"
    assert properties["keywords"]["uniqueItems"] is True
    assert _refs(schema) == [], "the schema must be dereferenced"


async def test_the_schema_of_an_array_item_is_the_item_schema(door: Door) -> None:
    for node_path in ("/chapters/0", "/chapters/41", "/chapters/-1"):
        schema = await _node_schema(door, node_path)
        assert sorted(schema["required"]) == ["id", "sections", "title"], node_path
        assert schema["properties"]["id"]["pattern"] == "^ch-[0-9]+$"
        assert schema["properties"]["sections"]["minItems"] == 1


async def test_the_schema_of_a_oneof_lists_every_alternative_dereferenced(door: Door) -> None:
    schema = await _node_schema(door, "/metadata/author")
    alternatives = schema.get("oneOf") or schema.get("anyOf")
    assert isinstance(alternatives, list) and len(alternatives) == 2, schema
    kinds = sorted(alternative.get("type") for alternative in alternatives)
    assert kinds == ["object", "string"]
    person = next(alternative for alternative in alternatives if alternative.get("type") == "object")
    assert set(person["properties"]) == {"name", "email"}
    assert person["required"] == ["name"]
    assert _refs(schema) == []


async def test_the_schema_of_a_member_of_a_oneof_alternative_is_found(door: Door) -> None:
    schema = await _node_schema(door, "/metadata/author/email")
    assert schema["format"] == "email"


async def test_recursive_sections_have_a_schema_at_any_depth(door: Door) -> None:
    schema = await _node_schema(door, "/chapters/0/sections/0/sections/3/sections/0/paragraphs/2/style")
    assert schema["enum"] == ["normal", "quote", "code", "aside", "epigraph"]
    title = await _node_schema(door, "/chapters/0/sections/0/sections/0/sections/0/title")
    assert (title["type"], title["minLength"], title["maxLength"]) == ("string", 1, 300)


async def test_the_schema_with_a_doc_id_tells_whether_the_node_exists(door: Door) -> None:
    doc = await book_doc(door)
    for node_path, exists in (("/chapters/0", True), ("/chapters/9", False), ("/metadata/homepage", False),
                              ("/metadata/isbn", True)):
        body = ok(await door.call("schema_get_node", {"node_path": node_path, "doc_id": doc.doc_id}))
        assert body["node_exists"] is exists, node_path


async def test_the_undereferenced_schema_of_a_node_keeps_its_references(door: Door) -> None:
    schema = await _node_schema(door, "/metadata/status", dereferenced=False)
    dereferenced = await _node_schema(door, "/metadata/status", dereferenced=True)
    assert dereferenced["enum"] == ["draft", "review", "published"]
    assert _refs(schema) or schema.get("enum") == ["draft", "review", "published"]


@pytest.mark.parametrize("node_path", ["/publisher", "/metadata/publisher", "/chapters/0/summary", "/title/0",
                                       "/chapters/first"])
async def test_a_path_the_schema_does_not_allow_is_path_not_found(door: Door, node_path: str) -> None:
    outcome = await door.call("schema_get_node", {"node_path": node_path})
    error = failed(outcome, "path-not-found")
    assert outcome.status == 404
    assert error["remediation"]
    deepest = error["details"]["deepest_valid_path"]
    assert node_path.startswith(deepest) and deepest != node_path, "the deepest path the schema defines"
    assert isinstance(error["details"]["allowed"], list), "what that node allows"


async def test_a_malformed_schema_path_is_path_invalid(door: Door) -> None:
    failed(await door.call("schema_get_node", {"node_path": "metadata"}), "path-invalid")


async def test_the_schema_of_an_unknown_document_is_document_not_found(door: Door) -> None:
    outcome = await door.call("schema_get_node", {"node_path": "/title", "doc_id": UNKNOWN_DOC_ID})
    failed(outcome, "document-not-found")
