"""One REST router per process, one state per application: two applications never see each other's documents.

The endpoints are built once (``rest_router``) and take their application's ``RestState``;
requests answered by FastAPI and by the lane (``rest_lane``) must both reach the application's
own service.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient

from schemadoc.config import Settings
from schemadoc.interfaces.app import API_PREFIX, build_app, create_service
from schemadoc.interfaces.rest.lane import RestLane
from schemadoc.interfaces.rest.routes import REST_STATE, rest_router

BOOK_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json"
API = "/api/v1"


def _app(storage: Path, **limits: Any) -> FastAPI:
    settings = Settings(schema_path=BOOK_SCHEMA, storage_dir=storage, **limits)
    return build_app(create_service(settings), settings)


def _lane_of(app: FastAPI) -> RestLane:
    layer: Any = app.build_middleware_stack()
    while not isinstance(layer, RestLane):
        layer = layer.app
    return layer


def test_two_applications_share_the_router_and_nothing_else(tmp_path: Path) -> None:
    first_app, second_app = _app(tmp_path / "first"), _app(tmp_path / "second", max_json_depth=3)
    first_state, second_state = getattr(first_app.state, REST_STATE), getattr(second_app.state, REST_STATE)
    assert rest_router(API_PREFIX) is rest_router(API_PREFIX)
    for app in (first_app, second_app):  # the very routes, not copies FastAPI would prepare again per application
        shared = {id(route) for route in rest_router(API_PREFIX).routes}
        assert [id(route) for route in app.router.routes if id(route) in shared] == \
            [id(route) for route in rest_router(API_PREFIX).routes]
    assert first_state is not second_state and first_state.service is not second_state.service
    assert first_state.slots is not second_state.slots
    assert _lane_of(first_app).state is first_state and _lane_of(second_app).state is second_state

    with (TestClient(first_app, base_url="http://127.0.0.1") as first,
          TestClient(second_app, base_url="http://127.0.0.1") as second):
        created = first.post(f"{API}/documents")
        assert created.status_code == 201
        doc = f"{API}/documents/{created.json()['doc_id']}"
        # the lane (a leaf read, a write) and FastAPI (history, list) on the first application find it
        assert first.get(doc, params={"path": "/title"}).status_code == 200
        updated = first.put(doc, params={"path": "/title"}, json={"node_data": "Mine", "version": 1})
        assert updated.status_code == 200 and updated.json()["version"] == 2
        assert first.get(f"{doc}/history").json()["current_version"] == 2
        assert first.get(f"{API}/documents").json()["total_documents"] == 1
        # the second application's service does not hold it, through either path
        assert second.get(doc, params={"path": "/title"}).json()["error"]["code"] == "document-not-found"
        assert second.get(f"{doc}/history").json()["error"]["code"] == "document-not-found"
        assert second.get(f"{API}/documents").json()["total_documents"] == 0
        # each application's limits are its own: 5 levels of body are too deep for the second only
        deep = {"node_data": [[[["x"]]]], "version": 2}
        assert first.put(doc, params={"path": "/title"}, json=deep).json()["error"]["code"] == "validation-failed"
        other = second.post(f"{API}/documents").json()["doc_id"]
        refused = second.put(f"{API}/documents/{other}", params={"path": "/title"},
                             json={"node_data": [[[["x"]]]], "version": 1})
        assert refused.json()["error"]["code"] == "request-too-deep"
