"""The worked example of docs/schema-changes.md runs as written: its two migrations (the rename template and the
``chapter_isbns`` function, read from the page itself) and ``schemadoc check`` on a store of books, with the outcomes
the page shows (the rename leaves every book with chapters still invalid, the function makes valid all but the books
whose title is too long, the empty book is unchanged, and then ``check`` finds only the ``max-length`` titles)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from schemadoc.interfaces.cli.command import main
from schemadoc.schema import load_schema
from schemadoc.service import DocumentService
from schemadoc.storage.files import FileDocumentStore

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "schema-changes.md").read_text(encoding="utf-8")
BOOK = ROOT / "schemas" / "book.schema.json"
EXAMPLE = PAGE[PAGE.index("## A worked example"):]


def block(language: str, containing: str) -> str:
    """The first fenced ``language`` block of the worked example that contains ``containing``."""
    for found in re.finditer(rf"```{language}\n(.*?)```", EXAMPLE, re.S):
        if containing in found.group(1):
            return found.group(1)
    raise AssertionError(f"no {language} block with {containing!r} in the worked example")


def book_v2(folder: Path) -> Path:
    """The page's schema change: a chapter's ``title`` renamed ``heading``, a required chapter ``isbn`` (the book's
    ISBN-13 and the chapter's number, no default), a book's title of at most 60 characters."""
    schema = json.loads(BOOK.read_text(encoding="utf-8"))
    schema["properties"]["title"]["maxLength"] = 60
    chapter = schema["$defs"]["chapter"]
    chapter["properties"]["heading"] = chapter["properties"].pop("title")
    chapter["properties"]["isbn"] = {"type": "string", "pattern": "^[0-9]{13}-[0-9]{3}$"}
    chapter["required"] = ["id", "heading", "isbn", "sections"]
    path = folder / "book-v2.schema.json"
    path.write_text(json.dumps(schema), encoding="utf-8")
    return path


def books(storage: Path) -> tuple[list[str], list[str], str]:
    """Six books of two chapters under the bundled schema (two with titles over 60 characters, half with a book
    ISBN) and one empty book. Returns the ids of those with short titles, with long titles, and the empty one."""
    service = DocumentService(load_schema(BOOK), FileDocumentStore(storage))
    service.open()
    short, long = [], []
    try:
        for number in range(6):
            title = f"Lighthouse keeping, volume {number}" + (" and the many lamps of the northern coast" * 2
                                                              if number in (1, 4) else "")
            metadata: dict[str, Any] = {"language": "en", "status": "draft", "edition": 1}
            if number % 2:
                metadata["isbn"] = f"978000000000{number}"
            chapters = [{"id": f"ch-{index}", "title": f"Chapter {index}",
                         "sections": [{"title": "S", "paragraphs": [{"text": "Text."}]}]} for index in (1, 2)]
            doc_id = service.create_document({"title": title, "metadata": metadata, "chapters": chapters})[0]
            (long if len(title) > 60 else short).append(doc_id)
        empty = service.create_document({"title": "Empty", "metadata": metadata, "chapters": []})[0]
    finally:
        service.close()
    return short, long, empty


def run(command: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code = main([*command, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_the_worked_example_runs_as_written(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    rename = tmp_path / "rename.json"
    rename.write_text(block("json", "2026-12-chapter-title-to-heading"), encoding="utf-8")
    (tmp_path / "book_migrations.py").write_text(block("python", "def chapter_isbns"), encoding="utf-8")
    schema = book_v2(tmp_path)
    storage = tmp_path / "data"
    short, long, empty = books(storage)
    where = ["--schema", str(schema), "--storage-dir", str(storage)]
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        code, checked = run(["check", *where], capsys)
        assert code == 1 and (checked["valid"], checked["invalid"]) == (1, 6)
        assert set(checked["by_code"]) == {"required-missing", "additional-properties-forbidden", "max-length"}
        assert {name: tally["violations"] for name, tally in checked["by_path"].items()} == {
            "/chapters/*": 12, "/chapters/*/heading": 12, "/chapters/*/isbn": 12, "/title": 2}

        code, dry = run(["migrate-documents", str(rename), *where, "--dry-run"], capsys)
        assert code == 0 and {outcome: count for outcome, count in dry["counts"].items() if count} == {
            "invalid": 6, "unchanged": 1}
        code, renamed = run(["migrate-documents", str(rename), *where], capsys)
        assert code == 0 and {outcome: count for outcome, count in renamed["counts"].items() if count} == {
            "invalid": 6, "unchanged": 1}
        code, computed = run(["migrate-documents", "--name", "2026-12-chapter-isbns", "--function",
                              "book_migrations:chapter_isbns", *where], capsys)
        assert code == 0 and {outcome: count for outcome, count in computed["counts"].items() if count} == {
            "valid": 4, "invalid": 2, "unchanged": 1}

        code, checked = run(["check", *where], capsys)
        assert code == 1 and (checked["valid"], checked["invalid"]) == (5, 2)
        assert {item["doc_id"] for item in checked["invalid_documents"]} == set(long)
        assert all([(violation["code"], violation["path"]) for violation in item["violations"]] == [
            ("max-length", "/title")] for item in checked["invalid_documents"])
    finally:
        sys.modules.pop("book_migrations", None)

    service = DocumentService(load_schema(schema), FileDocumentStore(storage))
    service.open()
    try:
        for doc_id in short + long:
            content, _ = service.read_document(doc_id)
            isbn = content["metadata"].get("isbn", "0000000000000")
            assert [chapter["heading"] for chapter in content["chapters"]] == ["Chapter 1", "Chapter 2"]
            assert [chapter["isbn"] for chapter in content["chapters"]] == [f"{isbn}-001", f"{isbn}-002"]
            names = [entry.info.get("migration") for entry in service.store.read_journal(doc_id)]
            assert names == [None, "2026-12-chapter-title-to-heading", "2026-12-chapter-isbns"]
        assert service.version_of(empty) == 1  # no migration touched it
    finally:
        service.close()
