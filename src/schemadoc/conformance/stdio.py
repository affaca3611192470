"""An MCP server started by a command over stdio, kept by the suite so it can stop, kill and restart it.

The process and its ``mcp.Client`` live on a thread with an event loop of their own: one server then
serves every test of the run (starting a process per test would cost a second each), tests running on
other event loops reach it through :attr:`StdioServer.client`, and the restart and durability clauses
can stop it gracefully or with SIGKILL and start it again on the same storage directory.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import shlex
import signal
import subprocess
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from mcp import Client, types
from mcp.shared.message import SessionMessage

__all__ = ["StdioServer", "command_line"]

START_TIMEOUT = 60.0
STOP_GRACE = 5.0


def command_line(command: str, schema: Path, storage_dir: Path) -> list[str]:
    """The argv of ``command`` with ``{schema}`` and ``{storage_dir}`` replaced (after splitting, so paths
    with spaces stay one argument)."""
    return [part.replace("{schema}", str(schema)).replace("{storage_dir}", str(storage_dir))
            for part in shlex.split(command)]


@asynccontextmanager
async def _pipes(process: Process) -> AsyncIterator[Any]:
    """The transport of an already started process: newline-delimited JSON-RPC on its stdin/stdout."""
    assert process.stdin is not None and process.stdout is not None
    stdin, stdout = process.stdin, process.stdout
    to_client, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    write_stream, from_client = anyio.create_memory_object_stream[SessionMessage](16)

    async def read() -> None:
        buffer = b""
        async with to_client:
            try:
                async for chunk in stdout:
                    lines = (buffer + chunk).split(b"\n")
                    buffer = lines.pop()
                    for line in lines:
                        if not line.strip():
                            continue
                        try:
                            message: SessionMessage | Exception = SessionMessage(
                                types.jsonrpc_message_adapter.validate_json(line, by_name=False))
                        except ValueError as error:
                            message = error
                        await to_client.send(message)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                pass

    async def write() -> None:
        async with from_client:
            try:
                async for message in from_client:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await stdin.send(data.encode())
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                await to_client.aclose()

    async with anyio.create_task_group() as group:
        group.start_soon(read)
        group.start_soon(write)
        try:
            yield read_stream, write_stream
        finally:
            group.cancel_scope.cancel()


class StdioServer:
    """``command`` (with placeholders) served on stdio, on ``storage_dir``, driven in MCP ``mode``."""

    def __init__(self, command: str, schema: Path, storage_dir: Path, *, mode: str = "auto",
                 stderr_path: Path | None = None, start_timeout: float = START_TIMEOUT) -> None:
        self.argv = command_line(command, schema, storage_dir)
        self.start_timeout = start_timeout
        self.storage_dir = storage_dir
        self.mode = mode
        self.stderr_path = stderr_path or storage_dir.parent / f"{storage_dir.name}.stderr.log"
        self.starts = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._client: Client | None = None
        self._process: Process | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None

    # -- life cycle (called from any thread) --------------------------------------------------------

    def start(self) -> None:
        """Start the process and connect; raises what went wrong (with the server's stderr) if it cannot."""
        self.storage_dir.mkdir(parents=True, exist_ok=True)
        self._ready.clear()
        self._failure = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), name="stdio-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(self.start_timeout):
            self.kill()
            raise RuntimeError(f"{self.argv}: no MCP session after {self.start_timeout:.0f} s; stderr:\n"
                               f"{self.stderr()}")
        if self._failure is not None:
            self._thread.join(STOP_GRACE)
            raise RuntimeError(f"{self.argv} did not start an MCP session ({self._failure!r}); stderr:\n"
                               f"{self.stderr()}") from self._failure
        self.starts += 1

    def stop(self) -> None:
        """Close the session and stdin, wait for the process to end (SIGKILL after a grace period)."""
        loop, stop, thread = self._loop, self._stop, self._thread
        if loop is not None and stop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(stop.set)
        if thread is not None:
            thread.join(START_TIMEOUT)
        self._thread = None

    def kill(self) -> None:
        """SIGKILL the process group at once (no chance to flush anything), then wind the session down."""
        process = self._process
        if process is not None and process.returncode is None:
            os.killpg(process.pid, signal.SIGKILL)
        self.stop()

    def restart(self, *, kill: bool = False) -> None:
        """Stop (or kill) and start again on the same storage directory."""
        if kill:
            self.kill()
        else:
            self.stop()
        self.start()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._client is not None

    def stderr(self) -> str:
        try:
            return self.stderr_path.read_text(encoding="utf-8", errors="replace")[-4000:]
        except OSError:
            return ""

    # -- calls (from any event loop) -----------------------------------------------------------------

    @property
    def client(self) -> Any:
        """An object with the ``mcp.Client`` methods, usable from any event loop."""
        return _ClientProxy(self)

    async def run(self, make: Callable[[Client], Any]) -> Any:
        """Await ``make(client)`` on the server's loop, from the caller's loop."""
        loop, client = self._loop, self._client
        if loop is None or client is None:
            raise RuntimeError("the stdio server is not running")
        future = asyncio.run_coroutine_threadsafe(make(client), loop)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            future.cancel()
            raise

    # -- the thread ------------------------------------------------------------------------------------

    async def _run(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        try:
            with self.stderr_path.open("a", encoding="utf-8") as stderr:
                process = await anyio.open_process(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                   stderr=stderr, start_new_session=True)
                self._process = process
                try:
                    async with Client(_pipes(process), mode=self.mode) as client:
                        self._client = client
                        self._ready.set()
                        await self._stop.wait()
                finally:
                    self._client = None
                    await self._end(process)
        except BaseException as failure:  # reported by start(); a dead server fails the calls that follow
            self._failure = failure
        finally:
            self._client = None
            self._ready.set()

    async def _end(self, process: Process) -> None:
        with anyio.CancelScope(shield=True):
            if process.stdin is not None:
                with suppress(OSError):
                    await process.stdin.aclose()
            with anyio.move_on_after(STOP_GRACE):
                while process.returncode is None:
                    await anyio.sleep(0.05)
            if process.returncode is None:
                with suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                with anyio.move_on_after(STOP_GRACE):
                    await process.wait()
            self._process = None


class _ClientProxy:
    """The ``mcp.Client`` of a :class:`StdioServer`, callable from another event loop."""

    def __init__(self, server: StdioServer) -> None:
        self._server = server

    def __getattr__(self, name: str) -> Any:
        client = self._server._client
        if client is None:
            raise RuntimeError("the stdio server is not running")
        attribute = getattr(client, name)
        if not inspect.iscoroutinefunction(attribute):
            return attribute

        async def call(*args: Any, **kwargs: Any) -> Any:
            return await self._server.run(lambda current: getattr(current, name)(*args, **kwargs))

        return call
