"""Checks before a run: every mistake that would waste a whole run is refused in seconds, with its reason.

The options (placeholders in ``--mcp-command``, report paths) are checked first, then each target is
reached and spoken to the way the suite will speak to it: the command is started and its MCP session
initialised and asked for its tools, an MCP URL is initialised, a REST URL must answer the spec's
``GET /api/v1/schema`` with a JSON object. A failure is a :class:`Refused` with the reason, which the
command prints before exiting with status 2.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["PLACEHOLDERS", "Refused", "check_command", "check_report_path", "reach"]

PLACEHOLDERS = ("{schema}", "{storage_dir}")
PROBE_TIMEOUT = 10.0
"""Seconds a target may take to answer the first request of a run."""

_PLACEHOLDER = re.compile(r"\{[^{}\s]*\}")


class Refused(Exception):
    """The run cannot start: the message says why."""


def check_command(command: str) -> None:
    """``--mcp-command`` splits like a shell line and uses only the known placeholders."""
    try:
        parts = shlex.split(command)
    except ValueError as error:
        raise Refused(f"--mcp-command cannot be split like a shell line: {error}") from None
    if not parts:
        raise Refused("--mcp-command is empty")
    unknown = sorted({match for part in parts for match in _PLACEHOLDER.findall(part) if match not in PLACEHOLDERS})
    if unknown:
        raise Refused(f"--mcp-command uses unknown placeholder(s) {', '.join(unknown)}; the known ones are "
                      f"{', '.join(PLACEHOLDERS)}")


def check_report_path(option: str, path: str) -> None:
    """A report can be written at ``path``: not a directory, in a directory that exists and is writable."""
    target = Path(path)
    if target.is_dir():
        raise Refused(f"{option} {path}: is a directory")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise Refused(f"{option} {path}: the directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise Refused(f"{option} {path}: not writable")


def reach(*, rest_url: str = "", mcp_url: str = "", mcp_command: str = "", mode: str = "auto",
          schema: Path, timeout: float = PROBE_TIMEOUT) -> dict[str, Any]:
    """Speak to every target once; what each said (e.g. the number of tools declared), or :class:`Refused`."""
    found: dict[str, Any] = {}
    if rest_url:
        found["rest"] = _reach_rest(rest_url, timeout)
    if mcp_url:
        found["mcp_url"] = _reach_mcp_url(mcp_url, mode, timeout)
    if mcp_command:
        found["mcp_command"] = _reach_command(mcp_command, mode, schema, timeout)
    return found


def _reach_rest(url: str, timeout: float) -> str:
    import httpx

    where = f"{url}/api/v1/schema"
    try:
        response = httpx.get(where, timeout=timeout)
    except httpx.HTTPError as error:
        raise Refused(f"cannot reach the REST API: GET {where}: {type(error).__name__}: {error}") from None
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code != 200 or not isinstance(body, dict) or "root_schema" not in body:
        raise Refused(f"{url} does not serve the spec's REST API: GET {where} answered {response.status_code} "
                      f"{response.text[:200]!r} (expected 200 with a root_schema)")
    return "GET /api/v1/schema: 200"


def _reach_mcp_url(url: str, mode: str, timeout: float) -> int:
    import anyio
    from mcp import Client

    async def probe() -> int:
        with anyio.fail_after(timeout):
            async with Client(url, mode=mode) as client:
                return len((await client.list_tools()).tools)

    try:
        return anyio.run(probe)
    except BaseException as error:  # every way of failing is a reason to refuse
        if isinstance(error, KeyboardInterrupt):
            raise
        raise Refused(f"no MCP server at {url} ({mode}): {_cause(error)}") from None


def _reach_command(command: str, mode: str, schema: Path, timeout: float) -> int:
    import anyio

    from .stdio import StdioServer

    root = Path(tempfile.mkdtemp(prefix="schemadoc-conformance-probe-"))
    server = StdioServer(command, schema, root / "storage", mode=mode, stderr_path=root / "stderr.log",
                         start_timeout=timeout)
    try:
        try:
            server.start()
        except (RuntimeError, OSError) as error:
            raise Refused(f"--mcp-command did not start an MCP server: {_cause(error)}") from None

        async def tools() -> int:
            with anyio.fail_after(timeout):
                listed = await server.run(lambda client: client.list_tools())
            return len(listed.tools)

        try:
            return anyio.run(tools)
        except BaseException as error:
            if isinstance(error, KeyboardInterrupt):
                raise
            raise Refused(f"--mcp-command started, but tools/list failed: {_cause(error)}\nstderr:\n"
                          f"{server.stderr()[-2000:]}") from None
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def _cause(error: BaseException) -> str:
    """The innermost exception of a group, as one line or a few."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    text = str(error) or type(error).__name__
    return f"{type(error).__name__}: {text}" if str(error) else text
