"""Semantic search on a real server (files store): both doors (REST, MCP over streamable HTTP) rank text units by
meaning, hybrid is the default ranking, a removed section or document leaves the results, and the vectors are
there again after a restart and after the index file is deleted (rebuilt from the store)."""

from __future__ import annotations

import time
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from http_server import Server
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from schemadoc.client import Client as RestClient

pytest.importorskip("wordllama", reason="the semantic extra is not installed (pip install 'schemadoc[semantic]')")

LAMP = "/chapters/0/sections/1/paragraphs/0/text"
QUERY = "keeping a lighthouse lit"
BOOK = {"title": "The coast", "metadata": {"language": "en", "status": "draft", "edition": 1}, "chapters": [
    {"id": "ch-1", "title": "Harbour life", "sections": [
        {"title": "Market day", "paragraphs": [{"text": "On market day the square fills with stalls selling bread, "
                                                        "cheese and cut flowers."}]},
        {"title": "Evenings", "paragraphs": [{"text": "Every evening the keeper climbed the stairs, trimmed the wick "
                                                      "and polished the great lens so the lamp would burn until "
                                                      "dawn for passing ships."}]},
        {"title": "The boats", "paragraphs": [{"text": "The fishing boats come in at noon and the catch is sold on "
                                                       "the quay."}]},
    ]},
]}
OTHER = {"title": "Kitchen notes", "metadata": {"language": "en", "status": "draft", "edition": 1}, "chapters": [
    {"id": "ch-1", "title": "Bread", "sections": [
        {"title": "The loaf", "paragraphs": [{"text": "Knead the dough for ten minutes, leave it to rise overnight, "
                                                      "then bake it in a hot oven."}]}]}]}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def mcp_client(url: str) -> AsyncIterator[Client]:
    with anyio.fail_after(60), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        async with httpx2.AsyncClient(timeout=30) as http, \
                Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
            yield client


def rest_search(http: httpx.Client, query: str, **params: Any) -> list[tuple[str, str]]:
    response = http.get("/search", params={"query": query, **params})
    assert response.status_code == 200, response.text
    return [(hit["doc_id"], hit["pointer"]) for hit in response.json()["hits"]]


def meaning_indexed(http: httpx.Client) -> None:
    """Wait until a semantic answer no longer says that meaning is still being indexed (full text answered)."""
    end = time.monotonic() + 60
    while (note := http.get("/search", params={"query": QUERY, "ranking": "semantic"}).json().get("note")):
        assert "still being indexed" in note and time.monotonic() < end, note
        time.sleep(0.1)


async def mcp_search(url: str, query: str, **arguments: Any) -> list[tuple[str, str]]:
    async with mcp_client(url) as client:
        result = await client.call_tool("document_search", {"query": query, **arguments})
    assert result.is_error is False, result.content
    return [(hit["doc_id"], hit["pointer"]) for hit in dict(result.structured_content)["hits"]]


@pytest.mark.anyio
async def test_both_doors_rank_by_meaning_and_forget_what_is_removed(tmp_path: Path) -> None:
    with Server(tmp_path / "data", tmp_path / "logs") as server, \
            httpx.Client(base_url=f"{server.url}/api/v1", timeout=30) as http:
        book = http.post("/documents", json={"content": BOOK}).json()["doc_id"]
        other = http.post("/documents", json={"content": OTHER}).json()["doc_id"]
        assert rest_search(http, QUERY, ranking="text") == []  # no section uses these words
        by_rest = rest_search(http, QUERY, ranking="semantic")
        assert by_rest[0] == (book, LAMP)
        assert await mcp_search(server.url, QUERY, ranking="semantic") == by_rest
        # hybrid is the default ranking; within one document, below a pointer
        assert rest_search(http, QUERY)[0] == (book, LAMP)
        assert (await mcp_search(server.url, QUERY, doc_ids=[book], node_path="/chapters/0/sections/1"))[0] == \
            (book, LAMP)
        assert rest_search(http, "baking a loaf at home", ranking="semantic")[0][0] == other
        with RestClient(server.url) as client:  # the Python client asks for a ranking too
            assert [(h.doc_id, h.pointer) for h in client.search(QUERY, ranking="semantic").hits] == by_rest

        # the section about the lamp removed: its paragraph leaves the results; the later section shifted up
        response = http.request("DELETE", f"/documents/{book}/nodes", params={"path": "/chapters/0/sections/1"},
                                json={"version": 1})
        assert response.status_code == 200, response.text
        boats = rest_search(http, "fishing boats selling the catch", ranking="semantic", doc_ids=book)
        assert boats[0] == (book, LAMP)  # /sections/1 is now the boats: the pointer names their paragraph
        texts = [h["snippet"] for h in http.get("/search", params={"query": QUERY, "ranking": "semantic"})
                 .json()["hits"]]
        assert not any("wick" in text for text in texts)

        # a deleted document leaves every ranking
        assert http.delete(f"/documents/{other}", headers={"If-Match": '"1"'}).status_code == 200
        assert all(doc != other for doc, _ in rest_search(http, "baking a loaf at home", ranking="semantic"))
        assert all(doc != other for doc, _ in await mcp_search(server.url, "baking a loaf at home"))


def test_the_vectors_are_there_after_a_restart_and_rebuilt_without_the_index_file(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with Server(data, tmp_path / "logs") as server, \
            httpx.Client(base_url=f"{server.url}/api/v1", timeout=30) as http:
        book = http.post("/documents", json={"content": BOOK}).json()["doc_id"]
        http.post("/documents", json={"content": OTHER})
        before = rest_search(http, QUERY, ranking="semantic")
        assert before[0] == (book, LAMP)
    for restart in ("restart", "index file deleted"):
        if restart == "index file deleted":
            for path in data.glob("search-index.sqlite3*"):
                path.unlink()
        with Server(data, tmp_path / "logs") as server, \
                httpx.Client(base_url=f"{server.url}/api/v1", timeout=30) as http:
            meaning_indexed(http)  # a new index file: the vectors are made again behind the open server
            assert rest_search(http, QUERY, ranking="semantic") == before, restart
            assert rest_search(http, QUERY)[0] == (book, LAMP), restart
