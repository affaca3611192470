"""/docs and /redoc rendered by a real browser (headless Chromium) from a real server, offline.

The browser resolves no host but the loopback (see ``browser.py``), so the pages can only render
from what this server sends. Swagger UI and ReDoc build the list of operations with JavaScript
from ``/openapi.json``: the rendered DOM has to show every operation of that document.

Out of the default suite (``slow``: a server start and two Chromium runs take 6-9 s on two busy
cores); ``make docs-browser`` installs Chromium when it is missing and runs this file.
"""

from __future__ import annotations

from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import pytest
from browser import CHROMIUM_MISSING, chromium, processes_using, render
from http_server import Server

pytestmark = pytest.mark.slow

_METHODS = ("get", "put", "post", "delete", "patch", "head", "options")


class _Elements(HTMLParser):
    """The ``id`` and ``data-path`` attributes of a document, and its text."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.data_paths: set[str] = set()
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name == "id":
                self.ids.add(value)
            elif name == "data-path":
                self.data_paths.add(value)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(dom: str) -> _Elements:
    elements = _Elements()
    elements.feed(dom)
    return elements


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    if chromium() is None:
        pytest.skip(CHROMIUM_MISSING)
    base = tmp_path_factory.mktemp("api-docs")
    with Server(base / "data", base / "logs") as running:
        yield running


@pytest.fixture(scope="module")
def operations(server: Server) -> list[dict[str, Any]]:
    spec = httpx.get(f"{server.url}/openapi.json", timeout=10).json()
    found = [{"method": method, "path": path, "id": operation["operationId"], "tag": operation["tags"][0]}
             for path, item in spec["paths"].items()
             for method, operation in item.items() if method in _METHODS]
    assert len(found) >= 20  # the whole REST API, not an empty document
    return found


def test_swagger_ui_lists_every_operation(server: Server, operations: list[dict[str, Any]]) -> None:
    rendered = render(f"{server.url}/docs")
    page = _parse(rendered.dom)
    assert "Failed to load API definition" not in "".join(page.text)
    missing = [op["id"] for op in operations if f"operations-{op['tag']}-{op['id']}" not in page.ids]
    assert not missing, f"Swagger UI did not render {missing}"
    assert page.data_paths == {op["path"] for op in operations}
    assert not processes_using(str(rendered.profile)), "chromium processes outlived the run"


def test_redoc_lists_every_operation(server: Server, operations: list[dict[str, Any]]) -> None:
    rendered = render(f"{server.url}/redoc")
    page = _parse(rendered.dom)
    missing = [op["id"] for op in operations if f"tag/{op['tag']}/operation/{op['id']}" not in page.ids]
    assert not missing, f"ReDoc did not render {missing}"
    text = "".join(page.text)
    assert all(op["path"] in text for op in operations)
    assert not processes_using(str(rendered.profile)), "chromium processes outlived the run"


def test_this_browser_reaches_no_cdn(server: Server, tmp_path: Path) -> None:
    """The control: Swagger UI's bundle loads from this server, and the same bundle from its CDN does not."""
    probe = "<script src='{src}'></script><script>document.title = typeof SwaggerUIBundle</script>"
    titles = {}
    for name, src in {"local": f"{server.url}/static/docs/swagger-ui-bundle.js",
                      "cdn": "https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/swagger-ui-bundle.js"}.items():
        page_file = tmp_path / f"{name}.html"
        page_file.write_text(f"<!DOCTYPE html><html><head><title>-</title>{probe.format(src=src)}</head></html>")
        dom = render(page_file.as_uri(), virtual_time_ms=3_000).dom
        titles[name] = dom.split("<title>", 1)[1].split("</title>", 1)[0]
    assert titles == {"local": "function", "cdn": "undefined"}
