"""The MCP door, driven in-process by the official client in both protocol eras.

``mode="auto"`` negotiates the handshake-free 2026-07-28 protocol; ``mode="legacy"`` runs the
``initialize`` handshake over JSON-RPC streams (2025-11-25). Every behaviour test runs in both.
"""

from __future__ import annotations

import logging
import threading
import warnings
from typing import Any

import anyio
import orjson
import pytest
from mcp import Client, MCPError
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated
from mcp.types import INVALID_PARAMS, ServerNotification
from mcp_support import CHAPTER, UNKNOWN_DOC, call, error_of, fail

from schemadoc.errors import CATALOG
from schemadoc.interfaces.mcp_door.server import SchemaDocMCPServer, build_mcp_server
from schemadoc.service import DocumentService

TOOLS = {
    "document_create": [],
    "document_read_node": ["doc_id", "node_path"],
    "document_update_node": ["doc_id", "node_path", "node_data", "version"],
    "document_create_node": ["doc_id", "node_path", "node_data", "version"],
    "document_delete_node": ["doc_id", "node_path", "version"],
    "document_apply_patch": ["doc_id", "patch", "version"],
    "document_list": [],
    "schema_get_root": [],
    "schema_get_node": ["node_path"],
    "document_history": ["doc_id"],
    "document_diff": ["doc_id", "from_version", "to_version"],
    "document_revert": ["doc_id", "to_version", "version"],
    "document_merge_patch": ["doc_id", "node_path", "merge_patch", "version"],
    "document_delete": ["doc_id", "version"],
    "document_undelete": ["doc_id"],
    "document_purge": ["doc_id"],
    "document_changes": [],
    "document_outline": ["doc_id"],
    "document_next_incomplete": ["doc_id"],
    "document_move_node": ["doc_id", "from_path", "to_path", "version"],
    "document_search": ["query"],
    "document_stats": ["doc_id"],
    "document_render": ["doc_id"],
    "document_validate_node": ["doc_id", "node_path", "node_data"],
}

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::DeprecationWarning")]






async def new_document(client: Client) -> str:
    doc_id: str = (await call(client, "document_create"))["doc_id"]
    return doc_id


# -- tools/list ---------------------------------------------------------------------------------


async def test_every_tool_is_listed_with_a_description_an_input_schema_and_an_output_schema(client: Client) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}

    assert set(tools) == set(TOOLS)
    for name, required in TOOLS.items():
        tool = tools[name]
        assert tool.description is not None and tool.description.strip()
        assert tool.input_schema["type"] == "object"
        assert tool.input_schema["additionalProperties"] is False
        assert sorted(tool.input_schema.get("required", [])) == sorted(required)
        shared = {"doc_id", "version", "dry_run", "node_path", "limit", "offset",  # described in the instructions
                  "placeholders"}
        assert all("description" in spec for arg, spec in tool.input_schema["properties"].items() if arg not in shared)
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"
        assert "success" not in tool.output_schema["properties"], "always true: a failure is an isError result"


async def test_write_tools_declare_version_as_an_integer_and_dry_run_as_an_optional_boolean(client: Client) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}

    for name in ("document_update_node", "document_create_node", "document_delete_node", "document_apply_patch",
                 "document_revert", "document_merge_patch"):
        properties = tools[name].input_schema["properties"]
        assert properties["version"]["type"] == "integer"
        assert properties["dry_run"] == {**properties["dry_run"], "type": "boolean", "default": False}


# -- happy paths ----------------------------------------------------------------------------------


async def test_document_create_returns_the_initial_tree_at_version_1(client: Client, service: DocumentService) -> None:
    created = await call(client, "document_create")

    doc_id = created["doc_id"]
    assert created["success"] is True
    assert created["version"] == 1
    assert created["document_uri"] == f"schema://{doc_id}"
    assert created["schema_uri"] == service.schema_uri
    assert created["initial_tree"] == service.read_document(doc_id)[0]
    assert created["initial_tree"]["title"] == "Untitled"
    assert created["validation_report"] == {"valid": True, "error_count": 0, "errors": []}


