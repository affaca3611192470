"""The page's list and its "New document" form, in headless Chromium against a real server on a schema whose
required fields have no defaults (``document_create`` without content is refused there).

The list shows each document's label (the API's ``label``: its title, name, label or code member) as text beside
its id. "New document" opens a form built from the schema: prefilled with its defaults, its examples shown as
placeholders (never sent); what the page can check itself (a required value missing, a number that is not one,
JSON that does not parse) is shown at its field without sending anything; the rest is the server's verdict: a
refused create stores nothing and each violation is shown at its field. Skipped where Chromium is not installed.
``SCHEMADOC_UI_SCREENSHOTS=docs/screenshots`` saves the screenshot ``docs/ui.md`` shows, as in ``test_ui.py``."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from browser import CHROMIUM_MISSING, Browser, Page, chromium
from http_server import Server

PERSON = {
    "$schema": "https://json-schema.org/draft/2020-12/schema", "title": "Person", "type": "object",
    "required": ["name", "age", "contact"],
    "properties": {
        "name": {"type": "string", "minLength": 2, "title": "Name", "examples": ["Ada Lovelace"]},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "role": {"enum": ["author", "editor"], "default": "author"},
        "active": {"type": "boolean", "default": True},
        "contact": {"type": "object", "required": ["email"], "properties": {
            "email": {"type": "string", "pattern": "^[^@]+@[^@]+$", "examples": ["ada@example.org"]},
            "phone": {"type": "string"}}},
        "tags": {"type": "array", "items": {"type": "string"}, "default": []},
        "notes": {"type": "string", "description": "optional, no default: not in the form"},
    },
}
HOSTILE = "<img src=x onerror=\"window.pwned=1\"><script>window.pwned=2</script>"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    if chromium() is None:
        pytest.skip(CHROMIUM_MISSING)
    base = tmp_path_factory.mktemp("ui-create")
    schema = base / "person.schema.json"
    schema.write_text(json.dumps(PERSON))
    with Server(base / "data", base / "logs", schema=schema) as running:
        yield running


@pytest.fixture(scope="module")
def browser(server: Server) -> Iterator[Browser]:
    with Browser(width=1280, height=900) as driven:
        yield driven


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    opened = browser.new_page(width=1280, height=900)
    try:
        yield opened
    finally:
        errors = [error for error in opened.console_errors() if "Failed to load resource" not in error]
        opened.close()
        assert not errors, f"the page logged errors: {errors}"


def _create(server: Server, content: dict[str, Any]) -> str:
    answer = httpx.post(f"{server.url}/api/v1/documents", json={"content": content}, timeout=30)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["doc_id"])


def _posts(browser: Browser, page: Page) -> int:
    """How many creates (``POST /api/v1/documents``) the page has sent so far."""
    return sum(1 for event in list(browser.events) if event.get("sessionId") == page.session
               and event.get("method") == "Network.requestWillBeSent"
               and event["params"]["request"]["method"] == "POST"
               and event["params"]["request"]["url"].endswith("/api/v1/documents"))


def _stored(server: Server) -> set[str]:
    return {doc["doc_id"] for doc in httpx.get(f"{server.url}/api/v1/documents", params={"limit": 1000},
                                               timeout=30).json()["documents"]}


def _field(pointer: str) -> str:
    return f'#new-document .field[data-pointer="{pointer}"]'


def _errors(page: Page, pointer: str) -> list[str]:
    return list(page.evaluate(f"[...document.querySelectorAll('{_field(pointer)} > .field-errors li')]"
                              ".map((item) => item.textContent)"))


def test_the_list_shows_each_document_s_label_as_text_beside_its_id(page: Page, server: Server) -> None:
    named = _create(server, {"name": "Grace Hopper", "age": 85, "contact": {"email": "grace@example.org"}})
    hostile = _create(server, {"name": HOSTILE, "age": 1, "contact": {"email": "x@y"}})
    page.goto(f"{server.url}/ui/")
    row = f'tr[data-doc-id="{named}"]'
    page.wait_for_selector(row)
    assert page.text(f"{row} a.doc-link") == "Grace Hopper"
    assert page.text(f"{row} .doc-id") == named
    assert page.evaluate(f"document.querySelector('{row} a.doc-link').getAttribute('href')").endswith(
        f"/ui/documents/{named}")
    assert page.text(f'tr[data-doc-id="{hostile}"] a.doc-link') == HOSTILE  # shown as text, never run
    assert page.evaluate("window.pwned === undefined")
    assert page.count("#app img, #app script, #app [onerror]") == 0


def test_new_document_is_a_form_from_the_schema_checked_before_sending_and_refusals_shown_at_their_fields(
        browser: Browser, page: Page, server: Server, tmp_path: Path) -> None:
    page.goto(f"{server.url}/ui/")
    page.wait_for_selector("#create-document")
    assert httpx.post(f"{server.url}/api/v1/documents", timeout=30).json()["error"]["code"] == \
        "required-field-without-default"  # what the form is for
    page.click("#create-document")
    page.wait_for_selector("#new-document #create-submit")
    # prefilled from the defaults; examples only as placeholders
    assert page.evaluate(f"document.querySelector('{_field('/role')} select').selectedOptions[0].textContent") \
        == "author"
    assert page.evaluate(f"document.querySelector('{_field('/active')} input').checked") is True
    assert json.loads(page.evaluate(f"document.querySelector('{_field('/tags')} textarea').value")) == []
    name = f"{_field('/name')} input"
    assert page.evaluate(f"document.querySelector('{name}').value") == ""
    assert page.evaluate(f"document.querySelector('{name}').placeholder") == "Ada Lovelace"
    assert page.count(_field("/notes")) == 0  # optional without a default: added later, in the document

    # nothing typed: the page says what is missing, at its fields, and sends nothing
    before = _posts(browser, page)
    page.click("#create-submit")
    page.wait_for(f"document.querySelector('{_field('/name')}').classList.contains('invalid')")
    assert _errors(page, "/name") == ["required: give a value"]
    assert _errors(page, "/age") == ["required: give a value"]
    assert page.evaluate(f"document.querySelector('{name}').getAttribute('aria-invalid')") == "true"
    assert _posts(browser, page) == before

    # what only the schema can judge: sent, refused whole, each violation at its field, nothing stored
    stored = _stored(server)
    page.fill(name, "A")
    page.fill(f"{_field('/age')} input", "200")
    page.fill(f"{_field('/contact/email')} input", HOSTILE)
    page.click("#create-submit")
    page.wait_for("document.querySelector('#create-status .error')", message="the refusal")
    assert _posts(browser, page) == before + 1
    assert "at least 2" in " ".join(_errors(page, "/name"))
    assert _errors(page, "/age") and "150" in " ".join(_errors(page, "/age"))
    assert _errors(page, "/contact/email"), "the pattern's violation at the e-mail field"
    assert _errors(page, "/tags") == [] and _errors(page, "/role") == []
    assert "nothing was stored" in page.text("#create-status")
    assert _stored(server) == stored  # the refused create stored nothing
    assert page.evaluate("window.pwned === undefined") and page.count("#app img, #app script") == 0
    page.screenshot(Path(os.environ.get("SCHEMADOC_UI_SCREENSHOTS") or tmp_path) / "new-document.png")

    page.fill(name, "Ada")
    page.fill(f"{_field('/age')} input", "36")
    page.fill(f"{_field('/contact/email')} input", "ada@example.org")
    page.click("#create-submit")
    page.wait_for("location.pathname.startsWith('/ui/documents/')", message="the new document")
    made = page.evaluate("location.pathname").rsplit("/", 1)[1]
    assert _stored(server) == stored | {made}
    read = httpx.get(f"{server.url}/api/v1/documents/{made}", timeout=30).json()
    assert read["version"] == 1
    assert read["node_content"] == {"name": "Ada", "age": 36, "role": "author", "active": True,
                                    "contact": {"email": "ada@example.org"}, "tags": []}


def test_json_fields_that_do_not_parse_are_refused_by_the_page(browser: Browser, page: Page,
                                                              server: Server) -> None:
    page.goto(f"{server.url}/ui/")
    page.click("#create-document")
    page.wait_for_selector("#new-document #create-submit")
    page.fill(f"{_field('/name')} input", "Bo")
    page.fill(f"{_field('/age')} input", "3")
    page.fill(f"{_field('/contact/email')} input", "bo@example.org")
    page.fill(f"{_field('/tags')} textarea", "[\"one\", ")
    before = _posts(browser, page)
    page.click("#create-submit")
    page.wait_for(f"document.querySelector('{_field('/tags')}').classList.contains('invalid')")
    assert _errors(page, "/tags")[0].startswith("not JSON")
    assert _posts(browser, page) == before
    page.click("#create-cancel")
    page.wait_for("!document.querySelector('#new-document')")


def test_the_whole_document_can_be_edited_as_json_and_back(page: Page, server: Server) -> None:
    """*Edit as JSON* carries what the form holds into one JSON field, where members the form leaves out (an optional
    member without a default) can be added; *Edit as a form* brings the form back with those values."""
    page.goto(f"{server.url}/ui/")
    page.click("#create-document")
    page.wait_for_selector("#new-document #create-submit")
    page.fill(f"{_field('/name')} input", "Lin")
    page.click("#create-mode")
    whole = '#new-document textarea[data-pointer="/"]'
    page.wait_for_selector(whole)
    held = json.loads(page.evaluate(f"document.querySelector('{whole}').value"))
    assert held == {"name": "Lin", "role": "author", "active": True, "contact": {}, "tags": []}
    page.fill(whole, json.dumps({**held, "age": 41, "contact": {"email": "lin@example.org"}, "notes": HOSTILE}))
    page.click("#create-mode")  # back to the form, filled from the JSON
    page.wait_for_selector(f"{_field('/age')} input")
    assert page.evaluate(f"document.querySelector('{_field('/age')} input').value") == "41"
    assert page.evaluate(f"document.querySelector('{_field('/contact/email')} input').value") == "lin@example.org"
    assert page.count(_field("/notes")) == 1  # given now, so shown
    page.click("#create-submit")
    page.wait_for("location.pathname.startsWith('/ui/documents/')", message="the new document")
    made = page.evaluate("location.pathname").rsplit("/", 1)[1]
    read = httpx.get(f"{server.url}/api/v1/documents/{made}", timeout=30).json()["node_content"]
    assert read == {"name": "Lin", "age": 41, "role": "author", "active": True,
                    "contact": {"email": "lin@example.org"}, "tags": [], "notes": HOSTILE}
    assert page.evaluate("window.pwned === undefined")
