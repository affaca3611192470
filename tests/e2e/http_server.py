"""A real ``schemadoc serve --transport http`` process on 127.0.0.1, for the end-to-end tests."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from schemadoc.config import ENVIRONMENT

BOOK_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json"
START_TIMEOUT_SECONDS = 30.0
STOP_TIMEOUT_SECONDS = 15.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Server:
    """One ``schemadoc serve`` process; its stdout and stderr go to files (no pipe can fill up)."""

    def __init__(self, storage: Path, logs: Path, *, storage_url: str | None = None,
                 schema: Path = BOOK_SCHEMA, start_timeout: float = START_TIMEOUT_SECONDS,
                 program: Sequence[str] = (sys.executable, "-m", "schemadoc"), schema_args: Sequence[str] = (),
                 port: int | None = None, extra_args: tuple[str, ...] = (),
                 settings: dict[str, str] | None = None) -> None:
        """``program``: the command that is ``schemadoc``; ``schema_args`` replace ``--schema SCHEMA`` when given;
        ``port``: a given port (a restart on the same address) instead of a free one; ``extra_args``: more flags;
        ``settings``: environment variables of settings that have no flag (``{"METRICS": "false"}``)."""
        self.port = port if port is not None else free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        logs.mkdir(parents=True, exist_ok=True)
        self.stdout_path = logs / f"stdout-{self.port}.txt"
        self.stderr_path = logs / f"stderr-{self.port}.txt"
        env = {key: value for key, value in os.environ.items() if key not in ENVIRONMENT}
        env.update(settings or {})
        command = [*program, "serve", "--transport", "http", *(schema_args or ("--schema", str(schema))),
                   "--storage-dir", str(storage), "--host", "127.0.0.1", "--port", str(self.port)]
        if storage_url is not None:
            command += ["--storage-url", storage_url]
        command += extra_args
        with self.stdout_path.open("wb") as out, self.stderr_path.open("wb") as err:
            self.process = subprocess.Popen(command, cwd=logs, env=env, stdout=out, stderr=err)
        self._wait_healthy(start_timeout)

    def _wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"the server exited with {self.process.returncode}: {self.stderr}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1).json() == {"status": "healthy"}:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.kill()
        raise AssertionError(f"the server did not become healthy: {self.stderr}")

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    @property
    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    def stop(self) -> int:
        """SIGTERM, and the exit code once it has shut down."""
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError("the server did not stop within the timeout after SIGTERM") from None

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        """SIGTERM (what a test left running is stopped cleanly), and a kill whatever that gave."""
        try:
            if self.process.poll() is None:
                self.stop()
        finally:
            self.kill()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=STOP_TIMEOUT_SECONDS)


def connect(server: Server, source: str = "127.0.0.1", timeout: float = 20.0) -> socket.socket:
    """A raw connection to ``server`` from the address ``source`` (any of 127.0.0.0/8 is this machine, so a test
    can be several clients), for what an HTTP client library would not send."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=timeout, source_address=(source, 0))
    sock.settimeout(timeout)
    return sock


def read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (a reset after the answer counts as closed)."""
    data = b""
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(65536):
            data += chunk
    return data


def tokens_file(directory: Path, *entries: dict[str, str]) -> Path:
    """``directory/tokens.json`` holding ``entries`` (``name``, ``token`` or ``sha256``, ``access``), for
    ``--tokens-file``; the end-to-end tests' log check (``conftest.py``) finds its secrets there."""
    path = directory / "tokens.json"
    path.write_text(json.dumps({"tokens": list(entries)}), encoding="utf-8")
    return path