async def test_document_read_node_returns_content_version_and_type(client: Client) -> None:
    doc_id = await new_document(client)

    read = await call(client, "document_read_node", {"doc_id": doc_id, "node_path": "/metadata/status"})

    assert read == {"success": True, "doc_id": doc_id, "node_path": "/metadata/status", "node_content": "draft",
                    "version": 1, "node_type": "string"}
    whole = await call(client, "document_read_node", {"doc_id": doc_id, "node_path": "/"})
    assert whole["node_type"] == "object" and whole["node_path"] == "/"


async def test_document_update_node_replaces_a_node_and_bumps_the_version(client: Client) -> None:
    doc_id = await new_document(client)

    updated = await call(client, "document_update_node",
                         {"doc_id": doc_id, "node_path": "/title", "node_data": "Dune", "version": 1})

    assert updated["version"] == 2
    assert updated["updated_node"] == "Dune"
    assert updated["node_path"] == "/title"
    assert updated["dry_run"] is False
    assert updated["patch"] == [{"op": "replace", "path": "/title", "value": "Dune"}]
    assert updated["validation_report"]["valid"] is True
    read = await call(client, "document_read_node", {"doc_id": doc_id, "node_path": "/title"})
    assert (read["node_content"], read["version"]) == ("Dune", 2)


async def test_a_string_that_looks_like_json_is_stored_as_a_string(client: Client) -> None:
    doc_id = await new_document(client)

    updated = await call(client, "document_update_node",
                         {"doc_id": doc_id, "node_path": "/title", "node_data": '["not", "a list"]', "version": 1})

    assert updated["updated_node"] == '["not", "a list"]'


async def test_document_create_node_appends_with_a_dash_and_reports_the_concrete_path(client: Client) -> None:
    doc_id = await new_document(client)

    created = await call(client, "document_create_node",
                         {"doc_id": doc_id, "node_path": "/chapters/-", "node_data": CHAPTER, "version": 1})

    assert created["created_node_path"] == "/chapters/0"
    assert created["created_node"] == CHAPTER
    assert created["version"] == 2
    read = await call(client, "document_read_node", {"doc_id": doc_id, "node_path": "/chapters/-1/id"})
    assert read["node_content"] == "ch-1" and read["node_path"] == "/chapters/0/id"


async def test_document_delete_node_returns_the_removed_node(client: Client) -> None:
    doc_id = await new_document(client)
    await call(client, "document_create_node",
               {"doc_id": doc_id, "node_path": "/metadata/isbn", "node_data": "9780441013593", "version": 1})

    deleted = await call(client, "document_delete_node", {"doc_id": doc_id, "node_path": "/metadata/isbn",
                                                          "version": 2})

    assert deleted["deleted_node"] == "9780441013593"
    assert deleted["node_path"] == "/metadata/isbn"
    assert deleted["version"] == 3
    failed = await fail(client, "document_read_node", {"doc_id": doc_id, "node_path": "/metadata/isbn"})
    assert failed["code"] == "path-not-found"


async def test_document_apply_patch_applies_every_operation_at_once(client: Client) -> None:
    doc_id = await new_document(client)
    patch = [{"op": "test", "path": "/title", "value": "Untitled"},
             {"op": "replace", "path": "/title", "value": "Dune"},
             {"op": "add", "path": "/tags/-", "value": "sf"}]

    patched = await call(client, "document_apply_patch", {"doc_id": doc_id, "patch": patch, "version": 1})

    assert patched["version"] == 2
    assert patched["patch"][-1] == {"op": "add", "path": "/tags/0", "value": "sf"}
    read = await call(client, "document_read_node", {"doc_id": doc_id, "node_path": "/"})
    assert (read["node_content"]["title"], read["node_content"]["tags"]) == ("Dune", ["sf"])


async def test_document_list_pages_through_the_documents(client: Client) -> None:
    ids = [await new_document(client) for _ in range(3)]

    first = await call(client, "document_list", {"limit": 2})
    rest = await call(client, "document_list", {"limit": 2, "offset": 2})

    assert (first["total_documents"], first["has_more"], first["limit"], first["offset"]) == (3, True, 2, 0)
    assert rest["has_more"] is False
    assert sorted(d["doc_id"] for d in first["documents"] + rest["documents"]) == sorted(ids)
    summary = first["documents"][0]
    assert set(summary) >= {"doc_id", "version", "created_at", "modified_at", "tree_size_bytes"}
    assert (await call(client, "document_list"))["limit"] == 100


