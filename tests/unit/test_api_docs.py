"""/docs and /redoc name no other host: every script, stylesheet, icon and the spec come from this server.

The rendering itself, in a real browser without internet access, is tests/e2e/test_api_docs_browser.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from schemadoc.config import Settings
from schemadoc.interfaces.app import build_app, create_service
from schemadoc.interfaces.http.apidocs import ASSETS, ASSETS_PATH, OAUTH2_REDIRECT_PATH, assets_directory

BOOK_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json"
PAGES = ("/docs", "/redoc", OAUTH2_REDIRECT_PATH)
_URL_ATTRIBUTES = frozenset({"src", "href", "spec-url", "action", "data", "poster", "srcset", "formaction"})
_CONTENT_TYPES = {".js": ("text/javascript", "application/javascript"), ".css": ("text/css",),
                  ".png": ("image/png",), ".json": ("application/json",)}


class _Links(HTMLParser):
    """Every URL a page's markup names in an attribute, and the text of its inline scripts."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.urls += [value for name, value in attrs if name in _URL_ATTRIBUTES and value]
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts.append(data)


def links(html: str) -> _Links:
    parser = _Links()
    parser.feed(html)
    return parser


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FastAPI]:
    settings = Settings(schema_path=BOOK_SCHEMA, storage_dir=tmp_path_factory.mktemp("api-docs") / "data")
    application = build_app(create_service(settings), settings)
    with TestClient(application):  # the lifespan, once for the module
        yield application


@pytest.fixture(params=["", "/behind/a/proxy"], ids=["root", "root_path"])
def root(request: pytest.FixtureRequest) -> str:
    """The application's root path: none, or the prefix a proxy mounts it under."""
    return str(request.param)


@pytest.fixture
def client(app: FastAPI) -> TestClient:
    return TestClient(app, base_url="http://127.0.0.1")


@pytest.fixture
def rooted(app: FastAPI, root: str) -> TestClient:
    """A client of the application at ``root``."""
    return TestClient(app, base_url="http://127.0.0.1", root_path=root)


@pytest.mark.parametrize("page", PAGES)
def test_the_pages_name_no_other_host(rooted: TestClient, page: str) -> None:
    response = rooted.get(page)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert "://" not in response.text  # no absolute URL at all, in markup or in scripts
    for url in links(response.text).urls:
        parts = urlsplit(url)
        assert (parts.scheme, parts.netloc) == ("", ""), url
        assert url.startswith("/"), url


def _same_origin_urls(client: TestClient, page: str) -> list[str]:
    found = links(client.get(page).text)
    urls = list(found.urls)
    for script in found.scripts:  # Swagger UI's configuration names the spec as url: '/openapi.json'
        urls += [part.split("'")[0] for part in script.split("url: '")[1:]]
    return urls


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_everything_a_page_loads_is_served_with_its_content_type(rooted: TestClient, root: str, page: str) -> None:
    urls = _same_origin_urls(rooted, page)
    assert f"{root}/openapi.json" in urls
    assert any(url.startswith(f"{root}{ASSETS_PATH}/") and url.endswith(".js") for url in urls)
    for url in urls:
        assert url.startswith(f"{root}/"), url
        response = rooted.get(url[len(root):])
        assert response.status_code == 200, url
        accepted = _CONTENT_TYPES[Path(urlsplit(url).path).suffix]
        assert response.headers["content-type"].split(";")[0] in accepted, (url, response.headers["content-type"])
        assert int(response.headers["content-length"]) == len(response.content) > 1000


def test_the_bundles_are_swagger_ui_and_redoc(client: TestClient) -> None:
    swagger = client.get(f"{ASSETS_PATH}/swagger-ui-bundle.js").text
    redoc = client.get(f"{ASSETS_PATH}/redoc.standalone.js").text
    assert "SwaggerUIBundle" in swagger
    assert "exports.Redoc" in redoc
    css = client.get(f"{ASSETS_PATH}/swagger-ui.css").text
    assert ".swagger-ui" in css


def test_swagger_ui_is_told_not_to_call_its_online_validator(client: TestClient) -> None:
    # the bundle's default validatorUrl is validator.swagger.io, fetched for a badge unless null
    assert "validator.swagger.io" in client.get(f"{ASSETS_PATH}/swagger-ui-bundle.js").text
    assert '"validatorUrl": null' in client.get("/docs").text


def test_every_asset_is_in_the_installed_package() -> None:
    directory = assets_directory()
    sizes = {name: (directory / name).stat().st_size for name in ASSETS}
    assert all(size > 1000 for size in sizes.values()), sizes


def test_assets_are_cached_by_etag_and_answer_head(client: TestClient) -> None:
    url = f"{ASSETS_PATH}/redoc.standalone.js"
    first = client.get(url)
    again = client.get(url, headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    head = client.head(url)
    assert head.status_code == 200 and head.headers["content-length"] == str(len(first.content))


@pytest.mark.parametrize("name", ["nothing.js", "..%2fcore.py", "%2e%2e/core.py", "LICENSE"])
def test_only_the_known_assets_are_served(client: TestClient, name: str) -> None:
    response = client.get(f"{ASSETS_PATH}/{name}")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "route-not-found"


def test_assets_refuse_writes_naming_get_and_head(client: TestClient) -> None:
    response = client.post(f"{ASSETS_PATH}/swagger-ui.css", content=b"x")
    assert response.status_code == 405
    assert response.json()["error"]["details"]["allowed"] == ["GET", "HEAD"]
    assert response.headers["allow"] == "GET, HEAD"


def test_the_documentation_routes_stay_out_of_the_openapi_document(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert not [path for path in paths if path.startswith(("/docs", "/redoc", "/static"))]


def test_without_the_assets_package_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from schemadoc.interfaces.http import apidocs

    monkeypatch.setattr(apidocs, "_ASSETS_PACKAGE", "fastapi_offline_not_installed")
    with pytest.raises(RuntimeError, match=r"pip install 'fastapi-offline>=1\.7,<2'"):
        apidocs.assets_directory()


def test_a_missing_asset_is_named_at_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    from schemadoc.interfaces.http import apidocs

    monkeypatch.setattr(apidocs, "ASSETS", (*apidocs.ASSETS, "swagger-ui-standalone-preset.js"))
    with pytest.raises(RuntimeError, match=r"lacks swagger-ui-standalone-preset\.js"):
        apidocs.assets_directory()
