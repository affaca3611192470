"""The pinned MCP Inspector (the TypeScript SDK's command line), installed once for every test that uses it.

``make inspector`` installs it into ``.tools/npm``; a test run on a fresh clone installs it the same way the first
time a test asks (``installed_inspector()``), under a file lock, so that the xdist workers of one run (and several
runs) install it once and every test that needs it sees it, whichever file asked first. It is installed into a
directory of its own and renamed into place only when npm succeeded, so an interrupted install never passes for
a finished one. ``MCP_INSPECTOR`` names an Inspector installed elsewhere."""

from __future__ import annotations

import fcntl
import functools
import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VERSION = "0.15.0"
PACKAGE = f"@modelcontextprotocol/inspector@{VERSION}"
TOOLS = ROOT / ".tools"
PREFIX = TOOLS / "npm"
BIN = Path("node_modules") / ".bin" / "mcp-inspector"
INSTALL_TIMEOUT_SECONDS = 600


def _given() -> Path | None:
    given = os.environ.get("MCP_INSPECTOR")
    return Path(given) if given else None


@functools.cache
def installed_inspector() -> tuple[list[str] | None, str]:
    """``([node, inspector script], "")`` to run the Inspector, or ``(None, why not)``: node or npm missing, or the
    install from npm failed. Installs it first when it is not there."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None:
        return None, "the MCP Inspector needs node, and this machine has none on its PATH"
    given = _given()
    if given is not None:
        return ([node, str(given.resolve())], "") if given.exists() else (None, f"MCP_INSPECTOR={given} is missing")
    script = PREFIX / BIN
    if not script.exists():
        if npm is None:
            return None, "the MCP Inspector is not installed (make inspector) and there is no npm to install it"
        TOOLS.mkdir(exist_ok=True)
        with (TOOLS / "inspector.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another worker may be installing it: wait for it, then look again
            if not script.exists():
                failed = _install(npm)
                if failed:
                    return None, f"the pinned MCP Inspector could not be installed from npm: {failed}"
    return [node, str(script.resolve())], ""


def _install(npm: str) -> str:
    """Install into a directory of this process's own, then rename it into place; the error's tail, or ``""``."""
    staging = TOOLS / f"npm.{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    done = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(staging), PACKAGE],
                          capture_output=True, text=True, timeout=INSTALL_TIMEOUT_SECONDS, check=False)
    if done.returncode != 0 or not (staging / BIN).exists():
        shutil.rmtree(staging, ignore_errors=True)
        return (done.stderr or done.stdout)[-500:] or "npm installed no mcp-inspector"
    shutil.rmtree(PREFIX, ignore_errors=True)  # a leftover without its command
    os.rename(staging, PREFIX)
    return ""
