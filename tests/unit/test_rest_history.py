"""History, time travel, undo, deletion, merge patch and change feeds through the REST door, in process.

The event stream is tested twice: its feed (:func:`schemadoc.interfaces.http.feeds.document_events`)
directly, where races can be staged exactly, and the whole SSE response by calling the ASGI
application with a hand-made ``receive``/``send`` (httpx's ASGI transport cannot stream).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator, Callable, Iterator, MutableMapping
from pathlib import Path
from typing import Any

import anyio
import jsonpatch
import orjson
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from schemadoc.config import Settings
from schemadoc.interfaces.app import build_app, create_service
from schemadoc.interfaces.http import feeds
from schemadoc.schema import load_schema
from schemadoc.service import DocumentService
from schemadoc.storage.files import FileDocumentStore
from schemadoc.storage.memory import MemoryDocumentStore

BOOK_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json"
API = "/api/v1"
UNKNOWN_DOC = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
CHAPTER = {"id": "ch-1", "title": "One", "sections": [{"title": "Start", "paragraphs": [{"text": "Hi."}]}]}
MERGE = {"Content-Type": "application/merge-patch+json"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def service(tmp_path: Path) -> DocumentService:
    return create_service(Settings(schema_path=BOOK_SCHEMA, storage_dir=tmp_path / "data"))


@pytest.fixture
def app(service: DocumentService) -> FastAPI:
    return build_app(service, Settings(schema_path=BOOK_SCHEMA), heartbeat_seconds=0.2)


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield client


@pytest.fixture
def doc_id(client: TestClient) -> str:
    return str(client.post(f"{API}/documents").json()["doc_id"])


def url(doc_id: str, tail: str = "") -> str:
    return f"{API}/documents/{doc_id}{tail}"


def error_of(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert (error["code"], error["category"]) == (code, str(status))
    assert set(error) == {"code", "category", "message", "details", "remediation", "request_id"}
    return dict(error)


def retitle(client: TestClient, doc_id: str, *titles: str) -> int:
    """Commit one title per argument; the version reached."""
    version = int(client.get(url(doc_id)).headers["etag"].strip('"'))
    for title in titles:
        response = client.put(url(doc_id), params={"path": "/title"}, json={"node_data": title, "version": version})
        assert response.status_code == 200, response.text
        version = response.json()["version"]
    return version


# -- history and time travel -----------------------------------------------------------------


def test_history_pages_through_the_journal_oldest_first(client: TestClient, doc_id: str) -> None:
    retitle(client, doc_id, "v2", "v3", "v4", "v5")
    first = client.get(url(doc_id, "/history"), params={"since_version": 1, "limit": 2})
    assert first.status_code == 200 and first.headers["etag"] == '"5"'
    body = first.json()
    assert [e["version"] for e in body["entries"]] == [2, 3]
    assert (body["has_more"], body["next_since_version"], body["current_version"]) == (True, 3, 5)
    assert body["entries"][0]["op"] == "update_node"
    assert body["entries"][0]["patch"] == [{"op": "replace", "path": "/title", "value": "v2"}]
    rest = client.get(url(doc_id, "/history"), params={"since_version": body["next_since_version"]}).json()
    assert [e["version"] for e in rest["entries"]] == [4, 5] and rest["has_more"] is False
    whole = client.get(url(doc_id, "/history")).json()
    assert whole["entries"][0]["op"] == "create" and whole["entries"][0]["patch"][0]["path"] == ""


@pytest.mark.parametrize(("params", "argument"), [
    ({"since_version": "-1"}, "since_version"), ({"limit": "0"}, "limit"),
    ({"limit": "1001"}, "limit"), ({"since_version": "two"}, "since_version"),
])
def test_history_arguments_out_of_range_are_invalid_requests(client: TestClient, doc_id: str,
                                                              params: dict[str, str], argument: str) -> None:
    error = error_of(client.get(url(doc_id, "/history"), params=params), 400, "invalid-request")
    assert error["details"]["argument"] == argument


def test_reading_at_a_past_version_answers_with_that_version_as_etag(client: TestClient, doc_id: str) -> None:
    client.post(url(doc_id, "/nodes"), params={"path": "/chapters/-"}, json={"node_data": CHAPTER, "version": 1})
    retitle(client, doc_id, "Now")
    client.request("DELETE", url(doc_id, "/nodes"), params={"path": "/chapters/0"}, json={"version": 3})
    past = client.get(url(doc_id), params={"path": "/chapters/0/title", "at_version": 2})
    assert past.status_code == 200 and past.headers["etag"] == '"2"'
    assert (past.json()["node_content"], past.json()["version"]) == ("One", 2)
    assert client.get(url(doc_id), params={"path": "/title", "at_version": 1}).json()["node_content"] == "Untitled"
    error_of(client.get(url(doc_id), params={"path": "/chapters/0"}), 404, "path-not-found")
    missing = error_of(client.get(url(doc_id), params={"path": "/chapters/0/nope/deeper", "at_version": 2}),
                       404, "path-not-found")
    assert missing["details"]["deepest_ancestor"] == "/chapters/0"
    error = error_of(client.get(url(doc_id), params={"at_version": 5}), 404, "version-not-found")
    assert error["details"]["latest_version"] == 4
    for nonsense in ("0", "latest"):
        error = error_of(client.get(url(doc_id), params={"at_version": nonsense}), 400, "invalid-request")
        assert error["details"]["argument"] == "at_version"


def test_a_whole_past_version_is_served_as_the_plain_document(client: TestClient, doc_id: str) -> None:
    first = client.get(url(doc_id)).json()["node_content"]
    retitle(client, doc_id, "Later")
    response = client.get(url(doc_id, "/versions/1"))
    assert response.status_code == 200 and response.headers["etag"] == '"1"'
    assert response.headers["content-type"] == "application/json"
    assert response.json() == first
    assert client.get(url(doc_id, "/versions/2")).json()["title"] == "Later"
    error_of(client.get(url(doc_id, "/versions/3")), 404, "version-not-found")
    error_of(client.get(url(doc_id, "/versions/one")), 400, "invalid-request")
    error_of(client.get(url(UNKNOWN_DOC, "/versions/1")), 404, "document-not-found")


def test_a_diff_turns_one_version_into_the_other_in_both_directions(client: TestClient, doc_id: str) -> None:
    client.post(url(doc_id, "/nodes"), params={"path": "/chapters/-"}, json={"node_data": CHAPTER, "version": 1})
    client.post(url(doc_id, "/patch"), json={"patch": [{"op": "add", "path": "/tags/-", "value": "a"},
                                                       {"op": "add", "path": "/tags/-", "value": "b"}], "version": 2})
    retitle(client, doc_id, "Four")
    versions = {n: client.get(url(doc_id, f"/versions/{n}")).json() for n in (1, 4)}
    forward = client.get(url(doc_id, "/diff"), params={"from_version": 1, "to_version": 4}).json()
    backward = client.get(url(doc_id, "/diff"), params={"from_version": 4, "to_version": 1}).json()
    assert (forward["from_version"], forward["to_version"], forward["doc_id"]) == (1, 4, doc_id)
    assert jsonpatch.apply_patch(versions[1], forward["patch"]) == versions[4]
    assert jsonpatch.apply_patch(versions[4], backward["patch"]) == versions[1]
    assert client.get(url(doc_id, "/diff"), params={"from_version": 3, "to_version": 3}).json()["patch"] == []
    error_of(client.get(url(doc_id, "/diff"), params={"from_version": 1, "to_version": 9}), 404, "version-not-found")
    for params in ({"from_version": 1}, {"from_version": 1, "to_version": 0}):
        error = error_of(client.get(url(doc_id, "/diff"), params=params), 400, "invalid-request")
        assert error["details"]["argument"] == "to_version"


# -- undo ------------------------------------------------------------------------------------


def test_revert_commits_a_new_version_equal_to_the_old_one(client: TestClient, doc_id: str) -> None:
    first = client.get(url(doc_id, "/versions/1")).json()
    client.post(url(doc_id, "/nodes"), params={"path": "/chapters/-"}, json={"node_data": CHAPTER, "version": 1})
    retitle(client, doc_id, "Changed")
    response = client.post(url(doc_id, "/revert"), json={"to_version": 1, "version": 3})
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["version"], body["to_version"], body["dry_run"]) == (4, 1, False)
    assert response.headers["etag"] == '"4"'
    assert jsonpatch.apply_patch(client.get(url(doc_id, "/versions/3")).json(), body["patch"]) == first
    assert client.get(url(doc_id)).json()["node_content"] == first
    history = client.get(url(doc_id, "/history"), params={"since_version": 3}).json()["entries"]
    assert history[0]["op"] == "revert" and history[0]["info"]["to_version"] == 1
    by_header = client.post(url(doc_id, "/revert"), json={"to_version": 3}, headers={"If-Match": '"4"'})
    assert by_header.json()["version"] == 5
    assert client.get(url(doc_id), params={"path": "/title"}).json()["node_content"] == "Changed"


def test_a_revert_dry_run_previews_and_bad_reverts_change_nothing(client: TestClient, doc_id: str) -> None:
    retitle(client, doc_id, "Two")
    for kwargs in ({"params": {"dry_run": "true"}, "json": {"to_version": 1, "version": 2}},
                   {"json": {"to_version": 1, "version": 2, "dry_run": True}}):
        preview = client.post(url(doc_id, "/revert"), **kwargs)
        body = preview.json()
        assert (body["dry_run"], body["version"], body["would_be_version"]) == (True, 2, 3)
        assert body["patch"] == [{"op": "replace", "path": "/title", "value": "Untitled"}]
        assert "etag" not in preview.headers
    error_of(client.post(url(doc_id, "/revert"), json={"to_version": 1, "version": 1}), 409, "version-conflict")
    error_of(client.post(url(doc_id, "/revert"), json={"to_version": 7, "version": 2}), 404, "version-not-found")
    for body, argument in (({"to_version": "1", "version": 2}, "to_version"), ({"version": 2}, "to_version"),
                           ({"to_version": 0, "version": 2}, "to_version"), ({"to_version": 1}, "version")):
        assert error_of(client.post(url(doc_id, "/revert"), json=body), 400,
                        "invalid-request")["details"]["argument"] == argument
    assert client.get(url(doc_id)).headers["etag"] == '"2"'


# -- deleting, restoring, purging ------------------------------------------------------------


def test_a_deleted_document_disappears_and_comes_back_with_its_history(client: TestClient, doc_id: str) -> None:
    retitle(client, doc_id, "Kept")
    deleted = client.request("DELETE", url(doc_id), json={"version": 2})
    assert deleted.status_code == 200, deleted.text
    body = deleted.json()
    assert (body["doc_id"], body["version"], body["deleted"], body["success"]) == (doc_id, 3, True, True)
    assert body["deleted_at"]
    for gone in (client.get(url(doc_id)), client.get(url(doc_id, "/history")),
                 client.get(url(doc_id, "/events"), params={"since": 0})):
        error = error_of(gone, 404, "document-not-found")
        assert error["details"]["deleted"] is True
    assert doc_id not in [d["doc_id"] for d in client.get(f"{API}/documents").json()["documents"]]
    error_of(client.delete(url(doc_id), headers={"If-Match": '"3"'}), 404, "document-not-found")

    restored = client.post(url(doc_id, "/undelete"))
    assert restored.status_code == 200 and restored.headers["etag"] == '"4"'
    assert restored.json() == {"success": True, "doc_id": doc_id, "version": 4, "deleted": False, "deleted_at": None}
    assert client.get(url(doc_id), params={"path": "/title"}).json()["node_content"] == "Kept"
    ops = [e["op"] for e in client.get(url(doc_id, "/history")).json()["entries"]]
    assert ops[-2:] == ["delete_document", "undelete_document"]
    error_of(client.post(url(doc_id, "/undelete")), 409, "conflict")


def test_only_a_deleted_document_can_be_purged_and_then_it_is_gone(client: TestClient, doc_id: str,
                                                                   tmp_path: Path) -> None:
    error_of(client.post(url(doc_id, "/purge")), 409, "conflict")
    assert client.delete(url(doc_id), headers={"If-Match": '"1"'}).json()["deleted"] is True
    purged = client.post(url(doc_id, "/purge"))
    assert purged.status_code == 200
    assert purged.json() == {"success": True, "doc_id": doc_id, "purged": True}
    assert not list((tmp_path / "data").glob(f"{doc_id}*"))
    error_of(client.post(url(doc_id, "/undelete")), 404, "document-not-found")
    error_of(client.post(url(doc_id, "/purge")), 404, "document-not-found")
    error_of(client.get(url(doc_id, "/history")), 404, "document-not-found")


def test_deleting_needs_the_current_version_and_has_no_dry_run(client: TestClient, doc_id: str) -> None:
    retitle(client, doc_id, "Two")
    assert error_of(client.delete(url(doc_id)), 400, "invalid-request")["details"]["argument"] == "version"
    error_of(client.request("DELETE", url(doc_id), json={"version": 1}), 409, "version-conflict")
    for kwargs in ({"params": {"dry_run": "true"}, "json": {"version": 2}}, {"json": {"version": 2, "dry_run": True}}):
        error = error_of(client.request("DELETE", url(doc_id), **kwargs), 400, "invalid-request")
        assert error["details"]["argument"] == "dry_run"
    error_of(client.post(url(doc_id, "/purge"), params={"dry_run": "true"}), 400, "invalid-request")
    assert client.get(url(doc_id)).headers["etag"] == '"2"'
    error_of(client.request("DELETE", url(UNKNOWN_DOC), json={"version": 1}), 404, "document-not-found")


# -- merge patch -----------------------------------------------------------------------------


def test_patch_applies_a_merge_patch_with_the_version_from_if_match(client: TestClient, doc_id: str) -> None:
    client.post(url(doc_id, "/nodes"), params={"path": "/metadata/isbn"}, json={"node_data": "9780000000001",
                                                                               "version": 1})
    response = client.patch(url(doc_id), params={"path": "/metadata"}, content=b'{"isbn": null, "status": "review"}',
                            headers={**MERGE, "If-Match": '"2"'})
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["version"], body["node_path"], body["dry_run"]) == (3, "/metadata", False)
    assert body["updated_node"] == {"language": "en", "status": "review", "edition": 1, "keywords": []}
    assert {"op": "remove", "path": "/metadata/isbn"} in body["patch"]
    assert response.headers["etag"] == '"3"'
    whole = client.patch(url(doc_id), content=b'{"title": "Merged", "tags": ["x"]}',
                         headers={**MERGE, "If-Match": '"3"'})
    assert whole.json()["node_path"] == "/" and whole.json()["updated_node"]["title"] == "Merged"
    history = client.get(url(doc_id, "/history"), params={"since_version": 2}).json()["entries"]
    assert [e["op"] for e in history] == ["merge_patch", "merge_patch"]


def test_a_merge_patch_that_does_not_fit_lists_every_problem_and_changes_nothing(client: TestClient,
                                                                                doc_id: str) -> None:
    response = client.patch(url(doc_id), params={"path": "/metadata"},
                            content=b'{"colour": "red", "edition": "second", "status": "lost"}',
                            headers={**MERGE, "If-Match": '"1"'})
    error = error_of(response, 422, "validation-failed")
    assert error["details"]["path"] == "/metadata"
    problems = error["details"]["violations"]
    assert len(problems) == 3
    assert {p["path"] for p in problems} == {"/metadata", "/metadata/edition", "/metadata/status"}
    assert client.get(url(doc_id)).headers["etag"] == '"1"'


def test_patch_needs_if_match_and_a_merge_patch_media_type(client: TestClient, doc_id: str) -> None:
    error = error_of(client.patch(url(doc_id), content=b'{"title": "x", "version": 1}', headers=MERGE),
                     400, "invalid-request")
    assert error["details"]["argument"] == "version" and "If-Match" in error["message"]
    json_patch = client.patch(url(doc_id), content=b'[{"op": "remove", "path": "/tags"}]',
                              headers={"Content-Type": "application/json-patch+json", "If-Match": '"1"'})
    assert error_of(json_patch, 400, "invalid-request")["details"]["argument"] == "Content-Type"
    error_of(client.patch(url(doc_id), content=b"", headers={**MERGE, "If-Match": '"1"'}), 400, "invalid-request")
    error_of(client.patch(url(doc_id), content=b"{nope", headers={**MERGE, "If-Match": '"1"'}), 400,
             "invalid-request")
    error_of(client.patch(url(doc_id), content=b'{"title": "x"}', headers={**MERGE, "If-Match": '"9"'}), 409,
             "version-conflict")
    plain_json = client.patch(url(doc_id), json={"title": "Plain"}, headers={"If-Match": '"1"'})
    assert plain_json.status_code == 200 and plain_json.json()["version"] == 2


def test_a_merge_patch_can_be_previewed_and_posted_as_json_with_its_version(client: TestClient,
                                                                           doc_id: str) -> None:
    preview = client.patch(url(doc_id), params={"path": "/metadata", "dry_run": "true"},
                           content=b'{"status": "published"}', headers={**MERGE, "If-Match": '"1"'})
    assert (preview.json()["dry_run"], preview.json()["would_be_version"]) == (True, 2)
    assert "etag" not in preview.headers
    posted = client.post(url(doc_id, "/merge"), params={"path": "/metadata"},
                         json={"merge_patch": {"status": "published"}, "version": 1})
    assert posted.status_code == 200 and posted.json()["version"] == 2
    assert posted.json()["updated_node"]["status"] == "published"
    by_header = client.post(url(doc_id, "/merge"), json={"merge_patch": {"title": "T"}}, headers={"If-Match": '"2"'})
    assert by_header.json()["version"] == 3
    error = error_of(client.post(url(doc_id, "/merge"), json={"version": 3}), 400, "invalid-request")
    assert error["details"]["argument"] == "merge_patch"
    error_of(client.post(url(doc_id, "/merge"), params={"path": "/nope"}, json={"merge_patch": {}, "version": 3}),
             404, "path-not-found")


# -- the change feed -------------------------------------------------------------------------


def test_the_change_feed_pages_in_commit_order_without_skipping_or_repeating(client: TestClient) -> None:
    a = client.post(f"{API}/documents").json()["doc_id"]
    b = client.post(f"{API}/documents").json()["doc_id"]
    retitle(client, a, "a2")
    retitle(client, b, "b2", "b3")
    client.delete(url(a), headers={"If-Match": '"2"'})
    expected = [(a, 1, "create"), (b, 1, "create"), (a, 2, "update_node"), (b, 2, "update_node"),
                (b, 3, "update_node"), (a, 3, "delete_document")]

    seen: list[tuple[str, int, str]] = []
    cursor = 0
    while True:
        page = client.get(f"{API}/changes", params={"since": cursor, "limit": 2}).json()
        if not page["changes"]:
            assert page["next_cursor"] == cursor
            break
        seen += [(c["doc_id"], c["version"], c["op"]) for c in page["changes"]]
        assert page["next_cursor"] == page["changes"][-1]["cursor"] > cursor
        cursor = page["next_cursor"]
        if len(seen) == 4:  # commits landing between pages come after the cursor, once
            retitle(client, b, "b4")
            expected.append((b, 4, "update_node"))
    assert seen == expected
    error_of(client.get(f"{API}/changes", params={"since": -1}), 400, "invalid-request")
    error_of(client.get(f"{API}/changes", params={"limit": 0}), 400, "invalid-request")


# -- the event stream's feed, driven directly ------------------------------------------------


async def take(events: AsyncIterator[feeds.FeedEvent], count: int, *, heartbeats: bool = False,
               timeout: float = 5.0) -> list[feeds.FeedEvent]:
    """The next ``count`` items (heartbeats skipped unless asked for)."""
    taken: list[feeds.FeedEvent] = []
    with anyio.fail_after(timeout):
        while len(taken) < count:
            item = await events.__anext__()
            if heartbeats or item.kind != "heartbeat":
                taken.append(item)
    return taken


def versions_of(items: list[feeds.FeedEvent]) -> list[int | None]:
    return [item.version for item in items]


@pytest.fixture
def memory_service() -> DocumentService:
    service = DocumentService(load_schema(BOOK_SCHEMA), MemoryDocumentStore())
    service.open()
    return service


async def write(service: DocumentService, doc_id: str, *titles: str) -> None:
    """Commit titles from a worker thread, as a REST route would."""
    def commit() -> None:
        for title in titles:
            service.update_node(doc_id, "/title", title, service.version_of(doc_id))
    await anyio.to_thread.run_sync(commit)


@pytest.mark.anyio
async def test_a_feed_replays_the_journal_after_since_then_follows_new_commits(
        memory_service: DocumentService) -> None:
    service = memory_service
    doc_id, *_ = service.create_document()
    await write(service, doc_id, "v2", "v3")
    async with contextlib.aclosing(feeds.document_events(service, doc_id, 1)) as events:
        replayed = await take(events, 2)
        assert versions_of(replayed) == [2, 3]
        assert replayed[0].kind == "version" and replayed[0].body.op == "update_node"
        assert replayed[0].body.patch == [{"op": "replace", "path": "/title", "value": "v2"}]
        await write(service, doc_id, "v4", "v5")
        assert versions_of(await take(events, 2)) == [4, 5]


@pytest.mark.anyio
async def test_a_commit_between_subscribing_and_reading_the_journal_is_sent_once(
        memory_service: DocumentService, monkeypatch: pytest.MonkeyPatch) -> None:
    service = memory_service
    doc_id, *_ = service.create_document()
    read_history = service.history
    raced: list[int] = []

    def history_after_a_racing_commit(*args: Any, **kwargs: Any) -> Any:
        if not raced:  # this commit is both queued as an event and in the journal page
            raced.append(service.update_node(doc_id, "/title", "raced", service.version_of(doc_id)).version)
        return read_history(*args, **kwargs)

    monkeypatch.setattr(service, "history", history_after_a_racing_commit)
    async with contextlib.aclosing(feeds.document_events(service, doc_id, 0, heartbeat_seconds=0.05)) as events:
        assert versions_of(await take(events, 2)) == [1, 2]
        await write(service, doc_id, "after")
        following = await take(events, 3, heartbeats=True)
        assert versions_of(following)[0] == 3  # not 2 again
        assert [item.kind for item in following[1:]] == ["heartbeat", "heartbeat"]
    assert raced == [2]


@pytest.mark.anyio
async def test_a_feed_ignores_other_documents_and_sends_heartbeats_when_idle(
        memory_service: DocumentService) -> None:
    service = memory_service
    doc_id, *_ = service.create_document()
    other, *_ = service.create_document()
    async with contextlib.aclosing(feeds.document_events(service, doc_id, 1, heartbeat_seconds=0.05)) as events:
        await write(service, other, "elsewhere")
        assert (await take(events, 1, heartbeats=True))[0] == feeds.HEARTBEAT
        await write(service, doc_id, "here")
        assert versions_of(await take(events, 1)) == [2]


@pytest.mark.anyio
async def test_closing_a_feed_unsubscribes_it(memory_service: DocumentService,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    service = memory_service
    doc_id, *_ = service.create_document()
    subscribed: list[object] = []
    unsubscribed: list[object] = []
    real_subscribe = service.subscribe

    def spying_subscribe(listener: Callable[..., None]) -> Callable[[], None]:
        subscribed.append(listener)
        undo = real_subscribe(listener)

        def unsubscribe() -> None:
            unsubscribed.append(listener)
            undo()
        return unsubscribe

    monkeypatch.setattr(service, "subscribe", spying_subscribe)
    events = feeds.document_events(service, doc_id, 0)
    await take(events, 1)
    assert len(subscribed) == 1 and not unsubscribed
    await events.aclose()
    assert unsubscribed == subscribed
    await write(service, doc_id, "nobody listens")  # and nothing breaks


@pytest.mark.anyio
async def test_a_deleted_document_keeps_its_feed_and_a_purge_ends_it(memory_service: DocumentService) -> None:
    service = memory_service
    doc_id, *_ = service.create_document()
    events = feeds.document_events(service, doc_id, 0)
    assert versions_of(await take(events, 1)) == [1]  # subscribed from here on
    await anyio.to_thread.run_sync(service.delete_document, doc_id, 1)
    await anyio.to_thread.run_sync(service.undelete_document, doc_id)
    await anyio.to_thread.run_sync(service.delete_document, doc_id, 3)
    await anyio.to_thread.run_sync(service.purge_document, doc_id)
    items = await take(events, 4)
    assert [(i.kind, i.version) for i in items] == [("version", 2), ("version", 3), ("version", 4), ("purged", None)]
    assert [i.body.op for i in items[:3]] == ["delete_document", "undelete_document", "delete_document"]
    assert items[3].body.purged is True
    with pytest.raises(StopAsyncIteration):
        await events.__anext__()


@pytest.mark.anyio
async def test_a_feed_of_a_document_deleted_before_it_started_still_delivers_the_deletion(
        memory_service: DocumentService) -> None:
    service = memory_service
    doc_id, *_ = service.create_document()
    service.delete_document(doc_id, 1)
    events = feeds.document_events(service, doc_id, 0)
    items = await take(events, 2)
    assert [(i.kind, i.version) for i in items] == [("version", 1), ("version", 2)]
    assert items[1].body.op == "delete_document"


@pytest.mark.anyio
async def test_commits_that_land_while_a_feed_catches_up_come_from_the_journal_not_its_queue(
        memory_service: DocumentService) -> None:
    service = memory_service
    doc_id, *_ = service.create_document()
    await write(service, doc_id, "v2", "v3")
    # a buffer smaller than two entries: queueing what lands during the catch-up would cut the reader off
    async with contextlib.aclosing(feeds.document_events(service, doc_id, 1, buffer_bytes=300)) as events:
        assert versions_of(await take(events, 1)) == [2]
        await write(service, doc_id, *(f"v{n}" for n in range(4, 9)))  # while the feed is still catching up
        await anyio.sleep(0.05)
        assert versions_of(await take(events, 6)) == [3, 4, 5, 6, 7, 8]
        await write(service, doc_id, "v9")
        assert versions_of(await take(events, 1)) == [9]


@pytest.mark.anyio
async def test_commits_by_another_process_fill_the_gap_from_the_journal(tmp_path: Path) -> None:
    schema = load_schema(BOOK_SCHEMA)
    here = DocumentService(schema, FileDocumentStore(tmp_path))
    here.open()
    elsewhere = DocumentService(schema, FileDocumentStore(tmp_path))  # shares the directory, not the listeners
    elsewhere.open()
    doc_id, *_ = here.create_document()
    async with contextlib.aclosing(feeds.document_events(here, doc_id, 1)) as events:
        await write(elsewhere, doc_id, "v2", "v3")
        await write(here, doc_id, "v4")
        items = await take(events, 3)
        assert versions_of(items) == [2, 3, 4]
        assert [i.body.patch[0]["value"] for i in items] == ["v2", "v3", "v4"]


def test_the_start_version_prefers_last_event_id_and_checks_its_bounds(memory_service: DocumentService) -> None:
    service = memory_service
    doc_id, *_ = service.create_document()
    service.update_node(doc_id, "/title", "v2", 1)
    assert feeds.start_version(service, doc_id, None, None) == 2
    assert feeds.start_version(service, doc_id, 0, None) == 0
    assert feeds.start_version(service, doc_id, 0, "1") == 1
    assert feeds.start_version(service, doc_id, 1, " ") == 1


# -- the event stream over HTTP (the ASGI application, called directly) ----------------------


class Stream:
    """One GET on the ASGI app, read until ``enough`` says so; then the client disconnects."""

    def __init__(self, app: FastAPI, path: str, query: str = "", headers: dict[str, str] | None = None) -> None:
        self.app = app
        self.path = path
        self.query = query
        self.headers = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
        self.status = 0
        self.response_headers: dict[str, str] = {}
        self.text = ""
        self.gone = anyio.Event()
        self.enough: Callable[[str], bool] = lambda text: True

    async def run(self, enough: Callable[[str], bool], timeout: float = 5.0) -> str:
        self.enough = enough
        scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.4"}, "http_version": "1.1",
                 "method": "GET", "scheme": "http", "path": self.path, "raw_path": self.path.encode(),
                 "query_string": self.query.encode(), "root_path": "",
                 "headers": [(b"host", b"127.0.0.1"), *self.headers],
                 "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 80)}
        requested = False

        async def receive() -> dict[str, Any]:
            nonlocal requested
            if not requested:
                requested = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await self.gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                self.status = message["status"]
                self.response_headers = {k.decode(): v.decode() for k, v in message["headers"]}
            elif message["type"] == "http.response.body":
                self.text += message.get("body", b"").decode()
                if self.enough(self.text):
                    self.gone.set()

        with anyio.fail_after(timeout):
            await self.app(scope, receive, send)
        return self.text


def sse_events(text: str) -> list[dict[str, str]]:
    """The events of an SSE text (comments dropped)."""
    events = []
    for block in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            if line and not line.startswith(":"):
                name, _, value = line.partition(": ")
                fields[name] = value
        if fields:
            events.append(fields)
    return events


def has_versions(count: int) -> Callable[[str], bool]:
    return lambda text: len([e for e in sse_events(text) if e.get("event") == "version"]) >= count


@pytest.mark.anyio
async def test_the_stream_sends_each_version_as_an_sse_event_with_its_id(app: FastAPI,
                                                                        service: DocumentService) -> None:
    doc_id, *_ = service.create_document()
    service.update_node(doc_id, "/title", "v2", 1)
    stream = Stream(app, url(doc_id, "/events"), "since=0")
    text = await stream.run(has_versions(2))
    assert stream.status == 200
    assert stream.response_headers["content-type"].startswith("text/event-stream")
    assert stream.response_headers["cache-control"] == "no-store"
    assert text.startswith("id: 1\nevent: version\ndata: {")
    events = sse_events(text)
    assert [(e["id"], e["event"]) for e in events] == [("1", "version"), ("2", "version")]
    second = orjson.loads(events[1]["data"])
    assert (second["version"], second["op"], second["patch"]) == (
        2, "update_node", [{"op": "replace", "path": "/title", "value": "v2"}])
    assert set(second) == {"version", "op", "patch", "at", "actor", "info"}
    assert second["actor"] is None  # written by the service directly: no door, no actor


@pytest.mark.anyio
async def test_last_event_id_wins_over_since_and_no_since_means_from_now_on(app: FastAPI,
                                                                            service: DocumentService) -> None:
    doc_id, *_ = service.create_document()
    for version in range(1, 4):
        service.update_node(doc_id, "/title", f"v{version + 1}", version)
    resumed = await Stream(app, url(doc_id, "/events"), "since=0", {"Last-Event-ID": "2"}).run(has_versions(2))
    assert [e["id"] for e in sse_events(resumed)] == ["3", "4"]

    live = Stream(app, url(doc_id, "/events"))
    async with anyio.create_task_group() as group:
        group.start_soon(live.run, has_versions(1))
        with anyio.fail_after(5):
            while not live.status:  # the response started: "now" (version 4) has been fixed
                await anyio.sleep(0.01)
        await write(service, doc_id, "v5")
    assert [e["id"] for e in sse_events(live.text)] == ["5"]


@pytest.mark.anyio
async def test_an_idle_stream_sends_keepalive_comments(app: FastAPI, service: DocumentService) -> None:
    doc_id, *_ = service.create_document()
    text = await Stream(app, url(doc_id, "/events")).run(lambda text: ": keepalive\n\n" in text)
    assert sse_events(text) == []


@pytest.mark.anyio
async def test_a_client_that_disconnects_is_unsubscribed(app: FastAPI, service: DocumentService,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    doc_id, *_ = service.create_document()
    listening: list[bool] = []
    real_subscribe = service.subscribe

    def spying_subscribe(listener: Callable[..., None]) -> Callable[[], None]:
        listening.append(True)
        undo = real_subscribe(listener)

        def unsubscribe() -> None:
            listening.append(False)
            undo()
        return unsubscribe

    monkeypatch.setattr(service, "subscribe", spying_subscribe)
    await Stream(app, url(doc_id, "/events"), "since=0").run(has_versions(1))
    assert listening == [True, False]


@pytest.mark.anyio
async def test_a_purge_ends_the_stream_with_a_purged_event(app: FastAPI, service: DocumentService) -> None:
    doc_id, *_ = service.create_document()
    stream = Stream(app, url(doc_id, "/events"), "since=0")
    ended = threading.Event()

    async def follow() -> None:
        await stream.run(lambda text: False)  # reads until the server ends the stream
        ended.set()

    async with anyio.create_task_group() as group:
        group.start_soon(follow)
        with anyio.fail_after(5):
            while not has_versions(1)(stream.text):  # the stream follows the document from here on
                await anyio.sleep(0.01)
        await anyio.to_thread.run_sync(service.delete_document, doc_id, 1)
        await anyio.to_thread.run_sync(service.purge_document, doc_id)
    assert ended.is_set()
    events = sse_events(stream.text)
    assert [e["event"] for e in events] == ["version", "version", "purged"]
    assert orjson.loads(events[1]["data"])["op"] == "delete_document"
    assert "id" not in events[2]
    assert orjson.loads(events[2]["data"]) == {"success": True, "doc_id": doc_id, "purged": True}


@pytest.mark.parametrize(("query", "headers", "status", "code", "argument"), [
    ("since=0", {"Last-Event-ID": "five"}, 400, "invalid-request", "Last-Event-ID"),
    ("since=-1", {}, 400, "invalid-request", "since"),
    ("since=later", {}, 400, "invalid-request", "since"),
    ("since=9", {}, 404, "version-not-found", "since"),
    ("", {"Last-Event-ID": "9"}, 404, "version-not-found", "Last-Event-ID"),
])
def test_a_stream_that_cannot_start_is_an_ordinary_error_response(client: TestClient, doc_id: str, query: str,
                                                                   headers: dict[str, str], status: int, code: str,
                                                                   argument: str) -> None:
    response = client.get(url(doc_id, f"/events?{query}"), headers=headers)
    assert response.headers["content-type"] == "application/json"
    assert error_of(response, status, code)["details"]["argument"] == argument


def test_a_stream_of_an_unknown_document_is_document_not_found(client: TestClient) -> None:
    error_of(client.get(url(UNKNOWN_DOC, "/events")), 404, "document-not-found")
    error_of(client.get(url("not-a-ulid", "/events")), 400, "invalid-doc-id")


# -- the application -------------------------------------------------------------------------


def test_openapi_documents_every_history_endpoint_with_its_bodies_and_errors(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    doc = f"{API}/documents/{{doc_id}}"
    expected = {
        (doc, "get"): "document_read_node", (doc, "delete"): "document_delete", (doc, "patch"): "document_merge_patch",
        (f"{doc}/history", "get"): "document_history", (f"{doc}/versions/{{version}}", "get"): "document_read_version",
        (f"{doc}/diff", "get"): "document_diff", (f"{doc}/revert", "post"): "document_revert",
        (f"{doc}/undelete", "post"): "document_undelete", (f"{doc}/purge", "post"): "document_purge",
        (f"{doc}/merge", "post"): "document_merge_patch_post", (f"{doc}/events", "get"): "document_events",
        (f"{API}/changes", "get"): "document_changes",
    }
    for (path, method), operation_id in expected.items():
        operation = paths[path][method]
        assert operation["operationId"] == operation_id
        assert operation["summary"]
        errors = [status for status in operation["responses"] if status.startswith("4")]
        assert errors, path
        for status in errors:
            assert operation["responses"][status]["content"]["application/json"]["schema"] == {
                "$ref": "#/components/schemas/ErrorBody"}
    assert "at_version" in {p["name"] for p in paths[doc]["get"]["parameters"]}
    assert list(paths[doc]["patch"]["requestBody"]["content"]) == ["application/merge-patch+json"]
    assert paths[f"{doc}/revert"]["post"]["requestBody"]["content"]["application/json"]["schema"]["required"] == [
        "to_version"]
    events = paths[f"{doc}/events"]["get"]
    assert list(events["responses"]["200"]["content"]) == ["text/event-stream"]
    assert {p["name"] for p in events["parameters"]} >= {"since", "Last-Event-ID"}


def test_cors_preflights_admit_patch(tmp_path: Path) -> None:
    settings = Settings(schema_path=BOOK_SCHEMA, storage_dir=tmp_path / "cors", cors_origins=("http://app.example",))
    with TestClient(build_app(create_service(settings), settings), base_url="http://127.0.0.1") as client:
        preflight = client.options(f"{API}/documents/x", headers={
            "Origin": "http://app.example", "Access-Control-Request-Method": "PATCH",
            "Access-Control-Request-Headers": "if-match, content-type, last-event-id"})
    assert preflight.status_code == 200
    assert "PATCH" in preflight.headers["access-control-allow-methods"]
