"""The page at /ui as the server serves it, without a browser: addresses, files, security headers.

The application is built in process (``build_app``) over a files store in a temporary directory;
the browser tests are in ``test_ui.py``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from http_server import BOOK_SCHEMA

from schemadoc.config import Settings
from schemadoc.interfaces.app import build_app, create_service
from schemadoc.ui import CONTENT_SECURITY_POLICY, STATIC_DIR

OWN_SCRIPTS = sorted(STATIC_DIR.glob("*.js"))


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    settings = Settings(schema_path=BOOK_SCHEMA, storage_dir=tmp_path_factory.mktemp("ui-static"))
    service = create_service(settings)
    try:
        # Host 127.0.0.1: a loopback server answers for loopback names only
        yield TestClient(build_app(service, settings), base_url="http://127.0.0.1")
    finally:
        service.close()


@pytest.mark.parametrize("address", ["/ui/", "/ui/documents/01M89N2QW75YAR340HSX34QKZJ?pointer=/title&version=3",
                                     "/ui/documents/x/"])
def test_every_address_under_ui_is_the_page_with_its_policy(client: TestClient, address: str) -> None:
    answer = client.get(address)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/html")
    assert answer.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert '<base href="/ui/">' in answer.text
    assert not re.search(r"<script(?![^>]*\bsrc=)", answer.text), "an inline script (the policy would block it)"
    assert " style=" not in answer.text


def test_the_policy_allows_this_server_only_and_nothing_inline() -> None:
    directives = dict(part.strip().split(" ", 1) for part in CONTENT_SECURITY_POLICY.split(";"))
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == "'self'" and directives["style-src"] == "'self'"
    assert directives["connect-src"] == "'self'" and directives["frame-ancestors"] == "'none'"


def test_ui_redirects_to_its_slash_and_a_proxy_prefix_reaches_the_base(client: TestClient) -> None:
    answer = client.get("/ui?x=1", follow_redirects=False)
    assert answer.status_code == 307 and answer.headers["location"] == "/ui/?x=1"
    prefixed = TestClient(client.app, base_url="http://127.0.0.1", root_path="/books").get("/ui/")
    assert '<base href="/books/ui/">' in prefixed.text


def test_static_files_are_served_with_their_types_and_missing_ones_are_catalogued(client: TestClient) -> None:
    for name, kind in [("app.js", "text/javascript"), ("style.css", "text/css"),
                       ("vendor/marked/marked.esm.js", "text/javascript"),
                       ("vendor/dompurify/purify.es.mjs", "text/javascript")]:
        answer = client.get(f"/ui/static/{name}")
        assert answer.status_code == 200, name
        assert answer.headers["content-type"].startswith(kind), name
        assert "content-security-policy" in answer.headers
    missing = client.get("/ui/static/nothing.js")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "route-not-found"
    for outside in ("/ui/static/../__init__.py", "/ui/static/%2e%2e/__init__.py", "/ui/static/..%2f__init__.py"):
        assert "from __future__" not in client.get(outside).text, outside  # never a file outside static/
    wrong = client.post("/ui/")
    assert wrong.status_code == 405 and wrong.json()["error"]["code"] == "method-not-allowed"
    assert "/ui" not in str(client.get("/openapi.json").json()["paths"])


def test_every_module_the_page_imports_is_shipped() -> None:
    for script in OWN_SCRIPTS:
        for target in re.findall(r"""^import .* from '(\.[^']+)';$""", script.read_text(), re.M):
            assert (script.parent / target).resolve().is_file(), f"{script.name} imports {target}"
    page = (STATIC_DIR.parent / "index.html").read_text()
    for target in re.findall(r'(?:src|href)="(static/[^"]+)"', page):
        assert (STATIC_DIR.parent / target).is_file(), target
    for vendored in STATIC_DIR.glob("vendor/*/"):
        assert (vendored / "LICENSE").is_file(), f"{vendored.name} has no licence file"


@pytest.mark.parametrize("script", OWN_SCRIPTS, ids=lambda path: Path(path).name)
def test_the_page_never_turns_text_into_html(script: Path) -> None:
    """Content reaches the DOM as text only: no HTML-parsing sinks in the page's own code."""
    code = script.read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function",
                 "setAttribute('on", 'setAttribute("on'):
        assert sink not in code, f"{script.name} uses {sink}"
