"""The REST door in process: every endpoint, its status codes, versions as ETags, and the error mapping."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient

from schemadoc.config import Settings
from schemadoc.interfaces.app import build_app, create_service

BOOK_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json"
API = "/api/v1"

Client = Callable[..., TestClient]


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[Client]:
    """Start an app (lifespan included) with the book schema in a fresh storage directory."""
    stack: list[TestClient] = []

    def make(**overrides: Any) -> TestClient:
        settings = Settings(schema_path=BOOK_SCHEMA, storage_dir=tmp_path / f"data{len(stack)}", **overrides)
        client = TestClient(build_app(create_service(settings), settings), base_url="http://127.0.0.1")
        client.__enter__()
        stack.append(client)
        return client

    yield make
    for client in reversed(stack):
        client.__exit__(None, None, None)


@pytest.fixture
def client(make_client: Client) -> TestClient:
    return make_client()


@pytest.fixture
def doc_id(client: TestClient) -> str:
    return str(client.post(f"{API}/documents").json()["doc_id"])


def error_of(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code
    assert error["category"] == str(status)
    assert set(error) == {"code", "category", "message", "details", "remediation", "request_id"}
    return dict(error)


CHAPTER = {"id": "ch-1", "title": "One", "sections": [{"title": "Start", "paragraphs": [{"text": "Hi."}]}]}


# -- documents -------------------------------------------------------------------------------


def test_creating_a_document_answers_201_with_its_location_and_version_1(client: TestClient) -> None:
    response = client.post(f"{API}/documents")
    assert response.status_code == 201
    body = response.json()
    assert body["success"] is True and body["version"] == 1
    assert body["initial_tree"]["title"] == "Untitled"
    assert body["validation_report"] == {"valid": True, "error_count": 0, "errors": []}
    assert body["document_uri"].endswith(f"{API}/documents/{body['doc_id']}")
    assert response.headers["location"] == body["document_uri"]
    assert response.headers["etag"] == '"1"'


def test_reading_sends_the_version_as_etag_and_defaults_to_the_whole_document(client: TestClient,
                                                                              doc_id: str) -> None:
    whole = client.get(f"{API}/documents/{doc_id}")
    assert whole.status_code == 200
    assert whole.headers["etag"] == '"1"'
    assert whole.json()["node_content"]["metadata"]["status"] == "draft"
    title = client.get(f"{API}/documents/{doc_id}", params={"path": "/title"}).json()
    assert (title["node_content"], title["node_type"], title["version"]) == ("Untitled", "string", 1)


def test_an_update_returns_the_new_version_and_reads_back(client: TestClient, doc_id: str) -> None:
    response = client.put(f"{API}/documents/{doc_id}", params={"path": "/title"},
                          json={"node_data": "Dune", "version": 1})
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["updated_node"], body["version"], body["dry_run"]) == ("Dune", 2, False)
    assert body["patch"] == [{"op": "replace", "path": "/title", "value": "Dune"}]
    assert response.headers["etag"] == '"2"'
    read = client.get(f"{API}/documents/{doc_id}", params={"path": "/title"})
    assert read.json()["node_content"] == "Dune" and read.headers["etag"] == '"2"'


def test_the_version_may_come_from_if_match_and_the_body_wins_over_it(client: TestClient, doc_id: str) -> None:
    url = f"{API}/documents/{doc_id}"
    by_header = client.put(url, params={"path": "/title"}, json={"node_data": "A"}, headers={"If-Match": '"1"'})
    assert by_header.json()["version"] == 2
    both = client.put(url, params={"path": "/title"}, json={"node_data": "B", "version": 2},
                      headers={"If-Match": '"1"'})
    assert both.status_code == 200 and both.json()["version"] == 3
    weak = client.put(url, params={"path": "/title"}, json={"node_data": "C"}, headers={"If-Match": 'W/"3"'})
    assert weak.json()["version"] == 4
    star = client.put(url, params={"path": "/title"}, json={"node_data": "D"}, headers={"If-Match": "*"})
    assert star.json()["version"] == 5


def test_a_stale_version_is_a_version_conflict_that_changes_nothing(client: TestClient, doc_id: str) -> None:
    url = f"{API}/documents/{doc_id}"
    client.put(url, params={"path": "/title"}, json={"node_data": "First", "version": 1})
    error = error_of(client.put(url, params={"path": "/title"}, json={"node_data": "Second", "version": 1}),
                     409, "version-conflict")
    assert error["details"]["actual_version"] == 2
    error_of(client.put(url, params={"path": "/title"}, json={"node_data": "x"}, headers={"If-Match": '"1"'}),
             409, "version-conflict")
    assert client.get(url, params={"path": "/title"}).json()["node_content"] == "First"


def test_a_write_without_any_version_is_an_invalid_request_naming_version(client: TestClient, doc_id: str) -> None:
    error = error_of(client.put(f"{API}/documents/{doc_id}", params={"path": "/title"}, json={"node_data": "x"}),
                     400, "invalid-request")
    assert error["details"]["argument"] == "version"
    assert "If-Match" in error["message"]


@pytest.mark.parametrize(("kwargs", "argument"), [
    ({"json": {"node_data": "x", "version": "1"}}, "version"),
    ({"json": {"node_data": "x", "version": True}}, "version"),
    ({"json": {"version": 1}}, "node_data"),
    ({"json": ["node_data", 1]}, "body"),
    ({"content": b"{not json", "headers": {"content-type": "application/json"}}, "body"),
    ({}, "body"),
    ({"json": {"node_data": "x", "version": 1, "dry_run": "yes"}}, "dry_run"),
    ({"json": {"node_data": "x"}, "headers": {"If-Match": '"one"'}}, "If-Match"),
])
def test_wrongly_typed_or_missing_arguments_are_invalid_request_naming_the_argument(
        client: TestClient, doc_id: str, kwargs: dict[str, Any], argument: str) -> None:
    response = client.put(f"{API}/documents/{doc_id}", params={"path": "/title"}, **kwargs)
    assert error_of(response, 400, "invalid-request")["details"]["argument"] == argument


@pytest.mark.parametrize(("params", "argument"), [
    ({"limit": "ten"}, "limit"), ({"offset": "-"}, "offset"), ({"limit": "0"}, "limit"),
])
def test_bad_query_parameters_are_invalid_request_naming_the_parameter(
        client: TestClient, params: dict[str, str], argument: str) -> None:
    assert error_of(client.get(f"{API}/documents", params=params), 400,
                    "invalid-request")["details"]["argument"] == argument


def test_a_write_without_its_path_is_an_invalid_request_naming_path(client: TestClient, doc_id: str) -> None:
    error = error_of(client.put(f"{API}/documents/{doc_id}", json={"node_data": "x", "version": 1}),
                     400, "invalid-request")
    assert error["details"]["argument"] == "path"


def test_dry_run_previews_a_write_and_changes_nothing(client: TestClient, doc_id: str) -> None:
    url = f"{API}/documents/{doc_id}"
    previews: list[dict[str, Any]] = [
        {"params": {"path": "/title", "dry_run": "true"}, "json": {"node_data": "Preview", "version": 1}},
        {"params": {"path": "/title"}, "json": {"node_data": "Preview", "version": 1, "dry_run": True}}]
    for kwargs in previews:
        response = client.put(url, **kwargs)
        assert response.status_code == 200
        body = response.json()
        assert (body["dry_run"], body["version"], body["updated_node"]) == (True, 1, "Preview")
        assert "etag" not in response.headers
    invalid = client.put(url, params={"path": "/title", "dry_run": "true"}, json={"node_data": "", "version": 1})
    assert invalid.status_code == 422, "an invalid dry run answers what the write would"
    assert invalid.json()["error"]["code"] == "validation-failed" and invalid.json()["error"]["details"]["dry_run"]
    appended = client.post(f"{url}/nodes", params={"path": "/tags/-", "dry_run": "true"},
                           json={"node_data": "sf", "version": 1})
    assert appended.status_code == 201 and appended.json()["created_node_path"] == "/tags/0"
    deleted = client.request("DELETE", f"{url}/nodes", params={"path": "/tags", "dry_run": "1"}, json={"version": 1})
    assert deleted.json()["dry_run"] is True
    patched = client.post(f"{url}/patch", params={"dry_run": "true"},
                          json={"patch": [{"op": "add", "path": "/tags/-", "value": "x"}], "version": 1})
    assert patched.json()["dry_run"] is True
    read = client.get(url)
    assert read.headers["etag"] == '"1"'
    assert read.json()["node_content"]["title"] == "Untitled" and read.json()["node_content"]["tags"] == []


def test_creating_a_node_answers_201_with_the_resolved_path(client: TestClient, doc_id: str) -> None:
    response = client.post(f"{API}/documents/{doc_id}/nodes", params={"path": "/chapters/-"},
                           json={"node_data": CHAPTER, "version": 1})
    assert response.status_code == 201, response.text
    body = response.json()
    assert (body["created_node_path"], body["created_node"], body["version"]) == ("/chapters/0", CHAPTER, 2)
    assert response.headers["etag"] == '"2"'
    again = client.post(f"{API}/documents/{doc_id}/nodes", params={"path": "/title"},
                        json={"node_data": "x", "version": 2})
    error_of(again, 409, "conflict")


def test_deleting_a_node_takes_the_version_from_the_body_or_if_match(client: TestClient, doc_id: str) -> None:
    url = f"{API}/documents/{doc_id}"
    client.post(f"{url}/nodes", params={"path": "/tags/-"}, json={"node_data": "a", "version": 1})
    client.post(f"{url}/nodes", params={"path": "/tags/-"}, json={"node_data": "b", "version": 2})
    by_body = client.request("DELETE", f"{url}/nodes", params={"path": "/tags/0"}, json={"version": 3})
    assert by_body.status_code == 200 and by_body.json()["deleted_node"] == "a"
    by_header = client.delete(f"{url}/nodes", params={"path": "/tags/0"}, headers={"If-Match": '"4"'})
    assert by_header.status_code == 200 and by_header.json()["deleted_node"] == "b"
    assert by_header.json()["version"] == 5
    error_of(client.delete(f"{url}/nodes", params={"path": "/"}, headers={"If-Match": '"5"'}),
             400, "root-not-deletable")


def test_a_patch_applies_atomically_from_an_object_or_a_bare_array(client: TestClient, doc_id: str) -> None:
    url = f"{API}/documents/{doc_id}/patch"
    patch = [{"op": "replace", "path": "/title", "value": "Patched"}, {"op": "add", "path": "/tags/-", "value": "x"}]
    response = client.post(url, json={"patch": patch, "version": 1})
    assert response.status_code == 200, response.text
    assert response.json()["version"] == 2
    assert response.json()["patch"][1] == {"op": "add", "path": "/tags/0", "value": "x"}
    bare = client.post(url, json=[{"op": "remove", "path": "/tags/0"}], headers={"If-Match": '"2"'})
    assert bare.status_code == 200 and bare.json()["version"] == 3
    failing = client.post(url, json={"patch": [{"op": "test", "path": "/title", "value": "Nope"},
                                               {"op": "replace", "path": "/title", "value": "Never"}], "version": 3})
    error_of(failing, 409, "patch-test-failed")
    error_of(client.post(url, json={"patch": [{"op": "jump", "path": "/"}], "version": 3}), 400, "patch-invalid")
    assert client.get(f"{API}/documents/{doc_id}", params={"path": "/title"}).json()["node_content"] == "Patched"


def test_an_invalid_write_is_validation_failed_with_every_violation(client: TestClient, doc_id: str) -> None:
    response = client.put(f"{API}/documents/{doc_id}", params={"path": "/metadata"},
                          json={"node_data": {"language": "english", "status": "lost", "edition": 0}, "version": 1})
    error = error_of(response, 422, "validation-failed")
    codes = sorted(v["code"] for v in error["details"]["violations"])
    assert codes == ["enum-mismatch", "minimum", "pattern-failed"]
    assert client.get(f"{API}/documents/{doc_id}").headers["etag"] == '"1"'


def test_missing_documents_paths_and_bad_ids_have_their_own_codes(client: TestClient, doc_id: str) -> None:
    error_of(client.get(f"{API}/documents/01ARZ3NDEKTSV4RRFFQ69G5FAV"), 404, "document-not-found")
    error_of(client.get(f"{API}/documents/not-a-ulid"), 400, "invalid-doc-id")
    error_of(client.get(f"{API}/documents/{doc_id}", params={"path": "/nope"}), 404, "path-not-found")
    error_of(client.get(f"{API}/documents/{doc_id}", params={"path": "title"}), 400, "path-invalid")


def test_the_list_pages_through_documents(client: TestClient) -> None:
    ids = [client.post(f"{API}/documents").json()["doc_id"] for _ in range(3)]
    first = client.get(f"{API}/documents", params={"limit": 2}).json()
    assert (first["total_documents"], first["has_more"], len(first["documents"])) == (3, True, 2)
    rest = client.get(f"{API}/documents", params={"limit": 2, "offset": 2}).json()
    assert rest["has_more"] is False
    assert sorted(d["doc_id"] for d in first["documents"] + rest["documents"]) == sorted(ids)
    assert first["schema_uri"] == rest["schema_uri"]


def test_the_schema_endpoints_return_the_root_and_node_schemas(client: TestClient, doc_id: str) -> None:
    raw = client.get(f"{API}/schema", params={"dereferenced": "false"}).json()
    assert raw["root_schema"]["properties"]["metadata"] == {
        "description": "Who wrote the book, in which language, and where it stands.", "$ref": "#/$defs/metadata"}
    assert raw["schema_version"] == "1.0.0"
    resolved = client.get(f"{API}/schema").json()
    assert "$ref" not in resolved["root_schema"]["properties"]["metadata"]
    node = client.get(f"{API}/schema/node", params={"path": "/metadata/edition", "doc_id": doc_id}).json()
    assert node["node_schema"]["type"] == "integer" and node["node_exists"] is True
    missing = client.get(f"{API}/schema/node", params={"path": "/metadata/isbn", "doc_id": doc_id}).json()
    assert missing["node_exists"] is False
    error_of(client.get(f"{API}/schema/node", params={"path": "/nope"}), 404, "path-not-found")
    error_of(client.get(f"{API}/schema", params={"dereferenced": "perhaps"}), 400, "invalid-request")


# -- the application around the routes -------------------------------------------------------


def test_unknown_urls_and_methods_get_catalogued_errors(client: TestClient) -> None:
    error_of(client.get("/nowhere"), 404, "route-not-found")
    error_of(client.get(f"{API}/nothing/here"), 404, "route-not-found")
    response = client.patch(f"{API}/documents")
    error = error_of(response, 405, "method-not-allowed")
    assert error["details"]["allowed"] == ["GET", "POST"]
    assert response.headers["allow"] == "GET, POST"


def test_an_oversize_body_is_request_too_large_by_length_or_by_count(make_client: Client) -> None:
    client = make_client(max_body_bytes=1024)
    doc_id = client.post(f"{API}/documents").json()["doc_id"]
    big = {"node_data": "x" * 2000, "version": 1}
    error = error_of(client.put(f"{API}/documents/{doc_id}", params={"path": "/title"}, json=big),
                     413, "request-too-large")
    assert error["details"]["max_body_bytes"] == 1024

    def chunks() -> Iterator[bytes]:  # no Content-Length: the server must count
        data = orjson.dumps(big)
        for start in range(0, len(data), 256):
            yield data[start:start + 256]

    streamed = client.put(f"{API}/documents/{doc_id}", params={"path": "/title"}, content=chunks())
    error_of(streamed, 413, "request-too-large")
    small = client.put(f"{API}/documents/{doc_id}", params={"path": "/title"}, json={"node_data": "ok", "version": 1})
    assert small.status_code == 200


def test_deeply_nested_json_is_request_too_deep(make_client: Client) -> None:
    client = make_client(max_json_depth=8)
    doc_id = client.post(f"{API}/documents").json()["doc_id"]
    url = f"{API}/documents/{doc_id}"
    nested: Any = "leaf"
    for _ in range(9):
        nested = [nested]
    error = error_of(client.put(url, params={"path": "/title"}, json={"node_data": nested, "version": 1}),
                     400, "request-too-deep")
    assert error["details"] == {"argument": "node_data", "max_json_depth": 8}
    beyond_any_parser = b'{"node_data": ' + b"[" * 5000 + b"]" * 5000 + b', "version": 1}'
    error_of(client.put(url, params={"path": "/title"}, content=beyond_any_parser,
                        headers={"content-type": "application/json"}), 400, "request-too-deep")
    error_of(client.post(f"{url}/patch", json=[{"op": "add", "path": "/tags/-", "value": nested}],
                         headers={"If-Match": '"1"'}), 400, "request-too-deep")
    as_deep_as_allowed = nested[0]  # 8 levels: a request the limit accepts, but /title puts it 9 levels down
    error = error_of(client.put(url, params={"path": "/title"}, json={"node_data": as_deep_as_allowed, "version": 1}),
                     422, "document-too-deep")
    assert error["details"] == {"path": "/title", "max_json_depth": 8}
    just_deep_enough = nested[0][0]  # 7 levels: the document stays within the limit, the schema refuses it
    error_of(client.put(url, params={"path": "/title"}, json={"node_data": just_deep_enough, "version": 1}),
             422, "validation-failed")


def test_an_unexpected_exception_is_internal_error_without_a_traceback(make_client: Client,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    client = make_client()
    def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("secret internals")

    from schemadoc.service import DocumentService

    monkeypatch.setattr(DocumentService, "list_documents", explode)
    response = client.get(f"{API}/documents")
    error = error_of(response, 500, "internal-error")
    assert "secret" not in response.text and "Traceback" not in response.text
    assert error["details"] == {"method": "GET", "path": f"{API}/documents"}
    assert "secret internals" in caplog.text


def test_health_docs_and_an_openapi_3_1_document_are_served(client: TestClient) -> None:
    assert client.get("/health").json() == {"status": "healthy"}
    assert "swagger" in client.get("/docs").text.lower()
    assert "redoc" in client.get("/redoc").text.lower()
    spec = client.get("/openapi.json").json()
    assert spec["openapi"].startswith("3.1")
    assert spec["info"]["title"] == "schemadoc"
    paths = spec["paths"]
    assert {f"{API}/documents", f"{API}/documents/{{doc_id}}", f"{API}/documents/{{doc_id}}/nodes",
            f"{API}/documents/{{doc_id}}/patch", f"{API}/schema", f"{API}/schema/node", "/health"} <= set(paths)
    assert "/mcp" not in paths
    put = paths[f"{API}/documents/{{doc_id}}"]["put"]
    assert put["requestBody"]["content"]["application/json"]["schema"]["required"] == ["node_data"]
    error_schema = put["responses"]["409"]["content"]["application/json"]["schema"]
    assert error_schema == {"$ref": "#/components/schemas/ErrorBody"}
    assert paths[f"{API}/documents"]["post"]["responses"].keys() >= {"201", "422"}
    assert {p["name"] for p in put["parameters"]} >= {"doc_id", "path", "dry_run", "if-match"}


MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "MCP-Protocol-Version": "2025-11-25"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "test", "version": "0"}}}


def test_cors_answers_preflights_and_exposes_etag(make_client: Client) -> None:
    client = make_client(cors_origins=("http://app.example",))
    preflight = client.options(f"{API}/documents", headers={
        "Origin": "http://app.example", "Access-Control-Request-Method": "PUT",
        "Access-Control-Request-Headers": "if-match, mcp-session-id"})
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "http://app.example"
    assert "mcp-session-id" in preflight.headers["access-control-allow-headers"].lower()
    read = client.get(f"{API}/documents", headers={"Origin": "http://app.example"})
    exposed = read.headers["access-control-expose-headers"].lower()
    assert "etag" in exposed and "mcp-session-id" in exposed
    other = client.get(f"{API}/documents", headers={"Origin": "http://evil.example"})
    assert "access-control-allow-origin" not in other.headers
    mcp_from_app = client.post("/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Origin": "http://app.example"})
    assert mcp_from_app.status_code == 200
    mcp_from_elsewhere = client.post("/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Origin": "http://evil.example"})
    assert mcp_from_elsewhere.status_code == 403


def test_mcp_answers_at_slash_mcp_in_the_same_app(client: TestClient) -> None:
    response = client.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
    assert response.status_code == 200, response.text
    assert '"protocolVersion":"2025-11-25"' in response.text.replace(" ", "")
    assert response.headers.get("mcp-session-id")


def test_mcp_messages_are_held_to_the_same_size_and_depth_limits(make_client: Client) -> None:
    client = make_client(max_body_bytes=4096, max_json_depth=8)
    nested: Any = 1
    for _ in range(20):
        nested = [nested]
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "document_list", "arguments": {"limit": nested}}}
    deep = client.post("/mcp", json=call, headers=MCP_HEADERS)
    assert deep.status_code == 400
    assert deep.json()["id"] == 7
    assert deep.json()["error"]["data"]["error"]["code"] == "request-too-deep"
    large = client.post("/mcp", content=b'{"jsonrpc": "2.0", "pad": "' + b"x" * 5000 + b'"}', headers=MCP_HEADERS)
    assert large.status_code == 413
    assert large.json()["error"]["data"]["error"]["code"] == "request-too-large"


def test_the_openapi_document_declares_the_doc_id_pattern_and_the_bounds_the_server_checks(
        make_client: Client) -> None:
    client = make_client()
    spec = client.get("/openapi.json").json()
    parameters = [(path, parameter) for path, operations in spec["paths"].items()
                  for operation in operations.values() for parameter in operation.get("parameters", [])]
    doc_ids = [parameter["schema"] for path, parameter in parameters
               if parameter["name"] == "doc_id" and parameter["in"] == "path"]
    assert len(doc_ids) >= 15 and all("pattern" in schema for schema in doc_ids)
    pattern = doc_ids[0]["pattern"]
    created = client.post(f"{API}/documents").json()["doc_id"]
    assert re.fullmatch(pattern, created) and not re.fullmatch(pattern, created[:-1] + "U")
    bounds = {(path, parameter["name"]): parameter["schema"] for path, parameter in parameters
              if parameter["name"] in ("version", "since_version", "limit", "offset", "since")}
    assert bounds[("/api/v1/documents/{doc_id}/history", "since_version")]["minimum"] == 0
    assert bounds[("/api/v1/documents/{doc_id}/versions/{version}", "version")]["minimum"] == 1
    assert bounds[("/api/v1/documents", "limit")] | {} == {**bounds[("/api/v1/documents", "limit")],
                                                          "minimum": 1, "maximum": 1000}
    # the document only describes: a doc_id outside the pattern still gets the catalogued code
    error_of(client.get(f"{API}/documents/{created[:-1]}U"), 400, "invalid-doc-id")


@pytest.mark.parametrize("op", [{"op": "add"}, ["add"]])
def test_a_patch_operation_whose_op_is_not_a_string_is_patch_invalid_not_an_internal_error(
        make_client: Client, op: Any) -> None:
    client = make_client()
    doc_id = client.post(f"{API}/documents").json()["doc_id"]
    error_of(client.post(f"{API}/documents/{doc_id}/patch",
                         json={"patch": [{"op": op, "path": "/title", "value": "x"}], "version": 1}),
             400, "patch-invalid")


def test_the_openapi_document_describes_success_bodies_with_their_models(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]

    def success(path: str, method: str) -> dict[str, Any]:
        responses = spec["paths"][path][method]["responses"]
        status = next(code for code in responses if code.startswith("2"))
        content: dict[str, Any] = responses[status]["content"]
        return content

    health = success("/health", "get")["application/json"]["schema"]
    assert health == {"$ref": "#/components/schemas/HealthResult"}
    assert schemas["HealthResult"]["properties"]["status"] == {"type": "string", "const": "healthy",
                                                               "title": "Status"}
    listing = success(f"{API}/documents", "get")["application/json"]["schema"]
    assert listing == {"$ref": "#/components/schemas/ListDocumentsResult"}
    for path, operations in spec["paths"].items():
        for method in operations:
            for media, body in success(path, method).items():
                assert body["schema"] != {"type": "string"}, (method, path, media)
    event = success(f"{API}/documents/{{doc_id}}/events", "get")["text/event-stream"]["schema"]
    assert event["properties"]["event"] == {"enum": ["version", "purged", "error"]}


def test_the_openapi_document_says_what_each_parameter_takes_and_every_status(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            assert "500" in operation["responses"], (method, path)
            assert ("413" in operation["responses"]) == (method in ("post", "put", "patch", "delete")), (method, path)
            assert ("415" in operation["responses"]) == (method in ("post", "put", "patch", "delete")), (method, path)
            for parameter in operation.get("parameters", []):
                assert "anyOf" not in parameter["schema"], (method, path, parameter)  # never "null" on the wire
    merge = {p["name"]: p for p in spec["paths"][f"{API}/documents/{{doc_id}}"]["patch"]["parameters"]}
    assert merge["if-match"]["required"] is True
    delete = {p["name"]: p for p in spec["paths"][f"{API}/documents/{{doc_id}}/nodes"]["delete"]["parameters"]}
    pointer = delete["path"]["schema"]["pattern"]
    assert [bool(re.fullmatch(pointer, text)) for text in ("", "/", "/a", "/a~1b/0", "//", "/a~2", "a")] == [
        False, False, True, True, True, False, False]
    assert "400" in spec["paths"][f"{API}/documents"]["post"]["responses"]


def test_huge_offsets_read_an_empty_window_rather_than_fail(client: TestClient, doc_id: str) -> None:
    huge = 2**63 - 1  # the largest integer an argument may be (what itertools.islice takes, too)
    for url in (f"{API}/documents/{doc_id}?offset={huge}", f"{API}/documents/{doc_id}?offset={huge}&limit=3",
                f"{API}/documents/{doc_id}/render?offset={huge}", f"{API}/documents/{doc_id}/outline?offset={huge}"):
        response = client.get(url)
        assert response.status_code == 200, (url, response.text)
        beyond = client.get(url.replace(str(huge), str(huge + 1)))
        assert error_of(beyond, 400, "invalid-request")["details"]["argument"] == "offset"
    assert client.get(f"{API}/documents/{doc_id}?offset={huge}").json()["node_content"] == {}
    assert client.get(f"{API}/documents/{doc_id}/render?offset={huge}").json()["text"] == ""


def test_a_body_that_is_an_array_is_refused_where_the_route_takes_an_object(client: TestClient,
                                                                            doc_id: str) -> None:
    error_of(client.request("DELETE", f"{API}/documents/{doc_id}", content=b"[null, null]",
                            headers={"If-Match": "*", "Content-Type": "application/json"}), 400, "invalid-request")
    assert client.get(f"{API}/documents/{doc_id}").status_code == 200  # not deleted


def test_an_invalid_since_is_refused_even_beside_a_last_event_id(client: TestClient, doc_id: str) -> None:
    error = error_of(client.get(f"{API}/documents/{doc_id}/events?since=-1", headers={"Last-Event-ID": "0"}),
                     400, "invalid-request")
    assert error["details"]["argument"] == "since"


def test_post_documents_links_every_operation_on_the_new_document(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    created = spec["paths"][f"{API}/documents"]["post"]["responses"]["201"]
    on_a_document = {operation["operationId"] for path, operations in spec["paths"].items()
                     for operation in operations.values() if path.startswith(f"{API}/documents/{{doc_id}}")
                     and "{version}" not in path}
    assert set(created["links"]) == on_a_document
    assert created["links"]["document_update_node"]["parameters"] == {
        "path.doc_id": "$response.body#/doc_id", "header.if-match": "$response.header.ETag"}
    assert "header.if-match" not in created["links"]["document_read_node"]["parameters"]
    response = client.post(f"{API}/documents")
    assert re.fullmatch(created["headers"]["ETag"]["schema"]["pattern"], response.headers["ETag"])
    assert response.headers["Location"].endswith(response.json()["doc_id"])


@pytest.mark.parametrize("number", [10**19 + 7, 2**64, -(10**25) - 3, 12345678901234567890123456789, 10**400,
                                    -(10**4299)], ids=["10^19+7", "2^64", "-10^25-3", "29 digits", "10^400",
                                                      "-10^4299"])
def test_a_body_keeps_integers_of_twenty_digits_and_more_exact(number: int) -> None:
    """orjson reads them approximately (as floats); the body parser notices the run of digits and reads exactly."""
    from schemadoc.interfaces.rest.routes import parse_json

    value = parse_json(orjson.dumps({"text": "0" * 30, "n": [1.5, 3]})[:-2] + f", {number}]}}".encode())
    assert value == {"text": "0" * 30, "n": [1.5, 3, number]}
    assert type(value["n"][2]) is int


def test_the_error_catalog_is_served_as_the_mcp_resource_serves_it(client: TestClient) -> None:
    from schemadoc.errors import CATALOG

    response = client.get("/api/v1/errors")

    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["success"] is True
    assert body["errors"] == [entry.as_dict() for entry in CATALOG.values()]
    documented = client.get("/openapi.json").json()["paths"]["/api/v1/errors"]["get"]
    assert documented["operationId"] == "errors_catalog"
    assert set(body["errors"][0]) <= set(client.get("/openapi.json").json()["components"]["schemas"]
                                          ["ErrorCatalogEntry"]["properties"])


def test_create_takes_content_in_the_body_or_nothing(client: TestClient) -> None:
    assert client.post(f"{API}/documents").status_code == 201  # the spec's create: no body
    created = client.post(f"{API}/documents", json={"content": {"title": "Given"}})
    assert created.status_code == 201
    assert created.json()["initial_tree"]["title"] == "Given" and created.json()["initial_tree"]["chapters"] == []
    refused = client.post(f"{API}/documents", json={"content": {"title": ""}})
    assert refused.status_code == 422 and refused.json()["error"]["code"] == "validation-failed"
