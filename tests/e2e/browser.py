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
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

__all__ = ["CHROMIUM_MISSING", "Browser", "BrowserError", "Page", "Rendered", "chromium", "processes_using", "render"]

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


# -- a browser the test drives: the DevTools protocol over a pipe ------------------------------


class BrowserError(RuntimeError):
    """A DevTools command failed, or the page threw where a test evaluated something."""


class Browser:
    """Headless Chromium driven over ``--remote-debugging-pipe`` (the DevTools protocol, no extra package).

    Commands are NUL-terminated JSON written to the browser's fd 3; answers and events arrive on
    its fd 4. One reader thread files answers by id and keeps every event, so a test can look at
    the console and at uncaught exceptions afterwards. Offline but for the loopback, as
    :func:`render`. Close it (or use it as a context manager): every process of the run is killed.
    """

    def __init__(self, *, width: int = 1280, height: int = 800, timeout: float = 30.0,
                 extra_args: tuple[str, ...] = ()) -> None:
        import threading

        executable = chromium()
        if executable is None:
            raise RuntimeError(CHROMIUM_MISSING)
        self.timeout = timeout
        self.profile = Path(tempfile.mkdtemp(prefix="schemadoc-chromium-"))
        to_browser_r, to_browser_w = os.pipe()
        from_browser_r, from_browser_w = os.pipe()

        def wire_pipes() -> None:  # in the child: its fd 3 reads our commands, its fd 4 writes answers
            read_end, write_end = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)

        command = [executable, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                   "--disable-background-networking", "--disable-component-update", "--disable-sync",
                   "--disable-extensions", "--disable-default-apps", "--disable-crash-reporter",
                   "--disable-breakpad", "--disable-dev-shm-usage", "--mute-audio", "--hide-scrollbars",
                   f"--window-size={width},{height}", f"--host-resolver-rules={_OFFLINE}",
                   f"--user-data-dir={self.profile}", "--remote-debugging-pipe", *extra_args, "about:blank"]
        self._stderr = self.profile.with_suffix(".err").open("wb")
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=self._stderr, start_new_session=True, close_fds=False,
                                        preexec_fn=wire_pipes)  # fds 3 and 4 must be in place before exec
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._out = os.fdopen(to_browser_w, "wb", buffering=0)
        self._in = os.fdopen(from_browser_r, "rb", buffering=0)
        self._lock = threading.Lock()
        self._answered = threading.Condition()
        self._answers: dict[int, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self._next_id = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = self._in.read(1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._answered:
                    self._answers[-1] = {"error": {"message": "the browser closed its pipe"}}
                    self._answered.notify_all()
                return
            buffer += chunk
            while b"\0" in buffer:
                raw, buffer = buffer.split(b"\0", 1)
                message = json.loads(raw)
                with self._answered:
                    if "id" in message:
                        self._answers[message["id"]] = message
                    else:
                        self.events.append(message)
                    self._answered.notify_all()

    def send(self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None,
             timeout: float | None = None) -> dict[str, Any]:
        """Run one DevTools command and return its result (``BrowserError`` if it failed)."""
        with self._lock:
            self._next_id += 1
            ident = self._next_id
            message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
            if session is not None:
                message["sessionId"] = session
            self._out.write(json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + (timeout or self.timeout)
        with self._answered:
            while ident not in self._answers:
                if -1 in self._answers:
                    raise BrowserError(f"{method}: {self._answers[-1]['error']['message']}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{method}: no answer within {timeout or self.timeout} s")
                self._answered.wait(left)
            answer = self._answers.pop(ident)
        if "error" in answer:
            raise BrowserError(f"{method}: {answer['error'].get('message')}")
        result: dict[str, Any] = answer.get("result", {})
        return result

    def new_page(self, *, width: int = 1280, height: int = 800, dark: bool = False) -> Page:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, target, session)
        for domain in ("Page.enable", "Runtime.enable", "Log.enable", "Network.enable"):
            page.send(domain)
        page.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        page.send("Emulation.setEmulatedMedia",
                  {"features": [{"name": "prefers-color-scheme", "value": "dark" if dark else "light"}]})
        return page

    def close(self) -> None:
        with contextlib.suppress(OSError, BrowserError, TimeoutError):
            self.send("Browser.close", timeout=5)
        _kill_everything(self.process, self.profile)
        for stream in (self._out, self._in, self._stderr):
            with contextlib.suppress(OSError):
                stream.close()
        shutil.rmtree(self.profile, ignore_errors=True)
        self.profile.with_suffix(".err").unlink(missing_ok=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Page:
    """One tab of a :class:`Browser`: navigate, evaluate, wait for a condition, click, type, screenshot."""

    def __init__(self, browser: Browser, target: str, session: str) -> None:
        self.browser = browser
        self.target = target
        self.session = session

    def send(self, method: str, params: dict[str, Any] | None = None, timeout: float | None = None) -> dict[str, Any]:
        return self.browser.send(method, params, session=self.session, timeout=timeout)

    def close(self) -> None:
        with contextlib.suppress(BrowserError, TimeoutError):
            self.browser.send("Target.closeTarget", {"targetId": self.target})

    def goto(self, url: str) -> None:
        self.send("Page.navigate", {"url": url})
        self.wait_for("document.readyState === 'complete'")

    def evaluate(self, expression: str, *, timeout: float | None = None) -> Any:
        """The value of a JavaScript expression in the page (promises awaited), or ``BrowserError``."""
        result = self.send("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                                "returnByValue": True}, timeout=timeout)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise BrowserError(details.get("exception", {}).get("description") or details.get("text"))
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str, *, timeout: float | None = None, message: str = "") -> Any:
        """Evaluate ``expression`` until it is truthy and return its value; ``TimeoutError`` otherwise."""
        limit = timeout or self.browser.timeout
        deadline = time.monotonic() + limit
        value: Any = None
        probe = f"(() => {{ const v = ({expression}); return v instanceof Node ? true : v; }})()"
        while time.monotonic() < deadline:
            with contextlib.suppress(BrowserError):
                value = self.evaluate(probe)
                if value:
                    return value
            time.sleep(0.05)
        raise TimeoutError(f"{message or expression} not true within {limit} s (last value {value!r})")

    def wait_for_selector(self, selector: str, *, timeout: float | None = None) -> None:
        self.wait_for(f"document.querySelector({json.dumps(selector)})", timeout=timeout, message=selector)

    def text(self, selector: str) -> str:
        value = self.evaluate(f"document.querySelector({json.dumps(selector)})?.textContent ?? null")
        if value is None:
            raise BrowserError(f"no element {selector}")
        return str(value)

    def count(self, selector: str) -> int:
        return int(self.evaluate(f"document.querySelectorAll({json.dumps(selector)}).length"))

    def click(self, selector: str) -> None:
        """A real mouse click (pressed and released) at the middle of the element, scrolled into view."""
        self.wait_for_selector(selector)
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
            " return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1], "button": "left",
                                                   "clickCount": 1})

    def fill(self, selector: str, text: str) -> None:
        """Focus a field, select what it holds and type ``text`` in its place (as a user would)."""
        self.click(selector)
        self.evaluate(f"document.querySelector({json.dumps(selector)}).select()")
        self.send("Input.insertText", {"text": text})

    def press(self, key: str) -> None:
        """One key (``Enter``, ``ArrowDown``, ``Escape``...) pressed and released on the focused element."""
        codes = {"Enter": 13, "Escape": 27, "ArrowUp": 38, "ArrowDown": 40, "ArrowLeft": 37, "ArrowRight": 39,
                 "Tab": 9, "Home": 36, "End": 35}
        common = {"key": key, "code": key, "windowsVirtualKeyCode": codes.get(key, 0)}
        self.send("Input.dispatchKeyEvent", {"type": "rawKeyDown", **common,
                                             **({"text": "\r"} if key == "Enter" else {})})
        self.send("Input.dispatchKeyEvent", {"type": "keyUp", **common})

    def screenshot(self, path: Path) -> None:
        import base64

        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))

    def requested_urls(self) -> list[str]:
        """Every URL this page requested so far, in order."""
        return [event["params"]["request"]["url"] for event in list(self.browser.events)
                if event.get("sessionId") == self.session and event.get("method") == "Network.requestWillBeSent"]

    def console_errors(self) -> list[str]:
        """Uncaught exceptions and console errors this page logged so far."""
        found = []
        for event in list(self.browser.events):
            if event.get("sessionId") != self.session:
                continue
            params = event.get("params", {})
            if event.get("method") == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                found.append(details.get("exception", {}).get("description") or details.get("text", ""))
            elif event.get("method") == "Runtime.consoleAPICalled" and params.get("type") == "error":
                found.append(" ".join(str(arg.get("value", arg.get("description", ""))) for arg in params["args"]))
            elif event.get("method") == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                found.append(params["entry"].get("text", ""))
        return found
