"""The REST lane answers its requests exactly as FastAPI does: same status, headers and bytes.

Two servers start from copies of one storage directory, one with the lane and one without it,
and every request below goes to both; the lane's answer must equal FastAPI's, request by
request (the writes keep both documents in step).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from schemadoc.config import Settings
from schemadoc.interfaces.app import build_app, create_service
from schemadoc.interfaces.rest.lane import RestLane
from schemadoc.interfaces.rest.routes import BINDINGS

BOOK_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json"
API = "/api/v1"
CHAPTER = {"id": "ch-1", "title": "One", "sections": [{"title": "Start", "paragraphs": [{"text": "Hi."}]}]}
UNKNOWN_DOC = "01ARZ3NDEKTSV4RRFFQ69G5FAV"


def _app(storage: Path, *, lane: bool) -> FastAPI:
    settings = Settings(schema_path=BOOK_SCHEMA, storage_dir=storage)
    app = build_app(create_service(settings), settings)
    if not lane:
        app.user_middleware = [m for m in app.user_middleware if m.cls is not RestLane]
    return app


def _lane_of(app: FastAPI) -> RestLane:
    layer: Any = app.build_middleware_stack()
    while not isinstance(layer, RestLane):
        layer = layer.app
    return layer


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[TestClient, TestClient, str]]:
    """(with the lane, without it, a doc_id both servers hold at version 1)."""
    first = tmp_path / "first"
    with TestClient(_app(first, lane=True), base_url="http://127.0.0.1") as client:
        doc_id = str(client.post(f"{API}/documents").json()["doc_id"])
    shutil.copytree(first, tmp_path / "second")
    with (TestClient(_app(first, lane=True), base_url="http://127.0.0.1") as laned,
          TestClient(_app(tmp_path / "second", lane=False), base_url="http://127.0.0.1") as plain):
        yield laned, plain, doc_id


def _requests(doc: str) -> list[tuple[str, str, Any, dict[str, str]]]:
    """(method, URL under the API, body (bytes, JSON value or None), headers), in order."""
    docs = f"/documents/{doc}"
    return [
        ("GET", f"{docs}?path=/title", None, {}),
        ("GET", docs, None, {}),
        ("GET", f"{docs}?path=", None, {}),
        ("GET", f"{docs}?path=/nope", None, {}),
        ("GET", f"{docs}?path=/chapters/-1", None, {}),
        ("GET", f"{docs}?path=/title&path=/metadata", None, {}),
        ("GET", f"{docs}?path=/title&extra=1", None, {}),
        ("GET", f"{docs}?at_version=1", None, {}),
        ("GET", f"{docs}?at_version=0", None, {}),
        ("GET", "/documents/not-a-doc-id?path=/title", None, {}),
        ("GET", f"/documents/{doc.lower()}?path=/title", None, {}),
        ("GET", f"/documents/{UNKNOWN_DOC}?path=/title", None, {}),
        ("HEAD", f"{docs}?path=/title", None, {}),
        ("PUT", f"{docs}?path=/title", {"node_data": "A", "version": 1}, {}),
        ("PUT", f"{docs}?path=/title", {"node_data": "A", "version": 1}, {}),
        ("PUT", f"{docs}?path=/title&dry_run=true", {"node_data": "B", "version": 2}, {}),
        ("PUT", f"{docs}?path=/title&dry_run=1", {"node_data": "B", "version": 2}, {}),
        ("PUT", f"{docs}?path=/title&dry_run=maybe", {"node_data": "B", "version": 2}, {}),
        ("PUT", docs, {"node_data": "B", "version": 2}, {}),
        ("PUT", f"{docs}?path=/title", b"not json", {}),
        ("PUT", f"{docs}?path=/title", b"", {}),
        ("PUT", f"{docs}?path=/title", {"node_data": 5, "version": 2}, {}),
        ("PUT", f"{docs}?path=/title", {"node_data": "C"}, {"If-Match": '"2"'}),
        ("PUT", f"{docs}?path=/title", {"node_data": "C"}, {"If-Match": "yesterday"}),
        ("PUT", f"{docs}?path=/title", {"node_data": "C"}, {}),
        ("PUT", f"/documents/{UNKNOWN_DOC}?path=/title", {"node_data": "C", "version": 1}, {}),
        ("POST", f"{docs}/nodes?path=/chapters/-", {"node_data": CHAPTER, "version": 3}, {}),
        ("POST", f"{docs}/nodes?path=/tags/-&dry_run=false", {"node_data": "x", "version": 4}, {}),
        ("POST", f"{docs}/nodes", {"node_data": "x", "version": 5}, {}),
        ("DELETE", f"{docs}/nodes?path=/tags/0", {"version": 5}, {}),
        ("DELETE", f"{docs}/nodes?path=/tags/0", None, {}),
        ("DELETE", f"{docs}/nodes?path=/", {"version": 6}, {}),
        ("POST", f"{docs}/patch", [{"op": "replace", "path": "/title", "value": "P"}], {"If-Match": '"6"'}),
        ("POST", f"{docs}/patch", {"patch": [{"op": "replace", "path": "/title", "value": "Q"}], "version": 7,
                                   "dry_run": True}, {}),
        ("POST", f"{docs}/patch?dry_run=false",
         {"patch": [{"op": "test", "path": "/title", "value": "wrong"}], "version": 7}, {}),
        ("POST", f"{docs}/patch", {"patch": "nope", "version": 7}, {}),
        ("PATCH", f"{docs}?path=/metadata", {"status": "review"}, {"If-Match": '"8"'}),
        ("PATCH", f"{docs}?path=/metadata", {"status": "review"}, {}),
        ("POST", f"{docs}/merge", {"merge_patch": {"status": "draft"}, "version": 9, "dry_run": True}, {}),
        ("POST", f"{docs}/move", {"from_path": "/chapters/0", "to_path": "/chapters/-", "version": 9}, {}),
        ("POST", f"{docs}/revert", {"to_version": 1, "version": 10, "dry_run": True}, {}),
        ("DELETE", docs, {"version": 10, "dry_run": True}, {}),
        ("GET", f"{docs}/history?limit=2&since_version=x", None, {}),
        ("GET", f"{docs}/diff?from_version=1&to_version=3", None, {}),
        ("GET", f"{docs}/outline?depth=1", None, {}),
        ("GET", f"{docs}/render?path=/metadata", None, {}),
        ("GET", "/documents?limit=5000", None, {}),
        ("GET", "/schema/node?path=/title", None, {}),
        ("GET", "/search?query=P&doc_ids=" + doc, None, {}),
        ("GET", f"{docs}?path=/title", None, {}),
    ]


def test_the_lane_answers_every_request_exactly_as_fastapi_does(pair: tuple[TestClient, TestClient, str]) -> None:
    laned, plain, doc = pair
    for number, (method, url, body, headers) in enumerate(_requests(doc)):
        content = body if isinstance(body, bytes) or body is None else orjson.dumps(body)
        headers = {**headers, "X-Request-ID": f"lane-{number}"}  # one id for both: in the header and error bodies
        sent = {"Content-Type": "application/json", **headers} if content is not None else headers
        answers = [client.request(method, API + url, content=content, headers=sent) for client in (laned, plain)]
        assert answers[0].status_code == answers[1].status_code, (method, url, answers[0].text, answers[1].text)
        assert answers[0].content == answers[1].content, (method, url)
        assert answers[0].headers.items() == answers[1].headers.items(), (method, url)


def test_the_lane_takes_every_route_of_the_catalogue(tmp_path: Path) -> None:
    lane = _lane_of(_app(tmp_path, lane=True))
    taken = [binding for routes in lane.routes.values() for _pattern, binding in routes]
    assert sorted(binding.operation_id for binding in taken) == sorted(binding.operation_id for binding in BINDINGS)
    assert len(taken) == 25


# -- FastAPI's own OpenTelemetry: off where nothing records it ------------------------------------------


class _SdkTracerProvider:
    """Stands for an SDK's provider: a class outside the OpenTelemetry API's placeholders."""


def test_fastapi_telemetry_is_off_when_no_provider_is_set(tmp_path: Path) -> None:
    from opentelemetry import trace

    from schemadoc.interfaces.http.guards import telemetry

    assert type(trace.get_tracer_provider()).__module__.startswith("opentelemetry.")  # nothing set in tests
    assert telemetry() == {"tracing": False, "metrics": False, "logs": False}
    app = _app(tmp_path, lane=True)
    assert app._native_telemetry.enabled() is False


def test_fastapi_telemetry_stays_on_when_a_provider_is_set_or_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry import trace

    from schemadoc.interfaces.http.guards import telemetry

    monkeypatch.setenv("FASTAPI_OTEL_AUTO_CONFIGURE", "true")
    assert telemetry() == {}
    monkeypatch.delenv("FASTAPI_OTEL_AUTO_CONFIGURE")
    monkeypatch.setattr(trace, "get_tracer_provider", _SdkTracerProvider)
    assert telemetry() == {}
