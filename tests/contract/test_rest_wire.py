"""What only the REST door has: ETag/If-Match, catalogued HTTP errors, request limits, docs and health."""

from __future__ import annotations

from typing import Any

import pytest

from .doors import DOOR_NAMES, Door, RestDoor, book_doc, failed, ok

pytestmark = pytest.mark.anyio


@pytest.fixture(params=[name for name in DOOR_NAMES if name.endswith("rest")])
def door_name(request: pytest.FixtureRequest) -> str:
    """Only the REST doors (overrides the suite's ``door_name``)."""
    return str(request.param)


@pytest.fixture
def rest(door: Door) -> RestDoor:
    assert isinstance(door, RestDoor)
    return door


async def test_a_read_sends_the_version_as_etag(rest: RestDoor) -> None:
    doc = await book_doc(rest)
    outcome = await doc.read("/metadata")
    assert outcome.headers.get("etag") == f'"{doc.version}"'


async def test_a_read_without_a_path_reads_the_whole_document(rest: RestDoor) -> None:
    doc = await book_doc(rest)
    outcome = await rest.request("GET", f"/api/v1/documents/{doc.doc_id}")
    assert ok(outcome)["node_content"] == await doc.content()


async def test_if_match_gives_the_version_when_the_body_has_none(rest: RestDoor) -> None:
    doc = await book_doc(rest)
    outcome = await rest.request("PUT", f"/api/v1/documents/{doc.doc_id}", params={"path": "/title"},
                                 json_body={"node_data": "By header"}, headers={"If-Match": f'"{doc.version}"'})
    assert ok(outcome)["version"] == doc.version + 1
    stale = await rest.request("DELETE", f"/api/v1/documents/{doc.doc_id}/nodes", params={"path": "/tags/0"},
                               headers={"If-Match": f'"{doc.version}"'})
    error = failed(stale, "version-conflict")
    assert error["details"]["actual_version"] == doc.version + 1


async def test_the_body_version_wins_over_if_match(rest: RestDoor) -> None:
    doc = await book_doc(rest)
    outcome = await rest.request("PUT", f"/api/v1/documents/{doc.doc_id}", params={"path": "/title"},
                                 json_body={"node_data": "Body wins", "version": doc.version},
                                 headers={"If-Match": '"1"'})
    assert ok(outcome)["version"] == doc.version + 1


async def test_an_unknown_route_is_route_not_found(rest: RestDoor) -> None:
    outcome = await rest.request("GET", "/api/v1/books")
    failed(outcome, "route-not-found")
    assert outcome.status == 404


async def test_a_wrong_method_is_method_not_allowed(rest: RestDoor) -> None:
    outcome = await rest.request("PATCH", "/api/v1/documents")
    failed(outcome, "method-not-allowed")
    assert outcome.status == 405


async def test_a_body_that_is_not_json_is_invalid_request(rest: RestDoor) -> None:
    doc = await book_doc(rest)
    outcome = await rest.request("PUT", f"/api/v1/documents/{doc.doc_id}", params={"path": "/title"},
                                 content=b"{node_data: nope", headers={"Content-Type": "application/json"})
    failed(outcome, "invalid-request")
    assert outcome.status == 400


async def test_json_nested_too_deep_is_request_too_deep(rest: RestDoor) -> None:
    doc = await book_doc(rest)
    depth = 1100  # beyond the default max_json_depth (256) and any JSON parser's own limit
    body = b'{"node_data": ' + b"[" * depth + b"]" * depth + b', "version": %d}' % doc.version
    outcome = await rest.request("PUT", f"/api/v1/documents/{doc.doc_id}", params={"path": "/tags"},
                                 content=body, headers={"Content-Type": "application/json"})
    failed(outcome, "request-too-deep")
    assert outcome.status == 400
    assert (await doc.snapshot())[0] == doc.version


async def test_the_service_reports_healthy(rest: RestDoor) -> None:
    outcome = await rest.request("GET", "/health")
    assert outcome.status == 200
    assert outcome.body == {"status": "healthy"}


async def test_the_openapi_document_is_3_1_and_describes_every_endpoint(rest: RestDoor) -> None:
    spec: dict[str, Any] = ok(await rest.request("GET", "/openapi.json"))
    assert spec["openapi"].startswith("3.1")
    paths = spec["paths"]
    expected = {
        "/api/v1/documents": {"get", "post"},
        "/api/v1/documents/{doc_id}": {"get", "put"},
        "/api/v1/documents/{doc_id}/nodes": {"post", "delete"},
        "/api/v1/documents/{doc_id}/patch": {"post"},
        "/api/v1/schema": {"get"},
        "/api/v1/schema/node": {"get"},
    }
    for path, methods in expected.items():
        assert methods <= set(paths.get(path, {})), path


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
async def test_the_api_documentation_pages_are_served(rest: RestDoor, page: str) -> None:
    response = await rest.http.get(page)
    assert response.status_code == 200
    assert "text/html" in response.headers["content-type"]
