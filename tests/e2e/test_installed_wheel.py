"""The built wheel, installed into a fresh virtual environment in a temporary directory, serves the bundled
example with nothing from the repository: over MCP stdio (an MCP client call) and over HTTP (REST create and
read). This is how CI checks the install path users take (``pipx install``, ``uvx``, ``pip install``).

The install is the README's own ``install`` block, run as written (``~`` is a temporary home, the checkout a copy
of what a source distribution holds); the README's PostgreSQL and "Running it exposed" examples then run from that
install, in a directory that is no checkout, each changed only where it names an address, a password or a file
that this machine does not have (the free port, the test database, a temporary tokens file). The runtime
dependencies come from the package index (about 20 s on a warm network); without PostgreSQL its example is
skipped, saying so. Running the PostgreSQL and exposed servers costs tens of seconds: those two tests are marked
``slow`` (``pytest -m slow tests/e2e/test_installed_wheel.py``); the default suite checks their commands without
starting them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx
import pytest
from http_server import Server, free_port
from mcp import Client, StdioServerParameters
from pg_support import drop_schema, fresh_schema_name, require_postgres, url_with_schema
from test_readme_commands import readme_block

from schemadoc import __version__
from schemadoc.config import ENVIRONMENT

ROOT = Path(__file__).resolve().parents[2]
# what a source distribution of the project holds: the build needs no more
SOURCES = ("pyproject.toml", "README.md", "src")
README = (ROOT / "README.md").read_text(encoding="utf-8")


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
    source = base / "source"  # the checkout the README's block runs in
    source.mkdir()
    for name in SOURCES:
        origin = ROOT / name
        if origin.is_dir():
            shutil.copytree(origin, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(origin, source / name)
    home = base / "home"
    home.mkdir()
    env = _clean_env(home)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # a pip and a python3
    block = readme_block(README, "install")
    done = subprocess.run(["bash", "-c", f"set -euo pipefail\n{block}"], cwd=source, env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    version, *examples = done.stdout.strip().splitlines()[-3:]
    assert version == f"schemadoc {__version__}"
    assert [line.split("\t")[0] for line in examples] == ["book", "recipe"]
    environment = home / ".local" / "share" / "schemadoc"  # where the block put it
    assert (environment / "bin" / "schemadoc").is_file(), block
    work = base / "work"  # outside the repository
    work.mkdir()
    env["PATH"] = f"{environment / 'bin'}{os.pathsep}{env['PATH']}"  # what the block's export did
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


# -- the README's PostgreSQL and "Running it exposed" examples, from the installed wheel ------------------------


def commands_of(block: str, program: str) -> list[list[str]]:
    """The commands of a shell block that start with ``program`` (continuation lines joined, comments dropped)."""
    joined = block.replace("\\\n", " ")
    lines = [line.split(" #")[0].strip() for line in joined.splitlines()]
    return [shlex.split(line) for line in lines if line.startswith(program + " ")]


def with_port(args: list[str], port: int) -> list[str]:
    """``args`` on ``port``: its ``--port`` replaced, or one added (the README's default is 8080)."""
    if "--port" in args:
        at = args.index("--port") + 1
        return [*args[:at], str(port), *args[at + 1:]]
    return [*args, "--port", str(port)]


@contextlib.contextmanager
def serving(installed: Installed, args: list[str], cwd: Path, host: str = "127.0.0.1") -> Iterator[str]:
    """``schemadoc ARGS`` from the installed wheel in ``cwd`` until it answers ``/health`` (asked for ``host``);
    stopped with SIGTERM at the end. Yields its base URL on 127.0.0.1."""
    assert args[0] == "schemadoc"
    cwd.mkdir(parents=True, exist_ok=True)
    port = int(args[args.index("--port") + 1])
    url = f"http://127.0.0.1:{port}"
    with (cwd / "stderr.txt").open("wb") as err:
        process = subprocess.Popen([str(installed.bin / "schemadoc"), *args[1:]], cwd=cwd, env=installed.env,
                                   stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, (cwd / "stderr.txt").read_text()
            try:
                if httpx.get(f"{url}/health", headers={"host": host}, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, (cwd / "stderr.txt").read_text()
            time.sleep(0.1)
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


def test_the_readme_s_server_examples_name_no_file_of_a_checkout_and_only_real_flags() -> None:
    """The cheap half of the two tests below, in the default suite: every ``schemadoc serve`` of the README's
    PostgreSQL and exposed examples serves the bundled example (``schemas/...`` exists only in a clone) with flags
    ``schemadoc serve`` has."""
    known = set(subprocess.run([sys.executable, "-m", "schemadoc", "serve", "--help"], capture_output=True,
                               text=True, timeout=60, check=True).stdout.split())
    for name in ("postgres", "exposed", "exposed-proxy"):
        serves = commands_of(readme_block(README, name), "schemadoc")
        assert serves, name
        for args in serves:
            assert args[:2] == ["schemadoc", "serve"] and "--example" in args and "--schema" not in args, args
            assert {arg for arg in args if arg.startswith("--")} <= known, args


@pytest.mark.slow  # three servers from the wheel: tens of seconds on a busy machine
def test_the_readme_s_postgresql_servers_run_from_the_installed_wheel(installed: Installed) -> None:
    """Every ``schemadoc serve`` of the README's PostgreSQL block, run from the wheel outside any checkout on one
    database (the test's, in a schema of its own, instead of the block's user and password): a document created
    through one is read through each other. The lines that make the database (``sudo``, ``docker``) are not run."""
    block = readme_block(README, "postgres")
    serves = commands_of(block, "schemadoc")
    assert len(serves) >= 2 and all(args[:2] == ["schemadoc", "serve"] and "--storage-url" in args
                                    for args in serves)
    assert all("--example" in args for args in serves)  # no file of a checkout
    require_postgres()
    schema = fresh_schema_name()
    try:
        with contextlib.ExitStack() as stack:
            urls = []
            for number, args in enumerate(serves):
                at = args.index("--storage-url") + 1
                assert args[at].startswith("postgresql://"), args
                args = with_port([*args[:at], url_with_schema(schema), *args[at + 1:]], free_port())
                urls.append(stack.enter_context(serving(installed, args, installed.cwd / f"pg-{number}")))
            created = httpx.post(f"{urls[0]}/api/v1/documents", timeout=30)
            assert created.status_code == 201, created.text
            doc_id = created.json()["doc_id"]
            for url in urls[1:]:
                read = httpx.get(f"{url}/api/v1/documents/{doc_id}", params={"path": "/title"}, timeout=30)
                assert read.status_code == 200 and read.json()["node_content"] == "Untitled", read.text
    finally:
        drop_schema(schema)


def _tokens_file(installed: Installed, writer: str, reader: str) -> Path:
    """The README's tokens file with its placeholders filled in: the read-write token's secret, and the SHA-256 of
    the read-only one."""
    tokens = json.loads(readme_block(README, "tokens-file"))
    by_access = {entry["access"]: entry for entry in tokens["tokens"]}
    assert set(by_access) == {"read-write", "read-only"} and "sha256" in by_access["read-only"]
    by_access["read-write"]["token"] = writer
    by_access["read-only"]["sha256"] = hashlib.sha256(reader.encode()).hexdigest()
    path = installed.cwd / "exposed-tokens.json"
    path.write_text(json.dumps(tokens), encoding="utf-8")
    return path


@pytest.mark.slow  # two servers from the wheel
def test_the_readme_s_exposed_server_runs_from_the_installed_wheel(installed: Installed) -> None:
    """The README's "Running it exposed": a token made by its first line, the server on every address with the
    tokens file and the allowed host, and its curl line (the host name resolved to this machine, plain HTTP on the
    free port instead of the proxy's HTTPS): the token reads, none is refused, another host name is refused, a
    read-only token may not write. Then the block behind the proxy: the same server on the loopback address."""
    lines = readme_block(README, "exposed").strip().splitlines()
    assert len(lines) == 4
    make_token = shlex.split(lines[0].split(" #")[0])
    assert make_token[0] == "python"
    token = subprocess.run([str(installed.bin / make_token[0]), *make_token[1:]], env=installed.env,
                           capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    assert len(token) >= 32
    reader = "a read-only token of the dashboard"
    tokens = _tokens_file(installed, token, reader)
    (serve,) = commands_of("\n".join(lines[1:3]), "schemadoc")
    assert "--host" in serve and serve[serve.index("--host") + 1] == "0.0.0.0"
    port = free_port()
    serve = with_port([str(tokens) if arg == "/etc/schemadoc/tokens.json" else arg for arg in serve], port)
    allowed = serve[serve.index("--allowed-hosts") + 1]
    curl = shlex.split(lines[3])
    assert curl[0] == "curl" and curl[-1] == f"https://{allowed}/api/v1/documents" and "$TOKEN" in lines[3]
    with serving(installed, serve, installed.cwd / "exposed", host=allowed) as url:
        line = lines[3].replace(f"https://{allowed}", f"http://{allowed}:{port}")  # the address, nothing else
        line = line.replace("curl ", f"curl -sf --resolve {allowed}:{port}:127.0.0.1 ", 1)  # ... and its resolution
        listed = subprocess.run(["bash", "-c", line], cwd=installed.cwd, env={**installed.env, "TOKEN": token},
                                capture_output=True, text=True, timeout=60, check=False)
        assert listed.returncode == 0, listed.stderr
        assert json.loads(listed.stdout)["documents"] == []
        api = f"{url}/api/v1/documents"
        assert httpx.get(api, headers={"host": allowed}, timeout=30).json()["error"]["code"] == "token-missing"
        assert httpx.get(api, headers={"host": "evil.example", "authorization": f"Bearer {token}"},
                         timeout=30).status_code == 421
        refused = httpx.post(api, headers={"host": allowed, "authorization": f"Bearer {reader}"}, timeout=30)
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "token-read-only"
        created = httpx.post(api, headers={"host": allowed, "authorization": f"Bearer {token}"}, timeout=30)
        assert created.status_code == 201, created.text

    (proxied,) = commands_of(readme_block(README, "exposed-proxy"), "schemadoc")
    proxied = with_port([str(tokens) if arg == "/etc/schemadoc/tokens.json" else arg for arg in proxied],
                        free_port())
    assert "--host" not in proxied  # the loopback address, behind the proxy
    with serving(installed, proxied, installed.cwd / "proxied", host=allowed) as url:
        api = f"{url}/api/v1/documents"
        assert httpx.get(api, headers={"host": allowed, "authorization": f"Bearer {token}"},
                         timeout=30).status_code == 200
        assert httpx.get(api, headers={"authorization": f"Bearer {token}"}, timeout=30).status_code == 421
