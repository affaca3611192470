"""The built wheel, installed into a fresh virtual environment in a temporary directory, serves the bundled
example with nothing from the repository: over MCP stdio (an MCP client call) and over HTTP (REST create and
read). This is how CI checks the install path users take (``pipx install``, ``uvx``, ``pip install``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx
import pytest
from http_server import Server
from mcp import Client, StdioServerParameters

from schemadoc.config import ENVIRONMENT

ROOT = Path(__file__).resolve().parents[2]
# what a source distribution of the project holds: the build needs no more
SOURCES = ("pyproject.toml", "README.md", "src")


@dataclass(frozen=True)
class Installed:
    bin: Path
    cwd: Path
    env: dict[str, str]

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.bin / args[0]), *args[1:]], cwd=self.cwd, env=self.env, capture_output=True,
                              text=True, timeout=120, check=False)


def _clean_env(home: Path) -> dict[str, str]:
    """No repository on any path: no PYTHONPATH, none of schemadoc's variables, a HOME of its own."""
    env = {key: value for key, value in os.environ.items()
           if key not in ENVIRONMENT and key not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["HOME"] = str(home)
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    base = tmp_path_factory.mktemp("wheel")
    source = base / "source"
    source.mkdir()
    for name in SOURCES:
        origin = ROOT / name
        if origin.is_dir():
            shutil.copytree(origin, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(origin, source / name)
    dist = base / "dist"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(source)],
                           capture_output=True, text=True, timeout=300, check=False)
    assert built.returncode == 0, built.stderr
    (wheel,) = dist.glob("schemadoc-*.whl")
    environment = base / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(environment)
    home = base / "home"
    home.mkdir()
    env = _clean_env(home)
    done = subprocess.run([str(environment / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
                          cwd=base, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    work = base / "work"  # outside the repository
    work.mkdir()
    yield Installed(environment / "bin", work, env)


def test_the_installed_package_is_the_wheel_and_carries_its_examples(installed: Installed) -> None:
    where = installed.run("python", "-c", "import schemadoc, sys; print(schemadoc.__file__); print(sys.path)")
    assert where.returncode == 0, where.stderr
    module, path = where.stdout.splitlines()
    assert Path(module).is_relative_to(installed.bin.parent), module
    assert str(ROOT) not in path
    version = installed.run("schemadoc", "--version")
    assert version.returncode == 0 and version.stdout.startswith("schemadoc 0.")
    listed = installed.run("schemadoc", "serve", "--example")
    assert [line.split("\t")[0] for line in listed.stdout.splitlines()] == ["book", "recipe"]
    assert all(Path(line.split("\t")[1]).is_relative_to(installed.bin.parent) for line in listed.stdout.splitlines())
    # runtime dependencies only: no test or development tools
    tools = installed.run("python", "-c", "import importlib.util as u; print([m for m in "
                          "('pytest', 'hypothesis', 'mypy', 'ruff', 'schemathesis') if u.find_spec(m)])")
    assert tools.stdout.strip() == "[]"


def test_the_conformance_command_without_its_extra_says_how_to_install_it(installed: Installed) -> None:
    done = installed.run("schemadoc-conformance", "--url", "http://127.0.0.1:9")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "pip install 'schemadoc[conformance]'" in done.stderr


def test_the_installed_command_serves_the_bundled_example_over_stdio(installed: Installed) -> None:
    params = StdioServerParameters(
        command=str(installed.bin / "schemadoc"),
        args=["serve", "--example", "book", "--transport", "stdio", "--storage-dir", "stdio-data"],
        cwd=str(installed.cwd), env=installed.env)

    async def session() -> tuple[dict[str, object], dict[str, object]]:
        async with Client(params) as client:
            created = await client.call_tool("document_create", {})
            assert not created.is_error, created
            doc_id = created.structured_content["doc_id"]  # type: ignore[index]
            read = await client.call_tool("document_read_node", {"doc_id": doc_id, "node_path": "/title"})
            assert not read.is_error, read
            return created.structured_content, read.structured_content  # type: ignore[return-value]

    created, read = anyio.run(session)
    assert created["version"] == 1
    assert read["node_content"] == "Untitled"
    assert (installed.cwd / "stdio-data" / f"{created['doc_id']}.journal.jsonl").is_file()


def test_the_installed_command_serves_the_bundled_example_over_http(installed: Installed) -> None:
    server = Server(installed.cwd / "http-data", installed.cwd / "logs", program=[str(installed.bin / "schemadoc")],
                    schema_args=["--example", "recipe"])
    try:
        created = httpx.post(f"{server.url}/api/v1/documents", timeout=30)
        assert created.status_code == 201, created.text
        doc_id = created.json()["doc_id"]
        updated = httpx.put(f"{server.url}/api/v1/documents/{doc_id}", params={"path": "/servings"},
                            json={"node_data": 4, "version": 1}, timeout=30)
        assert updated.status_code == 200, updated.text
        read = httpx.get(f"{server.url}/api/v1/documents/{doc_id}", timeout=30)
        assert read.status_code == 200 and read.headers["etag"] == '"2"'
        assert read.json()["node_content"]["servings"] == 4
        assert read.json()["node_content"]["name"] == "New recipe"
    finally:
        assert server.stop() == 0


def test_the_installed_server_without_the_semantic_extra_ranks_by_text_and_says_how_to_get_meaning(
        installed: Installed) -> None:
    missing = installed.run("python", "-c", "import importlib.util as u; print(u.find_spec('wordllama'))")
    assert missing.stdout.strip() == "None"  # the base install: no semantic extra
    server = Server(installed.cwd / "semantic-data", installed.cwd / "logs", program=[str(installed.bin / "schemadoc")],
                    schema_args=["--example", "book"])
    try:
        created = httpx.post(f"{server.url}/api/v1/documents", json={"content": {"title": "Lighthouse keepers"}},
                             timeout=30)
        assert created.status_code == 201, created.text
        found = httpx.get(f"{server.url}/api/v1/search", params={"query": "lighthouse"}, timeout=30)
        assert found.status_code == 200 and [hit["pointer"] for hit in found.json()["hits"]] == ["/title"]
        for ranking in ("semantic", "hybrid"):
            refused = httpx.get(f"{server.url}/api/v1/search", params={"query": "lighthouse", "ranking": ranking},
                                timeout=30)
            assert refused.status_code == 400, refused.text
            error = refused.json()["error"]
            assert error["code"] == "semantic-search-unavailable"
            assert error["details"]["install"] == "pip install 'schemadoc[semantic]'"
    finally:
        assert server.stop() == 0
