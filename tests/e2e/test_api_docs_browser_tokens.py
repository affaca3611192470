"""/docs and /redoc rendered by headless Chromium from a real server with a tokens file.

The pages, ``/openapi.json`` and the pages' scripts and styles under ``/static/docs/`` hold no
document data and are answered without a token; the browser sends none. Before they were, the
scripts and styles answered 401 and both pages stayed blank.

In the default suite (about 20 s: a server start and two Chromium runs), unlike the whole
rendering check of ``test_api_docs_browser.py``: it is the only proof that the docs work with
tokens on. Skipped, with the reason, where Chromium is missing (CI installs it).
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from browser import CHROMIUM_MISSING, chromium, processes_using, render
from http_server import Server, tokens_file
from test_api_docs_browser import _METHODS, _parse

TOKEN = "writer-token-0123456789abcdef"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    if chromium() is None:
        pytest.skip(CHROMIUM_MISSING)
    base = tmp_path_factory.mktemp("api-docs-tokens")
    tokens = tokens_file(base, {"name": "ci", "token": TOKEN, "access": "read-write"})
    with Server(base / "data", base / "logs", extra_args=("--tokens-file", str(tokens))) as running:
        assert httpx.get(f"{running.url}/api/v1/documents", timeout=10).status_code == 401  # tokens are on
        yield running


@pytest.fixture(scope="module")
def operation_ids(server: Server) -> set[tuple[str, str]]:
    spec = httpx.get(f"{server.url}/openapi.json", timeout=10).json()
    found = {(operation["tags"][0], operation["operationId"]) for item in spec["paths"].values()
             for method, operation in item.items() if method in _METHODS}
    assert len(found) >= 20
    return found


def test_swagger_ui_renders_with_tokens_on(server: Server, operation_ids: set[tuple[str, str]]) -> None:
    rendered = render(f"{server.url}/docs")
    page = _parse(rendered.dom)
    assert "Failed to load API definition" not in "".join(page.text)
    missing = sorted(op for tag, op in operation_ids if f"operations-{tag}-{op}" not in page.ids)
    assert not missing, f"Swagger UI did not render {missing}"
    assert not processes_using(str(rendered.profile)), "chromium processes outlived the run"


def test_redoc_renders_with_tokens_on(server: Server, operation_ids: set[tuple[str, str]]) -> None:
    rendered = render(f"{server.url}/redoc")
    page = _parse(rendered.dom)
    missing = sorted(op for tag, op in operation_ids if f"tag/{tag}/operation/{op}" not in page.ids)
    assert not missing, f"ReDoc did not render {missing}"
    assert not processes_using(str(rendered.profile)), "chromium processes outlived the run"