async def test_schema_get_root_returns_the_schema_dereferenced_or_as_written(client: Client,
                                                                             service: DocumentService) -> None:
    dereferenced = await call(client, "schema_get_root")
    as_written = await call(client, "schema_get_root", {"dereferenced": False})

    assert dereferenced["schema_uri"] == service.schema_uri
    assert dereferenced["schema_version"] == "1.0.0"
    assert as_written["root_schema"] == service.root_schema(dereferenced=False)
    assert "$ref" in orjson.dumps(as_written["root_schema"]["properties"]["metadata"]).decode()
    assert "$ref" not in dereferenced["root_schema"]["properties"]["metadata"]


async def test_schema_get_node_returns_the_node_schema_and_whether_it_exists(client: Client) -> None:
    doc_id = await new_document(client)

    status = await call(client, "schema_get_node", {"node_path": "/metadata/status"})
    isbn = await call(client, "schema_get_node", {"node_path": "/metadata/isbn", "doc_id": doc_id})

    assert status["node_schema"]["enum"] == ["draft", "review", "published"]
    assert status["node_exists"] is None
    assert isbn["node_exists"] is False
    assert isbn["node_schema"]["pattern"] == "^[0-9]{13}$"


async def test_a_dry_run_reports_the_write_but_changes_nothing(client: Client, service: DocumentService) -> None:
    doc_id = await new_document(client)
    before = service.read_document(doc_id)[0]

    results = [
        await call(client, "document_update_node", {"doc_id": doc_id, "node_path": "/title", "node_data": "X",
                                                    "version": 1, "dry_run": True}),
        await call(client, "document_create_node", {"doc_id": doc_id, "node_path": "/chapters/-",
                                                    "node_data": CHAPTER, "version": 1, "dry_run": True}),
        await call(client, "document_delete_node", {"doc_id": doc_id, "node_path": "/tags", "version": 1,
                                                    "dry_run": True}),
        await call(client, "document_apply_patch", {"doc_id": doc_id, "version": 1, "dry_run": True,
                                                    "patch": [{"op": "remove", "path": "/tags"}]}),
    ]

    for result in results:
        assert (result["dry_run"], result["version"], result["would_be_version"]) == (True, 1, 2)
        assert result["validation_report"]["valid"] is True
    assert service.read_document(doc_id)[0] == before
    assert service.version_of(doc_id) == 1


# -- errors -------------------------------------------------------------------------------------


async def test_a_malformed_doc_id_is_invalid_doc_id(client: Client) -> None:
    error = await fail(client, "document_read_node", {"doc_id": "not-a-ulid", "node_path": "/"})

    assert error["code"] == "invalid-doc-id"
    assert error["details"]["doc_id"] == "not-a-ulid"


async def test_an_unknown_document_is_document_not_found(client: Client) -> None:
    error = await fail(client, "document_update_node",
                       {"doc_id": UNKNOWN_DOC, "node_path": "/title", "node_data": "x", "version": 1})

    assert error["code"] == "document-not-found"
    assert error["details"]["doc_id"] == UNKNOWN_DOC


async def test_a_missing_path_is_path_not_found_naming_the_deepest_ancestor(client: Client) -> None:
    doc_id = await new_document(client)

    error = await fail(client, "document_read_node", {"doc_id": doc_id, "node_path": "/metadata/author/name"})

    assert error["code"] == "path-not-found"
    assert error["details"]["deepest_ancestor"] == "/metadata"


async def test_an_invalid_write_is_validation_failed_listing_every_violation(client: Client,
                                                                             service: DocumentService) -> None:
    doc_id = await new_document(client)
    bad = {"language": "English", "status": "lost", "edition": 0, "extra": True}

    error = await fail(client, "document_update_node",
                       {"doc_id": doc_id, "node_path": "/metadata", "node_data": bad, "version": 1})

    assert error["code"] == "validation-failed"
    violations = error["details"]["violations"]
    assert sorted((v["path"], v["code"]) for v in violations) == [
        ("/metadata", "additional-properties-forbidden"), ("/metadata/edition", "minimum"),
        ("/metadata/language", "pattern-failed"), ("/metadata/status", "enum-mismatch")]
    assert all({"message", "expected", "actual", "constraint"} <= set(v) for v in violations)
    assert service.version_of(doc_id) == 1


