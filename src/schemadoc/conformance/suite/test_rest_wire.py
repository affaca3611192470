"""What only the REST door has: ETag/If-Match, catalogued HTTP errors, request limits, docs and health."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ..readings import category_matches, same_id
from .doors import DOOR_NAMES, Door, EventStream, RestDoor, book_doc, failed, ok

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


async def test_a_body_not_declared_as_json_is_unsupported_media_type_and_changes_nothing(
        rest: RestDoor, fresh_server: bool) -> None:
    """A page on another origin may send text/plain, a form or multipart without a preflight: never read as JSON."""
    doc = await book_doc(rest)
    listed = ok(await rest.call("document_list", {}))["total_documents"]
    for media in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                  "application/xml", None):
        headers = {"Content-Type": media} if media else {}
        created = await rest.request("POST", "/api/v1/documents", content=b'{"content": {"title": "Blind"}}',
                                     headers=headers)
        failed(created, "unsupported-media-type")
        assert created.status == 415
        updated = await rest.request("PUT", f"/api/v1/documents/{doc.doc_id}", params={"path": "/title"},
                                     content=b'{"node_data": "Blind", "version": %d}' % doc.version, headers=headers)
        failed(updated, "unsupported-media-type")
    assert (await doc.snapshot())[0] == doc.version
    if fresh_server:
        assert ok(await rest.call("document_list", {}))["total_documents"] == listed
    for media in ("application/json; charset=utf-8", "application/vnd.example+json"):  # declared as JSON
        created = await rest.request("POST", "/api/v1/documents", content=b"{}", headers={"Content-Type": media})
        assert ok(created) and created.status == 201
    assert ok(await rest.request("POST", "/api/v1/documents")).get("doc_id")  # no body: no type needed


async def test_json_nested_too_deep_is_request_too_deep(rest: RestDoor) -> None:
    doc = await book_doc(rest)
    depth = 1100  # beyond the default max_json_depth (128) and any JSON parser's own limit
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
        "/api/v1/documents/{doc_id}/history": {"get"},
        "/api/v1/documents/{doc_id}/versions/{version}": {"get"},
        "/api/v1/documents/{doc_id}/diff": {"get"},
        "/api/v1/documents/{doc_id}/revert": {"post"},
        "/api/v1/documents/{doc_id}/undelete": {"post"},
        "/api/v1/documents/{doc_id}/purge": {"post"},
        "/api/v1/documents/{doc_id}/merge": {"post"},
        "/api/v1/documents/{doc_id}/events": {"get"},
        "/api/v1/changes": {"get"},
    }
    expected["/api/v1/documents/{doc_id}"] |= {"patch", "delete"}
    for path, methods in expected.items():
        assert methods <= set(paths.get(path, {})), path


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
async def test_the_api_documentation_pages_are_served(rest: RestDoor, page: str) -> None:
    response = await rest.http.get(page)
    assert response.status_code == 200
    assert "text/html" in response.headers["content-type"]


# -- history, merge patch and the event stream over HTTP ------------------------------------------------


async def test_past_reads_send_the_past_version_as_etag_and_history_the_current_one(rest: RestDoor) -> None:
    doc = await book_doc(rest)
    ok(await doc.update("/title", "Now"))
    at = await rest.call("document_read_node", {"doc_id": doc.doc_id, "node_path": "/title", "at_version": 2})
    assert at.headers.get("etag") == '"2"'
    whole = await rest.read_version(doc.doc_id, 2)
    assert whole.headers.get("etag") == '"2"'
    assert whole.headers.get("content-type", "").startswith("application/json")
    history = await rest.call("document_history", {"doc_id": doc.doc_id, "limit": 1})
    assert history.headers.get("etag") == f'"{doc.version}"'


async def test_patch_takes_a_merge_patch_and_the_version_from_if_match(rest: RestDoor) -> None:
    doc = await book_doc(rest)
    url = f"/api/v1/documents/{doc.doc_id}"
    merge = {"Content-Type": "application/merge-patch+json"}
    outcome = await rest.request("PATCH", url, params={"path": "/metadata"}, content=b'{"status": "review"}',
                                 headers={**merge, "If-Match": f'"{doc.version}"'})
    body = ok(outcome)
    assert body["version"] == doc.version + 1
    assert body["patch"] == [{"op": "replace", "path": "/metadata/status", "value": "review"}]
    assert outcome.headers.get("etag") == f'"{doc.version + 1}"'
    doc.version += 1
    stale = await rest.request("PATCH", url, params={"path": "/metadata"}, content=b'{"edition": 4}',
                               headers={**merge, "If-Match": '"2"'})
    failed(stale, "version-conflict")
    error = failed(await rest.request("PATCH", url, content=b'{"title": "x"}', headers=merge), "invalid-request")
    assert error["details"]["argument"] == "version"
    refused = await rest.request("PATCH", url, content=b'{"title": "x"}',
                                 headers={"Content-Type": "text/plain", "If-Match": f'"{doc.version}"'})
    failed(refused, "unsupported-media-type")
    assert refused.status == 415
    outcome = await rest.request("PATCH", url, content=b'{"bogus": 1}',
                                 headers={**merge, "If-Match": f'"{doc.version}"'})
    failed(outcome, "validation-failed")
    assert outcome.status == 422
    assert (await doc.snapshot())[0] == doc.version


async def test_revert_and_delete_take_the_version_from_if_match(rest: RestDoor) -> None:
    doc = await book_doc(rest)
    url = f"/api/v1/documents/{doc.doc_id}"
    outcome = await rest.request("POST", url + "/revert", json_body={"to_version": 1},
                                 headers={"If-Match": f'"{doc.version}"'})
    assert ok(outcome)["version"] == 3
    assert outcome.headers.get("etag") == '"3"'
    failed(await rest.request("DELETE", url, headers={"If-Match": '"2"'}), "version-conflict")
    deleted = await rest.request("DELETE", url, headers={"If-Match": '"3"'})
    assert ok(deleted)["deleted"] is True
    assert deleted.headers.get("etag") == '"4"'


async def _versions(stream: EventStream, count: int) -> list[dict[str, Any]]:
    """The next ``count`` events, each checked to be a version event whose id is its version."""
    events = []
    for _ in range(count):
        event = await stream.next_event()
        assert event is not None, "the stream ended early"
        assert event.get("event") == "version", event
        data = json.loads(event["data"])
        assert event.get("id") == str(data["version"]), event
        events.append(data)
    return events


async def test_the_event_stream_replays_follows_resumes_and_ends_with_a_purge(rest: RestDoor) -> None:
    doc = await book_doc(rest)
    ok(await doc.update("/title", "Three"))
    async with rest.events(doc.doc_id, params={"since": "1"}) as stream:
        assert stream.status == 200
        assert stream.headers.get("content-type", "").startswith("text/event-stream")
        replayed = await _versions(stream, 2)
        assert [(e["version"], e["op"]) for e in replayed] == [(2, "update_node"), (3, "update_node")]
        assert replayed[1]["patch"] == [{"op": "replace", "path": "/title", "value": "Three"}]
        failed(await doc.update("/title", 4), "validation-failed")
        ok(await doc.update("/title", "Dry", dry_run=True))
        ok(await doc.merge("/", {"title": "Four"}))
        assert [(e["version"], e["op"]) for e in await _versions(stream, 1)] == [(4, "merge_patch")], (
            "the failed and the dry-run write sent nothing")
    ok(await doc.update("/title", "Five"))
    async with rest.events(doc.doc_id, params={"since": "0"}, headers={"Last-Event-ID": "4"}) as stream:
        assert [e["version"] for e in await _versions(stream, 1)] == [5], "Last-Event-ID wins over since"
        ok(await doc.delete_document())
        assert [e["op"] for e in await _versions(stream, 1)] == ["delete_document"]
        ok(await rest.call("document_purge", {"doc_id": doc.doc_id}))
        purged = await stream.next_event()
        assert purged is not None and purged.get("event") == "purged", purged
        assert same_id(json.loads(purged["data"])["doc_id"], doc.doc_id)
        assert await stream.next_event() is None, "a purge ends the stream"


async def test_an_event_stream_that_cannot_start_answers_with_the_error_object(rest: RestDoor) -> None:
    doc = await book_doc(rest)
    cases: list[tuple[str, dict[str, str], dict[str, str], str]] = [
        (doc.doc_id, {"since": "9"}, {}, "version-not-found"),
        (doc.doc_id, {}, {"Last-Event-ID": "later"}, "invalid-request"),
        ("01ARZ3NDEKTSV4RRFFQ69G5FAV", {}, {}, "document-not-found"),
    ]
    for doc_id, params, headers, code in cases:
        async with rest.events(doc_id, params=params, headers=headers) as stream:
            body = await stream.body()
            assert body["error"]["code"] == code, (params, headers, body)
            assert category_matches(body["error"]["category"], stream.status)


_BODY_ROUTES = [
    ("PUT", "", {"path": "/title"}, {"node_data": "x"}),
    ("POST", "/nodes", {"path": "/tags/-"}, {"node_data": "x"}),
    ("DELETE", "/nodes", {"path": "/tags/0"}, {}),
    ("POST", "/patch", {}, {"patch": [{"op": "replace", "path": "/title", "value": "x"}]}),
    ("POST", "/merge", {"path": "/"}, {"merge_patch": {"title": "x"}}),
    ("POST", "/revert", {}, {"to_version": 1}),
    ("DELETE", "", {}, {}),
]


@pytest.mark.parametrize(("method", "suffix", "params", "members"), _BODY_ROUTES,
                         ids=[f"{method} {suffix or '/'}" for method, suffix, _, _ in _BODY_ROUTES])
async def test_an_unknown_body_member_is_refused_naming_it_as_mcp_refuses_an_unknown_argument(
        rest: RestDoor, method: str, suffix: str, params: dict[str, str], members: dict[str, Any]) -> None:
    doc = await book_doc(rest)
    before = await doc.snapshot()
    body = {**members, "version": doc.version, "colour": "red", "Version": 2}
    outcome = await rest.request(method, f"/api/v1/documents/{doc.doc_id}{suffix}", params=params, json_body=body)
    error = failed(outcome, "invalid-request")
    assert outcome.status == 400
    assert error["details"]["unknown"] == ["Version", "colour"]
    assert "version" in error["details"]["accepted"]
    assert await doc.snapshot() == before


async def test_creating_a_document_refuses_any_body_member(rest: RestDoor) -> None:
    outcome = await rest.request("POST", "/api/v1/documents", json_body={"title": "Dune"})
    error = failed(outcome, "invalid-request")
    assert error["details"]["unknown"] == ["title"]
    assert ok(await rest.request("POST", "/api/v1/documents", json_body={}))["version"] == 1
