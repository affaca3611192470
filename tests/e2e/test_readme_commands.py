"""The commands and snippets of the README (and of docs/client.md) run as written.

Each tested block follows a ``<!-- tested: NAME -->`` marker. The only change made before running one is
the address: ``localhost:8080`` / ``127.0.0.1:8080`` become the test server's free port, ``schemadoc`` is
this environment's command, and a snippet's storage directory is a temporary one. MCP client snippets
(Claude Desktop, Claude Code, VS Code, Cursor) are started the way those clients start them and called
with the MCP SDK's client; the MCP Inspector lines run with the pinned Inspector (``make inspector``, or
installed from npm on first use by ``inspector.py`` when node and npm are there), skipped saying so otherwise."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from http_server import Server
from inspector import VERSION as PINNED
from mcp import Client, StdioServerParameters

from schemadoc.config import ENVIRONMENT

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BIN = Path(sys.executable).parent
INSPECTOR_VERSION = "0.15.0"
NPX_INSPECTOR = f"npx @modelcontextprotocol/inspector@{INSPECTOR_VERSION}"
DEFAULT_ADDRESS = re.compile(r"(localhost|127\.0\.0\.1):8080")


def readme_block(text: str, name: str) -> str:
    """The first fenced code block after ``<!-- tested: NAME`` in ``text``."""
    marker = text.index(f"<!-- tested: {name}")
    found = re.compile(r"```[a-z]*\n(.*?)```", re.S).search(text, marker)
    assert found is not None, name
    return found.group(1)


def env() -> dict[str, str]:
    clean = {key: value for key, value in os.environ.items() if key not in ENVIRONMENT}
    clean["PATH"] = f"{BIN}{os.pathsep}{clean.get('PATH', '')}"
    return clean


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    base = tmp_path_factory.mktemp("readme")
    running = Server(base / "data", base / "logs")
    yield running
    running.stop()


def at(server: Server, text: str) -> str:
    return DEFAULT_ADDRESS.sub(f"127.0.0.1:{server.port}", text)


def json_values(text: str) -> list[Any]:
    """The JSON objects of curl's output, one after the other (curl adds no newline between bodies)."""
    decoder, values, at_ = json.JSONDecoder(), [], text.find("{")
    while at_ != -1:
        value, end = decoder.raw_decode(text, at_)
        values.append(value)
        at_ = text.find("{", end)
    return values


def test_the_curl_walk_runs_as_written(server: Server, tmp_path: Path) -> None:
    walk = readme_block(README, "curl-walk")
    assert "DOC=$(" in walk  # the walk sets the document's id itself
    script = f"set -euo pipefail\n{at(server, walk)}\necho \"DOC=$DOC\"\n"
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env(), capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r'(?im)^etag: "1"', done.stdout)
    doc = done.stdout.strip().rsplit("DOC=", 1)[1]
    answers = json_values(done.stdout)
    assert answers[1]["updated_node"] == "Dune" and answers[1]["version"] == 2
    assert answers[2]["dry_run"] is True and answers[2]["created_node_path"] == "/chapters/0"
    assert [entry["version"] for entry in answers[3]["entries"]] == [1, 2]
    assert answers[3]["doc_id"] == doc


def stdio_call(command: str, args: list[str], cwd: Path) -> dict[str, Any]:
    """Start a stdio server as an MCP client does and create a document through it."""
    assert command == "schemadoc"
    params = StdioServerParameters(command=str(BIN / "schemadoc"), args=args, cwd=str(cwd), env=env())

    async def session() -> dict[str, Any]:
        async with Client(params) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert "document_create" in names and "document_read_node" in names
            created = await client.call_tool("document_create", {})
            assert not created.is_error
            result: dict[str, Any] = created.structured_content  # type: ignore[assignment]
            return result

    return anyio.run(session)


def http_tools(url: str) -> list[str]:
    async def session() -> list[str]:
        async with Client(url) as client:
            return [tool.name for tool in (await client.list_tools()).tools]

    return anyio.run(session)


def own_storage(args: list[str], storage: Path) -> list[str]:
    """The snippet's arguments with its storage directory replaced by ``storage``."""
    at_dir = args.index("--storage-dir") + 1
    assert args[at_dir].startswith(("/home/me/", "${workspaceFolder}/")), args[at_dir]
    return [*args[:at_dir], str(storage), *args[at_dir + 1:]]


@pytest.mark.parametrize(("snippet", "servers_key"), [("claude-desktop", "mcpServers"), ("vscode", "servers"),
                                                      ("cursor", "mcpServers")])
def test_the_json_client_snippets_start_a_server_that_answers(server: Server, tmp_path: Path, snippet: str,
                                                              servers_key: str) -> None:
    config = json.loads(readme_block(README, snippet))
    entries = config[servers_key]
    stdio = [entry for entry in entries.values() if "command" in entry]
    assert stdio, snippet
    for entry in stdio:
        assert entry.get("type", "stdio") == "stdio"
        storage = tmp_path / "storage"
        created = stdio_call(entry["command"], own_storage(entry["args"], storage), tmp_path)
        assert created["version"] == 1
        assert (storage / f"{created['doc_id']}.journal.jsonl").is_file()
    for entry in (entry for entry in entries.values() if "url" in entry):
        assert entry.get("type", "http") == "http" and entry["url"] == "http://127.0.0.1:8080/mcp"
        assert "document_create" in http_tools(at(server, entry["url"]))