async def test_a_stale_version_is_version_conflict_with_expected_and_actual(client: Client) -> None:
    doc_id = await new_document(client)
    await call(client, "document_update_node", {"doc_id": doc_id, "node_path": "/title", "node_data": "A",
                                                "version": 1})

    error = await fail(client, "document_update_node",
                       {"doc_id": doc_id, "node_path": "/title", "node_data": "B", "version": 1})

    assert error["code"] == "version-conflict"
    assert (error["details"]["expected_version"], error["details"]["actual_version"]) == (1, 2)


async def test_creating_an_existing_member_is_conflict(client: Client) -> None:
    doc_id = await new_document(client)

    error = await fail(client, "document_create_node",
                       {"doc_id": doc_id, "node_path": "/title", "node_data": "Again", "version": 1})

    assert error["code"] == "conflict"


@pytest.mark.parametrize(("tool", "arguments", "argument"), [
    ("document_update_node", {"node_path": "/title", "node_data": "x", "version": "1"}, "version"),
    ("document_update_node", {"node_path": "/title", "node_data": "x", "version": True}, "version"),
    ("document_update_node", {"node_path": "/title", "node_data": "x", "version": 0}, "version"),
    ("document_update_node", {"node_path": "/title", "version": 1}, "node_data"),
    ("document_delete_node", {"node_path": "/tags", "version": 1, "dry_run": "yes"}, "dry_run"),
    ("document_read_node", {"node_path": 5}, "node_path"),
    ("document_read_node", {}, "node_path"),
    ("document_read_node", {"node_path": "/", "path": "/"}, "path"),
    ("document_list", {"limit": 0}, "limit"),
    ("document_list", {"offset": "0"}, "offset"),
    ("schema_get_root", {"dereferenced": "false"}, "dereferenced"),
])
async def test_wrong_or_missing_arguments_are_invalid_request(client: Client, tool: str, arguments: dict[str, Any],
                                                              argument: str) -> None:
    doc_id = await new_document(client)
    if "doc_id" in TOOLS[tool]:
        arguments = {"doc_id": doc_id, **arguments}

    error = await fail(client, tool, arguments)

    assert error["code"] == "invalid-request"
    assert error["details"]["argument"] == argument
    assert "pydantic" not in error["message"]


async def test_a_doc_id_of_the_wrong_type_is_invalid_request(client: Client) -> None:
    error = await fail(client, "document_read_node", {"doc_id": 42, "node_path": "/"})

    assert (error["code"], error["details"]["argument"]) == ("invalid-request", "doc_id")


async def test_a_patch_that_is_not_a_list_is_patch_invalid_as_over_rest(client: Client) -> None:
    doc_id = await new_document(client)

    error = await fail(client, "document_apply_patch", {"doc_id": doc_id, "patch": {"op": "add"}, "version": 1})

    assert error["code"] == "patch-invalid"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_node_data_or_a_patch_nested_too_deeply_is_request_too_deep(service: DocumentService, mode: str) -> None:
    server = build_mcp_server(service, max_json_depth=3)
    doc_id, _, _, _ = service.create_document()
    deep: Any = [[[["four levels"]]]]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with Client(server, mode=mode) as client:
            too_deep = await fail(client, "document_update_node",
                                  {"doc_id": doc_id, "node_path": "/tags", "node_data": deep, "version": 1})
            patch = await fail(client, "document_apply_patch", {"doc_id": doc_id, "version": 1, "patch": [
                {"op": "replace", "path": "/tags", "value": [["x"]]}]})
            shallow = await call(client, "document_update_node",
                                 {"doc_id": doc_id, "node_path": "/tags", "node_data": ["x"], "version": 1})

    assert (too_deep["code"], too_deep["details"]) == ("request-too-deep", {"argument": "node_data",
                                                                            "max_json_depth": 3})
    assert (patch["code"], patch["details"]["argument"]) == ("request-too-deep", "patch")
    assert shallow["version"] == 2
    server.notifier.close()


async def test_an_unknown_tool_is_invalid_request(client: Client) -> None:
    error = await fail(client, "document_explode")

    assert error["code"] == "invalid-request"
    assert "document_create" in error["details"]["tools"]


