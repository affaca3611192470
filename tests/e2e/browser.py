"""Headless Chromium for the end-to-end tests: the DOM of a page after its scripts have run.

Each run gets a fresh profile directory and its own process group. Whatever happens (a normal
exit, a timeout, an exception), every process of the run is killed before :func:`render`
returns: the process group, and any process still naming the profile directory in its command
line (Chromium's crash handler leaves the group).

Every host name other than 127.0.0.1 and localhost resolves to nothing
(``--host-resolver-rules``), so a page that needs anything from the internet fails here exactly
as it would on a machine without internet access.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

__all__ = ["CHROMIUM_MISSING", "Rendered", "chromium", "processes_using", "render"]

CHROMIUM_MISSING = "chromium not installed: make docs-browser installs it"
_NAMES = ("chromium", "chromium-browser")
_OFFLINE = "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"


def chromium() -> str | None:
    """The Chromium executable: ``$CHROMIUM``, else ``chromium`` / ``chromium-browser`` on the PATH."""
    explicit = os.environ.get("CHROMIUM")
    if explicit:
        return shutil.which(explicit)
    for name in _NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


@dataclass(frozen=True)
class Rendered:
    dom: str         # the serialised DOM once the page settled
    seconds: float   # wall time of the whole Chromium run (start, load, scripts, dump)
    stderr: str
    profile: Path    # the profile directory the run used (removed afterwards)


def processes_using(marker: str) -> list[psutil.Process]:
    """Every live process whose command line mentions ``marker``."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        try:
            if any(marker in part for part in process.info["cmdline"] or ()) and process.status() != "zombie":
                found.append(process)
        except psutil.Error:
            continue
    return found


def _kill_everything(process: subprocess.Popen[bytes], profile: Path) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=10)
    deadline = time.monotonic() + 10
    while (stragglers := processes_using(str(profile))) and time.monotonic() < deadline:
        for straggler in stragglers:
            with contextlib.suppress(psutil.Error):
                straggler.kill()
        psutil.wait_procs(stragglers, timeout=2)


def render(url: str, *, timeout: float = 60.0, virtual_time_ms: int = 10_000) -> Rendered:
    """Load ``url`` in headless Chromium (offline but for the loopback) and return the rendered DOM.

    ``virtual_time_ms``: how much page time scripts get before the DOM is dumped (Chromium runs
    it faster than real time while nothing is pending). ``TimeoutError`` after ``timeout``
    seconds of wall time; ``RuntimeError`` if Chromium fails.
    """
    executable = chromium()
    if executable is None:
        raise RuntimeError(CHROMIUM_MISSING)
    profile = Path(tempfile.mkdtemp(prefix="schemadoc-chromium-"))
    command = [executable, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-extensions", "--disable-default-apps", "--disable-crash-reporter",
               "--disable-breakpad", "--disable-dev-shm-usage", "--mute-audio",
               f"--host-resolver-rules={_OFFLINE}", f"--user-data-dir={profile}",
               f"--virtual-time-budget={virtual_time_ms}", "--dump-dom", url]
    stdout_path, stderr_path = profile.with_suffix(".out"), profile.with_suffix(".err")
    started = time.perf_counter()
    try:
        with stdout_path.open("wb") as out, stderr_path.open("wb") as err:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                       start_new_session=True)
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"chromium did not finish {url} within {timeout} s") from None
        finally:
            _kill_everything(process, profile)
        seconds = time.perf_counter() - started
        stderr = stderr_path.read_text(errors="replace")
        if code != 0:
            raise RuntimeError(f"chromium exited with {code} on {url}: {stderr[-2000:]}")
        return Rendered(stdout_path.read_text(errors="replace"), seconds, stderr, profile)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
        stdout_path.unlink(missing_ok=True)
        stderr_path.unlink(missing_ok=True)
