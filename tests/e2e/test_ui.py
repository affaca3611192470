"""The browser page at /ui, end to end: a real server process, headless Chromium, the public REST API.

Each test drives the page as a person would (real mouse clicks and typing through the DevTools
protocol, see ``browser.py``) while a second client writes through REST, and checks what the page
shows against what the server holds. Skipped, with the reason, where Chromium is not installed.

``SCHEMADOC_UI_SCREENSHOTS=docs/screenshots`` (a directory) makes the tests save the screenshots
``docs/ui.md`` shows; without it they are taken into the test's temporary directory.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import orjson
import pytest
from browser import CHROMIUM_MISSING, Browser, Page, chromium
from http_server import BOOK_SCHEMA, Server, free_port

LARGE_MIB = 20
_GENERATE = Path(__file__).resolve().parents[2] / "benchmarks" / "generate.py"


def make_book(size_mib: float) -> Any:
    """A generated book of about ``size_mib`` MiB (benchmarks/generate.py)."""
    spec = importlib.util.spec_from_file_location("schemadoc_bench_generate", _GENERATE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_book(size_mib)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    if chromium() is None:
        pytest.skip(CHROMIUM_MISSING)
    base = tmp_path_factory.mktemp("ui")
    with Server(base / "data", base / "logs") as running:
        yield running


@pytest.fixture(scope="module")
def browser(server: Server) -> Iterator[Browser]:
    with Browser(width=1280, height=800) as driven:
        yield driven


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    opened = browser.new_page(width=1280, height=800)
    try:
        yield opened
    finally:
        errors = [error for error in opened.console_errors() if "Failed to load resource" not in error]
        opened.close()
        assert not errors, f"the page logged errors: {errors}"


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    return Path(os.environ.get("SCHEMADOC_UI_SCREENSHOTS") or tmp_path)


class Client:
    """The second client: plain REST calls, as an agent or a script would make them."""

    def __init__(self, url: str) -> None:
        self.api = f"{url}/api/v1"

    def create(self) -> str:
        answer = httpx.post(f"{self.api}/documents", timeout=30)
        assert answer.status_code == 201, answer.text
        return str(answer.json()["doc_id"])

    def read(self, doc_id: str, path: str = "/") -> tuple[Any, int]:
        answer = httpx.get(f"{self.api}/documents/{doc_id}", params={"path": path}, timeout=30)
        assert answer.status_code == 200, answer.text
        return answer.json()["node_content"], int(answer.json()["version"])

    def version(self, doc_id: str) -> int:
        return self.read(doc_id, "/title")[1]

    def put(self, doc_id: str, path: str, value: Any, version: int | None = None) -> int:
        version = self.version(doc_id) if version is None else version
        answer = httpx.put(f"{self.api}/documents/{doc_id}", params={"path": path},
                           content=orjson.dumps({"node_data": value, "version": version}),
                           headers={"content-type": "application/json"}, timeout=120)
        assert answer.status_code == 200, answer.text
        return int(answer.json()["version"])


@pytest.fixture(scope="module")
def client(server: Server) -> Client:
    return Client(server.url)


def _open(page: Page, server: Server | None, doc_id: str, query: str = "", base: str = "") -> None:
    root = base or (server.url if server is not None else "")
    page.goto(f"{root}/ui/documents/{doc_id}{query}")
    page.wait_for("document.querySelector('#live-state')?.dataset.state === 'live'", message="the live stream")
    page.wait_for("!document.querySelector('#panel').hasAttribute('aria-busy')", message="the node panel")


def _item(pointer: str) -> str:
    return f'li[role=treeitem][data-ptr="{pointer}"]'


def _select(page: Page, pointer: str) -> None:
    page.click(f"{_item(pointer)} > .row > .key")
    page.wait_for(f"document.querySelector('{_item(pointer)}').getAttribute('aria-selected') === 'true'"
                  " && !document.querySelector('#panel').hasAttribute('aria-busy')"
                  f" && document.querySelector('#panel h2')?.textContent === {json.dumps(pointer or '/')}")


def _query(page: Page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.evaluate("location.href")).query)


def test_the_list_creates_deletes_and_undeletes(page: Page, server: Server, client: Client, shots: Path) -> None:
    kept = client.create()
    client.put(kept, "/title", "A list of things")
    page.goto(f"{server.url}/ui")  # redirected to /ui/
    page.wait_for(f"document.querySelector('tr[data-doc-id=\"{kept}\"]')")
    assert page.evaluate("location.pathname") == "/ui/"
    row = f'tr[data-doc-id="{kept}"]'
    assert page.text(f"{row} .version") == "2"
    assert page.text(f"{row} .state") == "active"
    page.screenshot(shots / "list.png")

    page.click(f"{row} button.delete")
    page.wait_for(f"document.querySelector('{row} .state').textContent === 'deleted'")
    assert httpx.get(f"{client.api}/documents/{kept}").json()["error"]["code"] == "document-not-found"
    page.click(f"{row} button.undelete")
    page.wait_for(f"document.querySelector('{row} .state').textContent === 'active'")
    assert client.read(kept, "/title")[0] == "A list of things"

    page.click("#create-document")  # the form, prefilled with the schema's defaults: create as it is
    page.click("#create-submit")
    page.wait_for("location.pathname.startsWith('/ui/documents/')")
    made = page.evaluate("location.pathname").rsplit("/", 1)[1]
    assert client.read(made, "/title") == ("Untitled", 1)
    page.wait_for(f"document.querySelector('{_item('/title')}')")
    page.evaluate("history.back()")  # the browser's back button: the list again, with the new document
    page.wait_for(f"document.querySelector('tr[data-doc-id=\"{made}\"]')")


def test_search_across_documents(page: Page, server: Server, client: Client) -> None:
    doc_id = client.create()
    client.put(doc_id, "/title", "Lighthouse keepers of the northern coast")
    page.goto(f"{server.url}/ui/?q=northern")
    page.wait_for("document.querySelector('.hits a')")
    assert doc_id in page.text(".hits a") and "/title" in page.text(".hits a")
    page.click(".hits a")
    page.wait_for(f"document.querySelector('{_item('/title')}')?.getAttribute('aria-selected') === 'true'")


def test_a_document_opens_with_breadcrumbs_schema_and_addresses(page: Page, server: Server, client: Client,
                                                              shots: Path) -> None:
    doc_id = client.create()
    version = client.put(doc_id, "/chapters", [{"id": "ch-1", "title": "One", "sections": [
        {"title": "First", "paragraphs": [{"text": "It was a dark and stormy night."}]}]}])
    _open(page, server, doc_id)
    assert page.text("#version") == f"version {version}"
    _select(page, "/metadata/status")
    assert [page.evaluate(f"document.querySelectorAll('.crumbs .crumb')[{i}].textContent") for i in range(3)] == [
        "document", "metadata", "status"]
    page.wait_for("document.querySelector('#schema .schema-description')?.textContent.includes('life cycle')")
    assert "review" in page.text("#schema dl.constraints")
    assert page.evaluate("document.querySelector('#field').tagName") == "SELECT"  # an enum gets a choice
    assert _query(page)["pointer"] == ["/metadata/status"]

    _select(page, "/title")
    assert page.evaluate("document.querySelector('#field').value") == "Untitled"
    page.evaluate("history.back()")
    page.wait_for("document.querySelector('#panel h2')?.textContent === '/metadata/status'")

    # keyboard: Home, Down to the title, Enter selects it
    page.evaluate(f"document.querySelector('{_item('')}').focus()")
    page.press("ArrowDown")
    page.press("Enter")
    page.wait_for("document.querySelector('#panel h2')?.textContent === '/title'")

    # a deep link with a pointer opens its containers
    _open(page, server, doc_id, "?pointer=/chapters/0/sections/0/paragraphs/0/text&tab=preview")
    page.wait_for(f"document.querySelector('{_item('/chapters/0/sections/0/paragraphs/0/text')}')"
                  "?.getAttribute('aria-selected') === 'true'")
    page.wait_for("document.querySelector('#preview')?.textContent.includes('dark and stormy')")
    page.screenshot(shots / "document.png")


def test_insert_move_and_delete_by_hand(page: Page, server: Server, client: Client) -> None:
    doc_id = client.create()
    client.put(doc_id, "/tags", ["alpha", "beta"])
    _open(page, server, doc_id, "?pointer=/tags")
    page.click("#panel details.tool summary")  # Insert an item
    page.fill("#insert-value", '"gamma"')
    page.fill("#insert-at", "0")
    page.click("#insert-item")
    page.wait_for("document.querySelector('#edit-result .ok')")
    assert client.read(doc_id, "/tags") == (["gamma", "alpha", "beta"], 3)
    page.wait_for(f"document.querySelector('{_item('/tags/0')} .summary')?.textContent === '\"gamma\"'")

    _select(page, "/tags/2")
    page.click("#panel details.tool summary")  # Move this node
    page.fill("#move-to", "/tags/0")
    page.click("#move-node")
    page.wait_for("document.querySelector('#panel h2')?.textContent === '/tags/0'")
    assert client.read(doc_id, "/tags") == (["beta", "gamma", "alpha"], 4)

    page.click("#delete-node")
    page.wait_for("document.querySelector('#panel h2')?.textContent === '/tags'")
    assert client.read(doc_id, "/tags") == (["gamma", "alpha"], 5)
    page.wait_for(f"document.querySelectorAll('{_item('/tags')} > ul > li[role=treeitem]').length === 2")


def test_next_incomplete_and_outline_are_one_click_away(page: Page, server: Server, client: Client) -> None:
    doc_id = client.create()
    _open(page, server, doc_id)
    page.click("#next-incomplete")  # the chapters, still empty (a value equal to its default is not incomplete)
    page.wait_for("document.querySelector('#panel h2')?.textContent === '/chapters'")
    assert "empty-array" in page.text("#incomplete")
    version = client.put(doc_id, "/chapters", [{"id": "ch-1", "title": "One", "sections": [
        {"title": "S", "paragraphs": [{"text": "Hi."}]}]}])
    client.put(doc_id, "/tags", ["kept"], version)
    page.click("#next-incomplete")  # then the author, still absent: its parent opens, where it would go
    page.wait_for("document.querySelector('#panel h2')?.textContent === '/metadata'")
    assert "/metadata/author (absent)" in page.text("#incomplete")
    page.click("#show-outline")
    page.wait_for("document.querySelector('#outline')")
    assert _query(page)["tab"] == ["outline"]
    page.click("#tab-value")
    page.wait_for("document.querySelector('#panel[data-tab=value] #field')")


def test_dark_theme_follows_the_system_and_the_switch(browser: Browser, server: Server, client: Client,
                                                     shots: Path) -> None:
    doc_id = client.create()
    client.put(doc_id, "/chapters", [{"id": "ch-1", "title": "Night", "sections": [
        {"title": "Harbour", "paragraphs": [{"text": "The lamps came on one by one."}]}]}])
    page = browser.new_page(width=1280, height=800, dark=True)
    try:
        _open(page, server, doc_id, "?pointer=/chapters/0/title")
        assert page.evaluate("document.documentElement.dataset.theme") == "dark"
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert background == "rgb(21, 24, 28)"
        page.screenshot(shots / "document-dark.png")
        page.click("#theme")
        page.wait_for("document.documentElement.dataset.theme === 'light'")
        assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(255, 255, 255)"
        page.evaluate("localStorage.removeItem('schemadoc.theme')")
    finally:
        page.close()


@pytest.mark.parametrize(("width", "columns"), [(1920, 3), (1024, 2), (640, 1)])
def test_the_layout_fits_the_screen(browser: Browser, server: Server, client: Client, width: int,
                                    columns: int) -> None:
    doc_id = client.create()
    page = browser.new_page(width=width, height=800)
    try:
        _open(page, server, doc_id)
        tracks = page.evaluate("getComputedStyle(document.querySelector('.panes')).gridTemplateColumns")
        assert len(tracks.split()) == columns, tracks
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # no sideways scrolling
    finally:
        page.close()


def test_a_large_document_opens_from_bounded_reads_and_expands_stubs(page: Page, server: Server, client: Client,
                                                                     shots: Path) -> None:
    doc_id = client.create()
    client.put(doc_id, "/", make_book(LARGE_MIB), 1)
    _open(page, server, doc_id)
    chapters = _item("/chapters")
    assert page.evaluate(f"document.querySelector('{chapters}').getAttribute('aria-expanded')") == "false"
    page.click(f"{chapters} > .row > .twisty")
    page.wait_for(f"document.querySelector('{chapters}').getAttribute('aria-expanded') === 'true'")
    assert page.count(f"{chapters} > ul > li[role=treeitem]") == 50
    page.click(f"{chapters} > ul > li.more button")
    page.wait_for(f"document.querySelectorAll('{chapters} > ul > li[role=treeitem]').length === 100")
    page.click(f"{_item('/chapters/60')} > .row > .twisty")
    page.wait_for(f"document.querySelector('{_item('/chapters/60/sections')}')")
    # keyboard: Right opens the focused stub
    page.evaluate(f"document.querySelector('{_item('/chapters/60/sections')}').focus()")
    page.press("ArrowRight")
    page.wait_for(f"document.querySelector('{_item('/chapters/60/sections/0')}')")
    _select(page, "/chapters/60/title")
    page.screenshot(shots / "large-document.png")
    reads = [url for url in page.requested_urls() if f"/api/v1/documents/{doc_id}?" in url]
    assert reads
    unbounded = [url for url in reads if not {"max_depth", "max_bytes"} & set(parse_qs(urlsplit(url).query))]
    assert not unbounded, f"document reads without a bound: {unbounded}"


def test_a_second_client_writes_and_the_page_follows_live(page: Page, server: Server, client: Client,
                                                          shots: Path) -> None:
    doc_id = client.create()
    _open(page, server, doc_id, "?pointer=/metadata/language")
    # the user's position: a selection, and /tags open (an empty array: open from the first read)
    assert page.evaluate(f"document.querySelector('{_item('/tags')}').getAttribute('aria-expanded')") == "true"
    version = client.put(doc_id, "/title", "Written by an agent")
    page.wait_for(f"document.querySelector('{_item('/title')} .summary').textContent === '\"Written by an agent\"'")
    assert page.evaluate(f"document.querySelector('{_item('/title')}').classList.contains('changed')")
    page.wait_for(f"document.querySelector('#version').dataset.version === '{version}'")
    version = client.put(doc_id, "/tags", ["sea", "storm"], version)
    page.wait_for(f"document.querySelectorAll('{_item('/tags')} > ul > li[role=treeitem]').length === 2")
    page.screenshot(shots / "live.png")
    selected = page.evaluate(f"document.querySelector('{_item('/metadata/language')}').getAttribute('aria-selected')")
    assert selected == "true"
    assert page.evaluate(f"document.querySelector('{_item('/tags')}').getAttribute('aria-expanded')") == "true"
    # the selected node's panel follows too when it changes (nothing typed in it)
    client.put(doc_id, "/metadata/language", "fr", version)
    page.wait_for("document.querySelector('#field')?.value === 'fr'")


def test_a_conflicting_hand_edit_is_refused_and_explained(page: Page, server: Server, client: Client,
                                                          shots: Path) -> None:
    doc_id = client.create()
    _open(page, server, doc_id, "?pointer=/title")
    page.fill("#field", "My hand edit")
    client.put(doc_id, "/title", "The agent's title")  # meanwhile
    page.wait_for("document.querySelector('#notices [data-notice=changed]')")  # told before saving
    page.click("#save-node")
    page.wait_for("document.querySelector('#conflict li[data-path=\"/title\"]')")
    text = page.text("#conflict")
    assert "version 1" in text and "version 2" in text and "version-conflict" in text
    assert "The agent's title" in text
    assert page.text("#conflict .actor") == " · by rest"  # who wrote meanwhile
    assert client.read(doc_id, "/title") == ("The agent's title", 2)  # nothing overwritten
    page.screenshot(shots / "conflict.png")
    page.click("#conflict-reload")
    page.wait_for("document.querySelector('#field')?.value === \"The agent's title\"")


def test_a_validation_error_is_shown_at_its_node_and_its_fix_applied(page: Page, server: Server, client: Client,
                                                                     shots: Path) -> None:
    doc_id = client.create()
    _open(page, server, doc_id, "?pointer=/metadata")
    page.fill("#field", json.dumps({"language": "en", "status": "Draft", "edition": 2}))
    page.click("#save-node")
    page.wait_for("document.querySelector('#violations li.violation')")
    assert page.evaluate("document.querySelector('#violations li.violation').dataset.path") == "/metadata/status"
    status = _item("/metadata/status")
    assert page.evaluate(f"document.querySelector('{status}').getAttribute('aria-invalid')") == "true"
    assert "is not one of" in page.text(f"{status} .violation-note")
    assert client.read(doc_id, "/metadata")[1] == 1  # refused: nothing changed
    page.screenshot(shots / "validation.png")
    page.click("#violations .apply-fix")
    page.wait_for("document.querySelector('#edit-result .ok')")
    assert client.read(doc_id, "/metadata") == ({"language": "en", "status": "draft", "edition": 2}, 2)
    page.wait_for(f"!document.querySelector('{status}').hasAttribute('aria-invalid')")
    page.wait_for(f"document.querySelector('{status} .summary').textContent === '\"draft\"'")


def test_history_diff_past_version_and_revert_with_preview(page: Page, server: Server, client: Client,
                                                           shots: Path) -> None:
    doc_id = client.create()
    version = client.put(doc_id, "/title", "Second")
    version = client.put(doc_id, "/title", "Third", version)
    version = client.put(doc_id, "/tags", ["kept"], version)
    _open(page, server, doc_id, "?tab=history")
    page.wait_for("document.querySelectorAll('#timeline > li').length === 4")
    assert page.text('#timeline li[data-version="3"] .actor') == "by rest"  # who: no tokens, so the door
    page.click('#timeline li[data-version="3"] .show-diff')
    page.wait_for("document.querySelector('#diff li[data-path=\"/title\"]')")
    assert '"Third"' in page.text("#diff")
    assert page.text("#diff-actors") == "by rest"  # who made the versions the diff spans

    page.click('#timeline li[data-version="2"] .revert')
    page.wait_for("document.querySelector('#revert-preview ul.changes')")
    preview = page.text("#revert-preview")
    assert "/title" in preview and '"Second"' in preview and "/tags" in preview
    assert client.version(doc_id) == version  # a preview changes nothing
    page.screenshot(shots / "revert-preview.png")
    page.click("#confirm-revert")
    page.wait_for("document.querySelector('#revert-preview .ok')")
    assert client.read(doc_id, "/title") == ("Second", version + 1)
    assert client.read(doc_id, "/tags")[0] == []

    page.click('#timeline li[data-version="3"] .open-version')  # a past version, read-only
    page.wait_for(f"document.querySelector('{_item('/title')} .summary')?.textContent === '\"Third\"'")
    assert _query(page)["version"] == ["3"]
    assert "read-only" in page.text("#banner")
    page.click("#back-to-live")
    page.wait_for(f"document.querySelector('{_item('/title')} .summary')?.textContent === '\"Second\"'")


def test_document_content_is_shown_as_text_never_run(page: Page, server: Server, client: Client) -> None:
    doc_id = client.create()
    hostile = "<img src=x onerror=\"window.pwned=1\"><script>window.pwned=2</script>"
    version = client.put(doc_id, "/title", hostile)
    client.put(doc_id, "/chapters", [{"id": "ch-1", "title": "[link](javascript:window.pwned=3) <b onclick=x>b</b>",
                                      "sections": [{"title": hostile, "paragraphs": [{"text": hostile}]}]}], version)
    _open(page, server, doc_id, "?tab=preview")
    page.wait_for("document.querySelector('#preview')?.textContent.length > 0")
    assert page.text(f"{_item('/title')} .summary") == json.dumps(hostile)
    assert page.evaluate("window.pwned === undefined")
    assert page.count("#app img, #app script, #app [onerror], #app [onclick]") == 0
    assert page.count("#preview a[href^='javascript']") == 0


def _start(command: list[str], url: str, logs: Path, headers: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    with (logs / f"server-{time.monotonic_ns()}.log").open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the server exited with {process.returncode}"
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return process
        time.sleep(0.1)
    process.kill()
    raise AssertionError("the server did not start")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_a_token_is_asked_once_kept_for_the_session_and_sent_everywhere(page: Page, tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    token = "s3cret-token-for-the-page-tests"
    tokens = tmp_path / "tokens.json"
    name = 'reviewer <img src=x onerror="window.pwned=1">'  # the actor of its writes, shown as text
    tokens.write_text(json.dumps({"tokens": [{"name": name, "token": token, "access": "read-write"}]}),
                      encoding="utf-8")
    process = _start([sys.executable, "-m", "schemadoc", "serve", "--schema", str(BOOK_SCHEMA), "--storage-dir",
                      str(tmp_path / "data"), "--port", str(port), "--tokens-file", str(tokens)], url, tmp_path)
    try:
        auth = {"Authorization": f"Bearer {token}"}
        assert httpx.get(f"{url}/api/v1/documents", timeout=10).status_code == 401
        doc_id = httpx.post(f"{url}/api/v1/documents", headers=auth, timeout=10).json()["doc_id"]
        page.goto(f"{url}/ui/")
        page.wait_for("document.querySelector('#token-dialog').open")
        page.fill("#token-dialog input", token)
        page.click("#token-dialog button[type=submit]")
        page.wait_for(f"document.querySelector('tr[data-doc-id=\"{doc_id}\"]')")
        assert page.evaluate("sessionStorage.getItem('schemadoc.token')") == token
        page.click(f'tr[data-doc-id="{doc_id}"] a')
        page.wait_for("document.querySelector('#live-state')?.dataset.state === 'live'")
        version = httpx.get(f"{url}/api/v1/documents/{doc_id}", headers=auth, timeout=10).json()["version"]
        answer = httpx.put(f"{url}/api/v1/documents/{doc_id}", params={"path": "/title"}, headers=auth,
                           json={"node_data": "Behind a token", "version": version}, timeout=10)
        assert answer.status_code == 200
        # the event stream carries the token too: the write arrives live
        page.wait_for(f"document.querySelector('{_item('/title')} .summary').textContent === '\"Behind a token\"'")
        assert not page.evaluate("document.querySelector('#token-dialog').open")
        page.click("#tab-history")  # who made each version: the token's name
        page.wait_for(f"document.querySelector('#timeline li[data-version=\"{version + 1}\"] .actor')")
        assert page.text(f'#timeline li[data-version="{version + 1}"] .actor') == f"by {name}"
        assert page.evaluate("window.pwned === undefined && !document.querySelector('#timeline img')")
        page.fill("#diff-from", "1")  # a diff over every version: the token's name as its only actor, as text
        page.fill("#diff-to", str(version + 1))
        page.click("#show-diff")
        page.wait_for("document.querySelector('#diff-actors')")
        assert page.text("#diff-actors") == f"by {name}"
        assert page.evaluate("window.pwned === undefined && !document.querySelector('#history-detail img')")
    finally:
        _stop(process)


def test_a_reconnect_resumes_the_stream_without_a_gap(page: Page, tmp_path: Path, client: Client) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "schemadoc", "serve", "--transport", "http", "--schema", str(BOOK_SCHEMA),
               "--storage-dir", str(tmp_path / "data"), "--host", "127.0.0.1", "--port", str(port)]
    process = _start(command, url, tmp_path)
    try:
        other = Client(url)
        doc_id = other.create()
        _open(page, server=None, doc_id=doc_id, base=url)
        _stop(process)
        page.wait_for("document.querySelector('#live-state').dataset.state === 'reconnecting'")
        process = _start(command, url, tmp_path)
        version = other.put(doc_id, "/title", "Written while the page was away")
        other.put(doc_id, "/tags", ["after"], version)
        page.wait_for(f"document.querySelector('{_item('/title')} .summary').textContent"
                      " === '\"Written while the page was away\"'", timeout=30)
        page.wait_for(f"document.querySelectorAll('{_item('/tags')} > ul > li[role=treeitem]').length === 1")
        assert page.evaluate("document.querySelector('#live-state').dataset.state") == "live"
        assert page.text("#version") == "version 3"
    finally:
        _stop(process)