async def test_an_unexpected_exception_is_internal_error_and_its_traceback_is_logged(
        client: Client, service: DocumentService, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(service, "update_node", explode)
    with caplog.at_level(logging.ERROR, logger="schemadoc.mcp"):
        error = await fail(client, "document_update_node",
                           {"doc_id": UNKNOWN_DOC, "node_path": "/title", "node_data": "x", "version": 1})

    assert (error["code"], error["details"]) == ("internal-error", {"tool": "document_update_node"})
    assert "secret" not in orjson.dumps(error).decode()
    assert any(record.exc_info and "secret internals" in str(record.exc_info[1]) for record in caplog.records)


# -- resources ----------------------------------------------------------------------------------


async def test_resources_list_names_the_schema_the_catalog_and_every_document(client: Client) -> None:
    ids = [await new_document(client) for _ in range(2)]

    resources = {str(r.uri): r for r in (await client.list_resources()).resources}
    templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]

    schema_id = "https://schemadoc.dev/schemas/book.schema.json"  # the schema_uri results carry, readable too
    assert {"schema://schema", "schema://errors", schema_id, *(f"schema://{i}" for i in ids)} == set(resources)
    assert all(r.mime_type == "application/json" for r in resources.values())
    assert templates == ["schema://{doc_id}", "schema://{doc_id}/versions/{n}"]


async def test_reading_a_document_resource_returns_the_whole_document(client: Client,
                                                                      service: DocumentService) -> None:
    doc_id = await new_document(client)
    await call(client, "document_create_node",
               {"doc_id": doc_id, "node_path": "/chapters/-", "node_data": CHAPTER, "version": 1})

    contents = (await client.read_resource(f"schema://{doc_id}")).contents

    assert len(contents) == 1
    assert contents[0].mime_type == "application/json"
    assert orjson.loads(contents[0].text) == service.read_document(doc_id)[0]  # type: ignore[union-attr]


async def test_the_schema_and_error_catalog_resources(client: Client, service: DocumentService) -> None:
    schema = (await client.read_resource("schema://schema")).contents[0]
    errors = (await client.read_resource("schema://errors")).contents[0]

    assert orjson.loads(schema.text) == service.root_schema(dereferenced=False)  # type: ignore[union-attr]
    catalog = orjson.loads(errors.text)  # type: ignore[union-attr]
    assert [entry["code"] for entry in catalog] == list(CATALOG)
    first = next(iter(CATALOG.values())).as_dict()
    assert catalog[0] == {name: first[name] for name in ("code", "status", "description", "causes", "remediation")}
    full = orjson.dumps([entry.as_dict() for entry in CATALOG.values()])
    assert len(errors.text) < 0.75 * len(full), "written for the agent reading it"  # type: ignore[union-attr]


@pytest.mark.parametrize("uri", [f"schema://{UNKNOWN_DOC}", "schema://not-a-ulid", "schema://a/b"])
async def test_reading_an_unknown_document_is_resource_not_found(client: Client, uri: str) -> None:
    with pytest.raises(MCPError) as raised:
        await client.read_resource(uri)

    assert raised.value.error.code == INVALID_PARAMS
    assert isinstance(raised.value.error.data, dict) and raised.value.error.data["uri"] == uri


# -- prompts ------------------------------------------------------------------------------------


async def test_prompts_list_shows_both_prompts_and_their_arguments(client: Client) -> None:
    prompts = {p.name: p for p in (await client.list_prompts()).prompts}

    assert set(prompts) == {"fill-document", "fix-validation-errors"}
    assert [(a.name, a.required) for a in prompts["fill-document"].arguments or []] == [("doc_id", True)]
    assert [(a.name, a.required) for a in prompts["fix-validation-errors"].arguments or []] == [
        ("doc_id", True), ("violations", True)]
    assert all(p.description for p in prompts.values())


async def test_fill_document_guides_through_the_schema_node_by_node(client: Client) -> None:
    doc_id = await new_document(client)

    prompt = await client.get_prompt("fill-document", {"doc_id": doc_id})

    text = prompt.messages[0].content.text  # type: ignore[union-attr]
    assert prompt.messages[0].role == "user"
    for expected in (doc_id, "version 1", "schema://schema", "schema_get_node", "document_create_node",
                     "validation-failed", "/metadata: object; required", "document_history", "document_revert"):
        assert expected in text


