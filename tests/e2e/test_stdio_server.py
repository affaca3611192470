"""``schemadoc serve --transport stdio`` as a real subprocess, driven by the official MCP client.

The first process is driven in the 2026-07-28 era, the restarted one in the handshake era.

Stdout must carry nothing but MCP messages (the client reports any other line to the message
handler as a parse error); logs go to stderr. Documents survive a restart of the server.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

BOOK_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json"
CHAPTER = {"id": "ch-1", "title": "Intro", "sections": [{"title": "Start", "paragraphs": [{"text": "Hi."}]}]}
TIMEOUT_SECONDS = 60

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class StdioServer:
    """Starts ``python -m schemadoc serve --transport stdio`` and records what is not protocol."""

    def __init__(self, storage_dir: Path, stderr_path: Path) -> None:
        self.params = StdioServerParameters(
            command=sys.executable, cwd=storage_dir.parent,
            args=["-m", "schemadoc", "serve", "--transport", "stdio", "--schema", str(BOOK_SCHEMA),
                  "--storage-dir", str(storage_dir)])
        self.stderr_path = stderr_path
        self.not_protocol: list[Exception] = []

    async def on_message(self, message: Any) -> None:
        if isinstance(message, Exception):  # a stdout line that is not a JSON-RPC message
            self.not_protocol.append(message)

    def client(self, stderr: Any, *, mode: str) -> Client:
        """A client that starts a new server process (``mode``: "auto" = 2026-07-28, "legacy" = handshake)."""
        return Client(stdio_client(self.params, errlog=stderr), mode=mode, message_handler=self.on_message)

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8")


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert result.is_error is False, result.content
    content: dict[str, Any] | None = result.structured_content
    assert content is not None
    return content


async def test_the_stdio_server_speaks_only_mcp_on_stdout_and_keeps_documents_across_restarts(
        tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    server = StdioServer(storage, tmp_path / "stderr.log")

    with warnings.catch_warnings(), anyio.fail_after(TIMEOUT_SECONDS):
        warnings.simplefilter("ignore")
        with server.stderr_path.open("w", encoding="utf-8") as stderr:
            async with server.client(stderr, mode="auto") as client:
                assert client.protocol_version == "2026-07-28"
                names = {tool.name for tool in (await client.list_tools()).tools}
                assert {"document_create", "document_read_node", "document_update_node", "schema_get_node",
                        "document_history", "document_revert"} <= names
                doc_id = (await call(client, "document_create", {}))["doc_id"]
                await call(client, "document_update_node",
                           {"doc_id": doc_id, "node_path": "/title", "node_data": "Dune", "version": 1})
                await call(client, "document_create_node",
                           {"doc_id": doc_id, "node_path": "/chapters/-", "node_data": CHAPTER, "version": 2})
                refused = await client.call_tool("document_update_node", {"doc_id": doc_id, "node_path": "/title",
                                                                          "node_data": 42, "version": 3})
                assert refused.is_error is True
                assert orjson.loads(refused.content[0].text)["error"]["code"] == "validation-failed"  # type: ignore[union-attr]
                written = orjson.loads((await client.read_resource(f"schema://{doc_id}")).contents[0].text)  # type: ignore[union-attr]

        assert written["title"] == "Dune" and written["chapters"] == [CHAPTER]
        assert (storage / f"{doc_id}.json").exists()

        # a new process, speaking the handshake era this time
        with server.stderr_path.open("a", encoding="utf-8") as stderr:
            async with server.client(stderr, mode="legacy") as client:
                assert client.protocol_version == "2025-11-25"
                read = await call(client, "document_read_node", {"doc_id": doc_id, "node_path": "/"})
                updated = await call(client, "document_update_node", {"doc_id": doc_id, "node_path": "/title",
                                                                      "node_data": "Dune Messiah", "version": 3})
                listed = await call(client, "document_list", {})
                resources = [str(r.uri) for r in (await client.list_resources()).resources]

    assert (read["node_content"], read["version"]) == (written, 3)
    assert updated["version"] == 4
    assert [d["doc_id"] for d in listed["documents"]] == [doc_id]
    assert f"schema://{doc_id}" in resources
    assert server.not_protocol == []
    logs = server.stderr()
    assert logs.count("MCP on stdio") == 2
    assert "validation-failed" in logs
