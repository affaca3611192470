"""Every document the server accepts can be read back by the official MCP clients.

The official Python client parses each incoming message with pydantic, whose JSON parser refuses
nesting beyond a fixed depth; a result puts a document's content several levels down (a history
entry: message, result, structured content, entries, entry, patch, operation). These tests find
the client's real limit, then store a document exactly as deep as the server's default
``max_json_depth`` allows and read it back through every result that carries content, with the
real client over stdio, and with the TypeScript SDK through the MCP Inspector when it is
installed (``make inspector``, or on first use: ``inspector.py``).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import jsonpatch
import pytest
from mcp import Client, StdioServerParameters, types
from mcp.client.stdio import stdio_client

from schemadoc.service import MAX_JSON_DEPTH

ROOT = Path(__file__).resolve().parents[2]
ANY_OBJECT = ROOT / "tests" / "schemas" / "any_object.schema.json"
HISTORY_ENVELOPE = 7  # message, result, structuredContent, entries, entry, patch, operation
READ_ENVELOPE = 3  # message, result, structuredContent (node_content is the document itself)

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def nested(levels: int) -> Any:
    """A JSON value nesting ``levels`` containers (an object holding arrays)."""
    value: Any = "leaf"
    for _ in range(levels - 1):
        value = [value]
    return {"deep": value}


def depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, level)
            stack += [(child, level + 1) for child in (node.values() if isinstance(node, dict) else node)]
    return deepest


def client_parses(levels: int) -> bool:
    """Whether the official client's message parser accepts a response nested ``levels`` deep."""
    arrays = levels - 2  # inside the message and the result object
    text = '{"jsonrpc":"2.0","id":1,"result":{"deep":' + "[" * arrays + '"leaf"' + "]" * arrays + "}}"
    try:
        types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValueError:
        return False
    return True


def python_client_limit() -> int:
    low, high = 2, 1_000
    assert client_parses(low) and not client_parses(high)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if client_parses(middle) else (low, middle)
    return low


def stdio_params(storage: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, cwd=storage.parent,
                                 args=["-m", "schemadoc", "serve", "--transport", "stdio", "--schema", str(ANY_OBJECT),
                                       "--storage-dir", str(storage), *extra])