async def test_fix_validation_errors_turns_a_report_into_one_step_per_violation(client: Client) -> None:
    doc_id = await new_document(client)
    bad_chapter = {"id": "one", "sections": [], "color": "red"}
    result = await client.call_tool("document_create_node", {"doc_id": doc_id, "node_path": "/chapters/-",
                                                             "node_data": bad_chapter, "version": 1})
    error = error_of(result)

    prompt = await client.get_prompt("fix-validation-errors",
                                     {"doc_id": doc_id, "violations": result.content[0].text})  # type: ignore[union-attr]

    text = prompt.messages[0].content.text  # type: ignore[union-attr]
    steps = [line for line in text.splitlines() if line[:1].isdigit()]
    assert len(steps) == len(error["details"]["violations"]) == 4
    assert "[additional-properties-forbidden]" in steps[0]  # removals come first
    # the fixes that follow from the schema come as one call of the same tool, to send as it is
    suggested = error["details"]["suggested_call"]
    assert suggested["tool"] == "document_create_node" and suggested["arguments"]["node_path"] == "/chapters/-"
    assert "color" not in suggested["arguments"]["node_data"] and "title" in suggested["arguments"]["node_data"]
    assert "/title" in suggested["placeholders"]
    assert f'document_create_node {{"doc_id":"{doc_id}","node_path":"/chapters/-"' in text
    assert all("suggested_fix" not in v for v in error["details"]["violations"]), "no patch into a missing document"
    assert "document_update_node" in text and "^ch-[0-9]+$" in text


async def test_fix_validation_errors_also_takes_the_bare_violations_list(client: Client) -> None:
    doc_id = await new_document(client)
    violations = [{"code": "type-mismatch", "path": "/title", "message": "/title: expected string, got number.",
                   "expected": ["string"], "actual": "number"}]

    prompt = await client.get_prompt("fix-validation-errors",
                                     {"doc_id": doc_id, "violations": orjson.dumps(violations).decode()})

    assert "1. [type-mismatch] at /title" in prompt.messages[0].content.text  # type: ignore[union-attr]


@pytest.mark.parametrize(("name", "arguments"), [
    ("fill-document", {}),
    ("fill-document", {"doc_id": UNKNOWN_DOC, "extra": "x"}),
    ("fix-validation-errors", {"doc_id": UNKNOWN_DOC}),
    ("fill-document", {"doc_id": UNKNOWN_DOC}),
    ("fill-document", {"doc_id": "nope"}),
    ("fix-validation-errors", {"doc_id": "DOC", "violations": "not json"}),
    ("no-such-prompt", {}),
])
async def test_unusable_prompt_arguments_are_invalid_params(client: Client, name: str,
                                                            arguments: dict[str, str]) -> None:
    if arguments.get("doc_id") == "DOC":
        arguments = {**arguments, "doc_id": await new_document(client)}

    with pytest.raises(MCPError) as raised:
        await client.get_prompt(name, arguments)

    assert raised.value.error.code == INVALID_PARAMS


# -- change notifications -----------------------------------------------------------------------


def write_from_another_thread(service: DocumentService, doc_id: str, title: str) -> None:
    """A write that does not come through MCP, made in a thread of its own, as a REST route would."""
    errors: list[BaseException] = []

    def write() -> None:
        try:
            service.update_node(doc_id, "/title", title, service.version_of(doc_id))
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    thread = threading.Thread(target=write)
    thread.start()
    thread.join(timeout=10)
    assert not errors