def test_the_claude_code_commands_start_a_server_that_answers(server: Server, tmp_path: Path) -> None:
    stdio_line, http_line = readme_block(README, "claude-code").strip().splitlines()
    words = shlex.split(stdio_line)
    assert words[:4] == ["claude", "mcp", "add", "schemadoc"] and words[4] == "--"
    command, *args = words[5:]
    created = stdio_call(command, own_storage(args, tmp_path / "storage"), tmp_path)
    assert created["version"] == 1
    words = shlex.split(http_line)
    assert words[:5] == ["claude", "mcp", "add", "--transport", "http"]
    assert "document_create" in http_tools(at(server, words[-1]))


@pytest.fixture(scope="module")
def inspector(inspector_command: list[str]) -> list[str]:
    makefile = (ROOT / "Makefile").read_text()
    assert f"@modelcontextprotocol/inspector@{INSPECTOR_VERSION}" in makefile  # the README's pin is make's
    assert INSPECTOR_VERSION == PINNED  # ... and the tests'
    return inspector_command


def test_the_inspector_commands_work_over_stdio_and_http(server: Server, inspector: list[str],
                                                         tmp_path: Path) -> None:
    lines = readme_block(README, "inspector").strip().splitlines()
    assert len(lines) == 4 and all(line.startswith(NPX_INSPECTOR + " --cli ") for line in lines)
    transports = []
    for line in lines:
        words = shlex.split(at(server, line.removeprefix(NPX_INSPECTOR)))
        transports.append("stdio" if "TRANSPORT=stdio" in words else "http")
        done = subprocess.run([*inspector, *words], cwd=tmp_path, env=env(), capture_output=True, text=True,
                              timeout=180, check=False)
        assert done.returncode == 0, line + "\n" + done.stdout + done.stderr
        answer = json.loads(done.stdout)
        if "--tool-name" in words:
            assert not answer.get("isError"), answer
            assert answer["structuredContent"]["success"] is True
        else:
            assert "document_create" in [tool["name"] for tool in answer["tools"]]
    assert transports == ["stdio", "stdio", "http", "http"]
    assert list((tmp_path / "data").glob("*.journal.jsonl"))  # the stdio server wrote where it was told


def test_the_client_example_of_the_docs_runs(server: Server, tmp_path: Path) -> None:
    example = readme_block((ROOT / "docs" / "client.md").read_text(encoding="utf-8"), "client-example")
    (tmp_path / "example.py").write_text(example)
    done = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, env={**env(), "SCHEMADOC_URL": server.url},
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "refused: validation-failed ['/metadata/edition']" in out
    assert "conflict: {" in out and "tagged at version 4" in out
    assert "event 4 create_node" in out


def test_the_backup_block_runs_as_written_beside_a_server_that_keeps_writing(tmp_path: Path) -> None:
    """The README's backup: a live server's store exported with its history while it takes writes, imported into
    an empty store, and the archive's manifest read with plain tar. Each restored document is one the live server
    had: a version between the one before the export and the one after, with that version's content and every
    earlier version's history."""
    import threading

    import httpx

    block = readme_block(README, "backup")
    assert "./data" in block and "./restored" in block
    with Server(tmp_path / "data", tmp_path / "logs", schema_args=("--example", "book")) as live:
        api = f"{live.url}/api/v1"
        docs = [httpx.post(f"{api}/documents", json={}, timeout=30).json()["doc_id"] for _ in range(3)]
        versions = dict.fromkeys(docs, 1)
        stop = threading.Event()

        def write() -> None:
            while not stop.is_set():
                for doc in docs:
                    answer = httpx.put(f"{api}/documents/{doc}", params={"path": "/title"}, timeout=30,
                                       json={"node_data": f"v{versions[doc] + 1}", "version": versions[doc]})
                    assert answer.status_code == 200, answer.text
                    versions[doc] = answer.json()["version"]

        writer = threading.Thread(target=write)
        writer.start()
        try:
            before = dict(versions)
            done = subprocess.run(["bash", "-c", f"set -euo pipefail\n{block}"], cwd=tmp_path, env=env(),
                                  capture_output=True, text=True, timeout=300, check=False)
        finally:
            stop.set()
            writer.join(timeout=60)
        after = dict(versions)
        assert done.returncode == 0, done.stdout + done.stderr
        assert sum(after.values()) > sum(before.values()), "the server took no writes while the block ran"
        manifest = json_values(done.stdout)[-1]
        assert (manifest["format"], manifest["history"], manifest["documents"]) == ("schemadoc-archive", True, 3)
        with Server(tmp_path / "restored", tmp_path / "logs", schema_args=("--example", "book")) as restored:
            listed = httpx.get(f"{restored.url}/api/v1/documents", timeout=30).json()["documents"]
            assert sorted(item["doc_id"] for item in listed) == sorted(docs)
            for doc in docs:
                read = httpx.get(f"{restored.url}/api/v1/documents/{doc}", timeout=30).json()
                version = read["version"]
                assert before[doc] <= version <= after[doc]
                assert read["node_content"] == httpx.get(f"{api}/documents/{doc}/versions/{version}",
                                                         timeout=30).json()
                # the history came along: the restored server reads every earlier version as the live one does
                for past in {1, max(1, version // 2), version}:
                    assert httpx.get(f"{restored.url}/api/v1/documents/{doc}/versions/{past}", timeout=30).json() \
                        == httpx.get(f"{api}/documents/{doc}/versions/{past}", timeout=30).json()
