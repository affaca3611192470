"""``GET /`` and ``GET /api/v1`` say what the server is and link to everything, each link answering."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import schemadoc
from schemadoc.config import Settings
from schemadoc.examples import example_path
from schemadoc.interfaces.app import build_app, create_service


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    settings = Settings(schema_path=example_path("recipe"), storage_dir=tmp_path_factory.mktemp("data"))
    service = create_service(settings)
    with TestClient(build_app(service, settings), base_url="http://127.0.0.1") as client:
        yield client
    service.close()


@pytest.mark.parametrize("url", ["/", "/api/v1", "/api/v1/"])
def test_the_index_links_to_docs_health_schema_and_the_page(client: TestClient, url: str) -> None:
    answer = client.get(url)
    assert answer.status_code == 200
    body = answer.json()
    assert body["name"] == "schemadoc" and body["version"] == schemadoc.__version__
    assert body["schema_uri"].endswith("recipe.schema.json")
    links = body["links"]
    assert {"docs", "redoc", "openapi", "health", "schema", "documents", "errors", "mcp", "ui", "metrics",
            "status"} <= set(links)
    for name in ("docs", "redoc", "openapi", "health", "schema", "documents", "errors", "changes", "metrics", "status"):
        assert client.get(links[name]).status_code == 200, name


def test_the_index_is_not_an_operation_and_refuses_other_methods(client: TestClient, tmp_path: Path) -> None:
    assert "/" not in client.get("/openapi.json").json()["paths"]
    refused = client.post("/")
    assert refused.status_code == 405
    assert refused.json()["error"]["code"] == "method-not-allowed"


def test_the_links_follow_the_root_path(tmp_path: Path) -> None:
    settings = Settings(schema_path=example_path("book"), storage_dir=tmp_path)
    service = create_service(settings)
    with TestClient(build_app(service, settings), root_path="/docs-server", base_url="http://127.0.0.1") as client:
        links = client.get("/").json()["links"]
    service.close()
    assert links["docs"] == "/docs-server/docs" and links["schema"] == "/docs-server/api/v1/schema"


def test_without_metrics_the_index_names_neither_metrics_nor_the_status_view(tmp_path: Path) -> None:
    settings = Settings(schema_path=example_path("book"), storage_dir=tmp_path, metrics=False)
    service = create_service(settings)
    with TestClient(build_app(service, settings), base_url="http://127.0.0.1") as client:
        links = client.get("/").json()["links"]
        assert client.get("/metrics").status_code == 404
    service.close()
    assert "metrics" not in links and "status" not in links and "ui" in links