async def test_a_legacy_subscriber_hears_of_writes_made_elsewhere_and_of_new_documents(
        server: SchemaDocMCPServer, service: DocumentService) -> None:
    doc_id, _, _, _ = service.create_document()
    uri = f"schema://{doc_id}"
    received: list[tuple[str, str | None]] = []
    arrived = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, ServerNotification):
            received.append((message.method, getattr(message.params, "uri", None)))
            arrived.set()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with Client(server, mode="legacy", message_handler=on_message) as client:
            assert client.server_capabilities.resources is not None
            assert client.server_capabilities.resources.subscribe is True
            assert client.server_capabilities.resources.list_changed is True
            await client.subscribe_resource(uri)

            write_from_another_thread(service, doc_id, "Elsewhere")
            with anyio.fail_after(5):
                await arrived.wait()
            assert received == [("notifications/resources/updated", uri)]

            arrived = anyio.Event()
            await anyio.to_thread.run_sync(service.create_document)
            with anyio.fail_after(5):
                await arrived.wait()
            assert received[-1] == ("notifications/resources/list_changed", None)

            await client.unsubscribe_resource(uri)
            write_from_another_thread(service, doc_id, "Unheard")
            await server.notifier.drain()
            await anyio.sleep(0.05)
    assert len(received) == 2


async def test_a_closed_legacy_connection_is_forgotten(server: SchemaDocMCPServer, service: DocumentService) -> None:
    doc_id, _, _, _ = service.create_document()
    uri = f"schema://{doc_id}"

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with Client(server, mode="legacy") as client:
            await client.subscribe_resource(uri)
            await client.subscribe_resource(uri)
            assert server.notifier.subscribers(uri) == 1

    assert server.notifier.subscribers(uri) == 0
    write_from_another_thread(service, doc_id, "Nobody listens")  # and nothing breaks


async def test_a_modern_listener_hears_of_writes_made_elsewhere_and_of_new_documents(
        server: SchemaDocMCPServer, service: DocumentService) -> None:
    doc_id, _, _, _ = service.create_document()
    uri = f"schema://{doc_id}"

    async with Client(server) as client, client.listen(resource_subscriptions=[uri],
                                                       resources_list_changed=True) as listening:
        write_from_another_thread(service, doc_id, "Elsewhere")
        with anyio.fail_after(5):
            updated = await listening.__anext__()
        await anyio.to_thread.run_sync(service.create_document)
        with anyio.fail_after(5):
            listed = await listening.__anext__()

    assert updated == ResourceUpdated(uri=uri)
    assert listed == ResourcesListChanged()


async def test_a_write_through_a_tool_reaches_listeners_of_both_eras(server: SchemaDocMCPServer) -> None:
    heard = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, ServerNotification) and message.method == "notifications/resources/updated":
            heard.set()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with Client(server) as modern, Client(server, mode="legacy", message_handler=on_message) as legacy:
            doc_id = await new_document(modern)
            uri = f"schema://{doc_id}"
            await legacy.subscribe_resource(uri)
            async with modern.listen(resource_subscriptions=[uri]) as listening:
                await call(legacy, "document_update_node",
                           {"doc_id": doc_id, "node_path": "/title", "node_data": "Both", "version": 1})
                with anyio.fail_after(5):
                    event = await listening.__anext__()
                    await heard.wait()
    assert event == ResourceUpdated(uri=uri)


@pytest.mark.parametrize(("tool", "arguments", "argument", "pointer"), [
    ("document_read_node", {"doc_id": "x\ud800", "node_path": "/"}, "doc_id", ""),
    ("document_read_node", {"doc_id": None, "node_path": "/ti\udfff"}, "node_path", ""),
    ("document_update_node", {"doc_id": None, "node_path": "/tags", "node_data": ["ok", "a\ud800b"], "version": 1},
     "node_data", "/1"),
    ("document_merge_patch", {"doc_id": None, "node_path": "/", "merge_patch": {"metadata": {"k": "\ud800"}},
      "version": 1}, "merge_patch", "/metadata/k"),
    ("document_search", {"query": "\ud800"}, "query", ""),
])
async def test_a_lone_surrogate_in_an_argument_is_invalid_request_not_an_internal_error(
        client: Client, tool: str, arguments: dict[str, Any], argument: str, pointer: str) -> None:
    doc_id = (await call(client, "document_create"))["doc_id"]
    arguments = {key: doc_id if value is None and key == "doc_id" else value for key, value in arguments.items()}
    error = await fail(client, tool, arguments)
    assert error["code"] == "invalid-request"
    assert error["details"] == {"argument": argument, "pointer": pointer, "reason": "lone-surrogate"}
    assert (await call(client, "document_read_node", {"doc_id": doc_id, "node_path": "/tags"}))["node_content"] == []
