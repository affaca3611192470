"""The rankings by meaning at both doors, in process: without the semantic extra (or with ``semantic_search``
off) a semantic or hybrid search is refused with ``semantic-search-unavailable``, which says how to install
it, and the default ranking is full text; with it, hybrid is the default. tests/e2e/test_semantic_search_server.py
ranks by meaning on a real server."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient
from mcp import Client

from schemadoc.config import Settings
from schemadoc.interfaces.app import build_app, create_service
from schemadoc.interfaces.mcp_door.server import build_mcp_server
from schemadoc.search import semantic
from schemadoc.service import DocumentService

BOOK_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json"
CONTENT = {"title": "The coast", "metadata": {"language": "en", "status": "draft", "edition": 1}, "chapters": [
    {"id": "ch-1", "title": "Harbour life", "sections": [{"title": "Evenings", "paragraphs": [
        {"text": "Every evening the keeper climbed the stairs and trimmed the wick of the lamp."}]}]}]}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def without_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(semantic, "installed", lambda: False)


def serve(tmp_path: Path, **overrides: Any) -> Iterator[tuple[DocumentService, TestClient]]:
    settings = Settings(schema_path=BOOK_SCHEMA, storage_dir=tmp_path / "data", **overrides)
    service = create_service(settings)
    with TestClient(build_app(service, settings), base_url="http://127.0.0.1") as client:
        client.post("/api/v1/documents", json={"content": CONTENT})
        yield service, client


@pytest.fixture(params=[{}, {"semantic_search": False}], ids=["no-extra", "setting-off"])
def plain(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
          ) -> Iterator[tuple[DocumentService, TestClient]]:
    if not request.param:
        monkeypatch.setattr(semantic, "installed", lambda: False)
    yield from serve(tmp_path, **request.param)


async def mcp_call(service: DocumentService, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with Client(build_mcp_server(service)) as client:
            result = await client.call_tool("document_search", arguments)
    return bool(result.is_error), orjson.loads(result.content[0].text)  # type: ignore[union-attr]


@pytest.mark.anyio
@pytest.mark.parametrize("ranking", ["semantic", "hybrid"])
async def test_a_ranking_by_meaning_is_refused_and_says_how_to_get_it(
        plain: tuple[DocumentService, TestClient], ranking: str) -> None:
    service, client = plain
    response = client.get("/api/v1/search", params={"query": "lighthouse", "ranking": ranking})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "semantic-search-unavailable"
    assert "pip install 'schemadoc[semantic]'" in error["message"]
    assert error["details"] == {"ranking": ranking, "install": semantic.EXTRA}
    is_error, body = await mcp_call(service, {"query": "lighthouse", "ranking": ranking})
    assert is_error and body["error"]["code"] == "semantic-search-unavailable"
    assert body["error"]["details"] == error["details"]


@pytest.mark.anyio
async def test_without_it_the_default_ranking_is_full_text(plain: tuple[DocumentService, TestClient]) -> None:
    service, client = plain
    assert service.search_index.rankings() == ["text"]
    hits = client.get("/api/v1/search", params={"query": "keeper"}).json()["hits"]
    assert [hit["pointer"] for hit in hits] == ["/chapters/0/sections/0/paragraphs/0/text"]
    assert client.get("/api/v1/search", params={"query": "keeping a lighthouse lit"}).json()["hits"] == []
    is_error, body = await mcp_call(service, {"query": "keeper"})
    assert not is_error and [hit["pointer"] for hit in body["hits"]] == [hits[0]["pointer"]]
    # an unknown ranking is still the argument's mistake
    response = client.get("/api/v1/search", params={"query": "keeper", "ranking": "magic"})
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid-request"


@pytest.mark.anyio
async def test_with_it_hybrid_is_the_default(tmp_path: Path) -> None:
    pytest.importorskip("wordllama", reason="the semantic extra is not installed (pip install 'schemadoc[semantic]')")
    for service, client in serve(tmp_path):
        assert service.search_index.rankings() == ["text", "semantic", "hybrid"]
        hits = client.get("/api/v1/search", params={"query": "keeping a lighthouse lit"}).json()["hits"]
        assert hits[0]["pointer"] == "/chapters/0/sections/0/paragraphs/0/text"
        is_error, body = await mcp_call(service, {"query": "keeping a lighthouse lit"})
        assert not is_error and [hit["pointer"] for hit in body["hits"]] == [hit["pointer"] for hit in hits]
