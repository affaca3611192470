"""The inventory after a schema change, end to end: real ``schemadoc serve`` processes on one storage directory.

A server on the book schema (with an optional ``isbn``) writes documents and is killed with SIGKILL, so their
snapshots lag the journal. A server on a tightened schema (``isbn`` required without a default, titles of at
most 3 characters) starts on the same storage: its background inventory checks every document at its current
version, and each verdict equals python-jsonschema's on that version. The verdicts show over REST (the status
answer, each document's verdict, the list and its ``valid`` filter), over MCP (``document_list``) and on the
page (the list's badges and its filter, in Chromium).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from browser import CHROMIUM_MISSING, Browser, chromium
from http_server import BOOK_SCHEMA, Server
from mcp import Client

from schemadoc.schema import load_schema

pytestmark = pytest.mark.timeout(300)

# title, isbn, whether the tightened schema accepts the document (it is checked against python-jsonschema too)
BOOKS: list[tuple[str, str | None]] = [("Abc", "978-3-16-148410-0"), ("Xy", "0-306-40615-2"), ("Abc", None),
                                       ("A much longer title", "978-0-306-40615-7"), ("Long title", None),
                                       ("Q", "1-234-56789-0")]


def _schemas(folder: Path) -> tuple[Path, Path]:
    """The book schema with an optional isbn (before), and with it required and titles of 3 characters (after)."""
    before = json.loads(BOOK_SCHEMA.read_text(encoding="utf-8"))
    before["properties"]["isbn"] = {"type": "string", "pattern": "^[0-9-]{10,17}$"}
    after = json.loads(json.dumps(before))
    after["required"] = [*after["required"], "isbn"]
    after["properties"]["title"]["maxLength"] = 3
    paths = []
    for name, schema in (("before", before), ("after", after)):
        (folder / name).mkdir(parents=True)
        path = folder / name / "book.schema.json"
        path.write_text(json.dumps(schema), encoding="utf-8")
        paths.append(path)
    return paths[0], paths[1]


def _api(server: Server) -> str:
    return f"{server.url}/api/v1"


def _write_books(server: Server) -> list[str]:
    made = []
    with httpx.Client(timeout=30) as http:
        for title, isbn in BOOKS:
            answer = http.post(f"{_api(server)}/documents", json={"content": {"title": "Draft"}})
            assert answer.status_code == 201, answer.text
            doc_id = answer.json()["doc_id"]
            version = 1
            for path, value in (("/title", title), ("/tags", ["inventory"])):
                answer = http.put(f"{_api(server)}/documents/{doc_id}", params={"path": path},
                                  json={"node_data": value, "version": version})
                assert answer.status_code == 200, answer.text
                version = answer.json()["version"]
            if isbn is not None:
                answer = http.post(f"{_api(server)}/documents/{doc_id}/nodes", params={"path": "/isbn"},
                                   json={"node_data": isbn, "version": version})
                assert answer.status_code == 201, answer.text
            made.append(doc_id)
    return made


def _wait_for_inventory(server: Server, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = httpx.get(f"{_api(server)}/status", timeout=30).json()
        if status["inventory"]["state"] == "done":
            return dict(status)
        time.sleep(0.2)
    raise AssertionError(f"the inventory did not finish: {status}")


async def _mcp_list(server: Server, valid: bool | None) -> list[dict[str, Any]]:
    arguments: dict[str, Any] = {"limit": 100} if valid is None else {"limit": 100, "valid": valid}
    async with Client(f"{server.url}/mcp") as client:
        result = await client.call_tool("document_list", arguments)
    assert not result.is_error, result
    assert result.structured_content is not None
    return list(result.structured_content["documents"])


async def _mcp_resource_meta(server: Server, doc_id: str) -> dict[str, Any]:
    async with Client(f"{server.url}/mcp") as client:
        read = await client.read_resource(f"schema://{doc_id}")
    assert read.contents[0].meta is not None
    return dict(read.contents[0].meta)


def test_a_restart_with_a_tightened_schema_finds_exactly_the_documents_it_refuses(tmp_path: Path) -> None:
    before, after = _schemas(tmp_path / "schemas")
    storage = tmp_path / "data"
    first = Server(storage, tmp_path / "logs-before", schema=before)
    try:
        doc_ids = _write_books(first)
        health = httpx.get(f"{first.url}/health/ready", timeout=10).json()
        assert health["schema_digest"] == load_schema(before).digest
    finally:
        first.kill()  # SIGKILL: the snapshots lag the journal (the inventory must replay it)
    assert any(json.loads((storage / f"{doc_id}.meta.json").read_text())["version"] < 3 for doc_id in doc_ids)

    served = load_schema(after)
    reference = served.make_reference_validator()
    with Server(storage, tmp_path / "logs-after", schema=after) as second:
        status = _wait_for_inventory(second)
        with httpx.Client(timeout=30) as http:
            expected: dict[str, int] = {}
            for doc_id in doc_ids:
                content = http.get(f"{_api(second)}/documents/{doc_id}").json()["node_content"]
                expected[doc_id] = sum(1 for _ in reference.iter_errors(content))
                verdict = http.get(f"{_api(second)}/documents/{doc_id}/verdict").json()
                assert verdict["status"] == ("valid" if expected[doc_id] == 0 else "invalid"), (doc_id, verdict)
                assert verdict["verdict"]["violation_count"] == expected[doc_id]
                assert verdict["verdict"]["digest"] == served.digest and verdict["version"] >= 3
                assert verdict["schema_digest"] == load_schema(before).digest  # the last write's schema
                assert verdict["verdict"]["checked_at"] is not None
            invalid = {doc_id for doc_id, count in expected.items() if count}
            valid = set(doc_ids) - invalid
            assert valid and invalid
            assert status["schema_digest"] == served.digest
            assert (status["documents"], status["valid"], status["invalid"], status["unchecked"]) == (
                len(doc_ids), len(valid), len(invalid), 0)
            assert status["inventory"]["checked"] == len(doc_ids)
            listed = http.get(f"{_api(second)}/documents", params={"valid": "false"}).json()["documents"]
            assert {item["doc_id"] for item in listed} == invalid
            assert all(item["violation_count"] == expected[item["doc_id"]] for item in listed)
            assert {item["schema_digest"] for item in listed} == {load_schema(before).digest}  # the last write's
            listed = http.get(f"{_api(second)}/documents", params={"valid": "true"}).json()["documents"]
            assert {item["doc_id"] for item in listed} == valid
            # a check on demand of a known verdict changes nothing; the version did not move either
            again = http.post(f"{_api(second)}/documents/{doc_ids[0]}/check").json()
            assert again["verdict"] == http.get(f"{_api(second)}/documents/{doc_ids[0]}/verdict").json()["verdict"]

        mcp_invalid = anyio.run(_mcp_list, second, False)
        assert {item["doc_id"] for item in mcp_invalid} == invalid
        assert all(item["valid"] is False for item in mcp_invalid)
        for doc_id in doc_ids:  # a document's resource says it too
            meta = anyio.run(_mcp_resource_meta, second, doc_id)
            assert (meta["valid"], meta["violation_count"]) == (expected[doc_id] == 0, expected[doc_id])
            assert meta["schema_digest"] == load_schema(before).digest
        mcp_all = anyio.run(_mcp_list, second, None)
        assert {item["doc_id"]: item["valid"] for item in mcp_all} == {doc_id: doc_id in valid for doc_id in doc_ids}

        log = second.stderr
        assert f"inventory: {len(doc_ids)} document(s) to check" in log
        assert "inventory done in" in log
        assert f"{len(doc_ids)} checked ({len(valid)} valid, {len(invalid)} invalid)" in log

        if chromium() is None:
            pytest.skip(CHROMIUM_MISSING)
        with Browser(width=1280, height=800) as browser:
            page = browser.new_page(width=1280, height=800)
            page.goto(f"{second.url}/ui/")
            page.wait_for(f"document.querySelectorAll('tr[data-doc-id]').length === {len(doc_ids)}")
            for doc_id in doc_ids:
                shown = page.text(f'tr[data-doc-id="{doc_id}"] .verdict')
                count = expected[doc_id]
                assert shown == ("valid" if count == 0 else f"{count} violation{'s' if count > 1 else ''}"), shown
            page.evaluate("(() => { const select = document.querySelector('#valid-filter');"
                          " select.value = 'false'; select.dispatchEvent(new Event('change')); })()")
            page.wait_for(f"document.querySelectorAll('tr[data-doc-id]').length === {len(invalid)}"
                          " && location.search === '?valid=false'")
            rows = page.evaluate("[...document.querySelectorAll('tr[data-doc-id]')].map(row => row.dataset.docId)")
            assert set(rows) == invalid
            page.screenshot(tmp_path / "list-invalid.png")
            errors = [error for error in page.console_errors() if "Failed to load resource" not in error]
            page.close()
            assert not errors
        assert "Traceback" not in second.stderr


def test_without_check_documents_on_start_documents_stay_unchecked_until_checked_on_demand(tmp_path: Path) -> None:
    before, after = _schemas(tmp_path / "schemas")
    storage = tmp_path / "data"
    with Server(storage, tmp_path / "logs-before", schema=before) as first:
        doc_id = _write_books(first)[4]  # "Long title" without isbn: two violations under the tightened schema
    with Server(storage, tmp_path / "logs-after", schema=after,
                settings={"CHECK_DOCUMENTS_ON_START": "false"}) as second, httpx.Client(timeout=30) as http:
        status = http.get(f"{_api(second)}/status").json()
        assert status["inventory"]["state"] == "idle" and status["unchecked"] == len(BOOKS)
        assert http.get(f"{_api(second)}/documents/{doc_id}/verdict").json()["status"] == "unchecked"
        assert http.get(f"{_api(second)}/documents", params={"valid": "false"}).json()["total_documents"] == 0
        item = next(item for item in http.get(f"{_api(second)}/documents").json()["documents"]
                    if item["doc_id"] == doc_id)
        assert item["valid"] is None
        checked = http.post(f"{_api(second)}/documents/{doc_id}/check").json()
        assert checked["status"] == "invalid" and checked["verdict"]["violation_count"] == 2
        assert {(v["code"], v["path"]) for v in checked["verdict"]["violations"]} == {
            ("required-missing", ""), ("max-length", "/title")}
        assert http.get(f"{_api(second)}/documents", params={"valid": "false"}).json()["total_documents"] == 1
        assert http.get(f"{_api(second)}/documents/{doc_id}").json()["version"] == 3  # a check is no write
        started = http.post(f"{_api(second)}/inventory")
        assert started.status_code == 202 and started.json()["inventory"]["state"] in ("running", "done")
        status = _wait_for_inventory(second)
        assert status["inventory"]["to_check"] == len(BOOKS) - 1 and status["unchecked"] == 0
