"""``schemadoc serve --transport http`` as a real subprocess on 127.0.0.1: REST, MCP, stop and restart."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from http_server import Server
from mcp import Client


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


CHAPTER = {"id": "ch-1", "title": "Arrakis", "sections": [{"title": "Desert", "paragraphs": [{"text": "Sand."}]}]}


def test_documents_written_over_rest_survive_a_stop_and_a_restart(tmp_path: Path) -> None:
    storage = tmp_path / "data"
    first = Server(storage, tmp_path / "logs")
    try:
        with httpx.Client(base_url=f"{first.url}/api/v1", timeout=30) as http:
            created = http.post("/documents")
            assert created.status_code == 201
            doc_id = created.json()["doc_id"]
            updated = http.put(f"/documents/{doc_id}", params={"path": "/title"},
                               json={"node_data": "Dune", "version": 1})
            assert updated.status_code == 200 and updated.json()["version"] == 2
            appended = http.post(f"/documents/{doc_id}/nodes", params={"path": "/chapters/-"},
                                 json={"node_data": CHAPTER}, headers={"If-Match": updated.headers["etag"]})
            assert appended.status_code == 201 and appended.json()["created_node_path"] == "/chapters/0"
            read = http.get(f"/documents/{doc_id}", params={"path": "/chapters/0/title"})
            assert read.json()["node_content"] == "Arrakis" and read.headers["etag"] == '"3"'
            stale = http.put(f"/documents/{doc_id}", params={"path": "/title"},
                             json={"node_data": "Lost", "version": 2})
            assert stale.status_code == 409 and stale.json()["error"]["code"] == "version-conflict"
            before = http.get(f"/documents/{doc_id}").json()["node_content"]
    finally:
        code = first.stop()
    assert code == 0
    assert first.stdout == ""  # every log line goes to stderr
    assert f"serving {first.url}" in first.stderr
    assert "Traceback" not in first.stderr

    second = Server(storage, tmp_path / "logs")
    try:
        with httpx.Client(base_url=f"{second.url}/api/v1", timeout=30) as http:
            after = http.get(f"/documents/{doc_id}")
            assert after.headers["etag"] == '"3"'
            assert after.json()["node_content"] == before
            listing = http.get("/documents").json()
            assert [d["doc_id"] for d in listing["documents"]] == [doc_id]
            again = http.put(f"/documents/{doc_id}", params={"path": "/title"},
                             json={"node_data": "Dune Messiah", "version": 3})
            assert again.json()["version"] == 4
    finally:
        assert second.stop() == 0


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("mcp-over-http")
    server = Server(root / "data", root / "logs")
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_mcp_tools_answer_at_slash_mcp_next_to_rest(shared_server: Server, mode: str) -> None:
    async with httpx.AsyncClient(base_url=f"{shared_server.url}/api/v1", timeout=30) as http:
        doc_id = (await http.post("/documents")).json()["doc_id"]
        with anyio.fail_after(60), warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            async with Client(f"{shared_server.url}/mcp", mode=mode) as client:
                expected_era = "2026-07-28" if mode == "auto" else "2025-11-25"
                assert client.protocol_version == expected_era
                read: Any = await client.call_tool("document_read_node", {"doc_id": doc_id, "node_path": "/title"})
                assert read.is_error is False
                assert read.structured_content["node_content"] == "Untitled"
                written = await client.call_tool("document_update_node", {
                    "doc_id": doc_id, "node_path": "/title", "node_data": f"Via MCP ({mode})", "version": 1})
                assert written.structured_content["version"] == 2
                stale: Any = await client.call_tool("document_update_node", {
                    "doc_id": doc_id, "node_path": "/title", "node_data": "x", "version": 1})
                assert stale.is_error is True
                assert '"version-conflict"' in stale.content[0].text
        rest_view = await http.get(f"/documents/{doc_id}", params={"path": "/title"})
        assert rest_view.json()["node_content"] == f"Via MCP ({mode})"
        assert rest_view.headers["etag"] == '"2"'