async def structured(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    with anyio.fail_after(30):
        result = await client.call_tool(tool, arguments)
    assert result.is_error is False, result.content
    assert result.structured_content is not None
    return result.structured_content


async def test_the_python_client_reads_back_a_document_as_deep_as_the_server_allows(tmp_path: Path) -> None:
    limit = python_client_limit()
    assert limit >= MAX_JSON_DEPTH + HISTORY_ENVELOPE, f"the Python client parses {limit} levels"
    document = nested(MAX_JSON_DEPTH)
    with warnings.catch_warnings(), (tmp_path / "stderr.log").open("w") as stderr:
        warnings.simplefilter("ignore")
        async with Client(stdio_client(stdio_params(tmp_path / "data"), errlog=stderr), mode="auto") as client:
            doc_id = (await structured(client, "document_create", {}))["doc_id"]
            write = {"doc_id": doc_id, "node_path": "/", "node_data": document, "version": 1}
            assert (await structured(client, "document_update_node", {**write, "dry_run": True}))["dry_run"]
            assert (await structured(client, "document_update_node", write))["version"] == 2
            read = await structured(client, "document_read_node", {"doc_id": doc_id, "node_path": "/"})
            history = await structured(client, "document_history", {"doc_id": doc_id})
            diff = await structured(client, "document_diff", {"doc_id": doc_id, "from_version": 1, "to_version": 2})
            undo = await structured(client, "document_revert", {"doc_id": doc_id, "to_version": 1, "version": 2})
            redo = await structured(client, "document_revert", {"doc_id": doc_id, "to_version": 2, "version": 3})
            past = await structured(client, "document_read_node", {"doc_id": doc_id, "node_path": "/",
                                                                    "at_version": 2})
            resource = await client.read_resource(f"schema://{doc_id}")
            deeper = await client.call_tool("document_create_node", {
                "doc_id": doc_id, "node_path": "/more", "node_data": nested(MAX_JSON_DEPTH), "version": 4})
            alive = await structured(client, "document_read_node", {"doc_id": doc_id, "node_path": "/deep/0/0"})

    assert read["node_content"] == past["node_content"] == document
    assert jsonpatch.apply_patch({}, history["entries"][1]["patch"]) == document
    assert jsonpatch.apply_patch({}, diff["patch"]) == document
    assert undo["version"] == 3 and jsonpatch.apply_patch({}, redo["patch"]) == document
    assert json.loads(resource.contents[0].text) == document  # type: ignore[union-attr]
    assert deeper.is_error is True
    assert json.loads(deeper.content[0].text)["error"]["code"] == "document-too-deep"  # type: ignore[union-attr]
    assert alive["version"] == 4


async def test_the_python_client_really_fails_one_level_past_its_limit(tmp_path: Path) -> None:
    """The limit found from the client's parser is the one it has on the wire: from a server allowed
    to store deeper documents, a read exactly at the limit arrives, one level more never does."""
    fits = python_client_limit() - READ_ENVELOPE  # the deepest node content the client can receive
    unreadable: list[Exception] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, Exception):
            unreadable.append(message)

    with warnings.catch_warnings(), (tmp_path / "stderr.log").open("w") as stderr:
        warnings.simplefilter("ignore")
        params = stdio_params(tmp_path / "data", "--config", str(_config(tmp_path, max_json_depth=250)))
        async with Client(stdio_client(params, errlog=stderr), mode="auto", message_handler=on_message) as client:
            doc_id = (await structured(client, "document_create", {}))["doc_id"]
            # built in two writes, so that no write's own result (which repeats what it wrote) is too deep
            await structured(client, "document_update_node", {"doc_id": doc_id, "node_path": "/",
                                                              "node_data": nested(fits + 1 - 10), "version": 1})
            innermost = "/deep" + "/0" * (fits - 11)  # the innermost array, fits - 9 levels down
            await structured(client, "document_create_node", {"doc_id": doc_id, "node_path": innermost + "/0",
                                                              "node_data": nested(11)["deep"], "version": 2})
            read = await structured(client, "document_read_node", {"doc_id": doc_id, "node_path": "/deep"})
            assert depth(read["node_content"]) == fits and unreadable == []
            with pytest.raises(TimeoutError), anyio.fail_after(5):
                await client.call_tool("document_read_node", {"doc_id": doc_id, "node_path": "/"})
    assert unreadable, "the client dropped the message it could not parse"


def _config(tmp_path: Path, **settings: Any) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(settings))
    return path


# -- the TypeScript SDK, through the MCP Inspector's command line -------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "schemadoc", "serve", "--schema", str(ANY_OBJECT), "--storage-dir",
         str(tmp_path / "data"), "--port", str(port)],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(base + "/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)


def _inspector(command: list[str], base: str, tool: str, **arguments: Any) -> dict[str, Any]:
    args = [*command, "--cli", base + "/mcp", "--transport", "http", "--method", "tools/call",
            "--tool-name", tool]
    for name, value in arguments.items():
        args += ["--tool-arg", f"{name}={value}"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_the_typescript_sdk_reads_back_a_document_as_deep_as_the_server_allows(http_server: str,
                                                                              inspector_command: list[str]) -> None:
    document = nested(MAX_JSON_DEPTH)
    doc_id = httpx.post(http_server + "/api/v1/documents").json()["doc_id"]
    written = httpx.put(f"{http_server}/api/v1/documents/{doc_id}", params={"path": "/"},
                        json={"node_data": document, "version": 1})
    assert written.status_code == 200, written.text
    read = _inspector(inspector_command, http_server, "document_read_node", doc_id=doc_id, node_path="/")
    history = _inspector(inspector_command, http_server, "document_history", doc_id=doc_id)
    assert read["structuredContent"]["node_content"] == document
    assert jsonpatch.apply_patch({}, history["structuredContent"]["entries"][1]["patch"]) == document
