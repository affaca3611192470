"""Helpers shared by the behaviour tests: sample documents, outcomes that must succeed or fail, :class:`Doc`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .base import Door, Outcome

ULID_PATTERN = r"(?i)^[0-9A-HJKMNP-TV-Z]{26}$"
"""A ULID, in either case (Crockford base32 is case-insensitive)."""
UNKNOWN_DOC_ID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
"""A well-formed ULID no server ever created (it dates from 2016)."""


def chapter(number: int, *, sections: int = 1, text: str = "Some text.") -> dict[str, Any]:
    """A valid chapter ``ch-{number}`` of the book schema."""
    return {
        "id": f"ch-{number}",
        "title": f"Chapter {number}",
        "sections": [
            {"title": f"Section {number}.{index + 1}",
             "paragraphs": [{"text": text, "style": "normal"}],
             "sections": []}
            for index in range(sections)
        ],
    }


def sample_book() -> dict[str, Any]:
    """A valid book using every part of the schema; optional members left out: ``homepage``, ``contact``."""
    first = chapter(1, sections=2)
    first["sections"][0]["sections"] = [
        {"title": "Section 1.1.1", "paragraphs": [{"text": "Deep.", "style": "quote"}], "sections": []},
    ]
    return {
        "title": "The Conformance Book",
        "metadata": {
            "language": "en",
            "status": "draft",
            "author": {"name": "Ada Lovelace", "email": "ada@example.org"},
            "created": "2025-11-29T10:00:00Z",
            "edition": 1,
            "isbn": "9783161484100",
            "keywords": ["json", "schema"],
        },
        "chapters": [first, chapter(2), chapter(3)],
        "tags": ["test"],
    }


def ok(outcome: Outcome) -> dict[str, Any]:
    """The body of a successful outcome (the assertion shows the error otherwise)."""
    assert outcome.ok, f"expected success, got {outcome!r}"
    return outcome.body


def failed(outcome: Outcome, code: str) -> dict[str, Any]:
    """The error object of a failed outcome with ``code`` (the assertion shows what came instead)."""
    assert not outcome.ok and outcome.code == code, f"expected {code}, got {outcome!r}"
    return outcome.error


@dataclass
class Doc:
    """A document created through a door, with the version the test last saw."""

    door: Door
    doc_id: str
    version: int

    async def read(self, node_path: str = "/") -> Outcome:
        return await self.door.call("document_read_node", {"doc_id": self.doc_id, "node_path": node_path})

    async def content(self, node_path: str = "/") -> Any:
        """The node's content and a check that the version is the one the test expects."""
        body = ok(await self.read(node_path))
        assert body["version"] == self.version, f"version {body['version']}, expected {self.version}"
        return body["node_content"]

    async def write(self, tool: str, **args: Any) -> Outcome:
        """A write at the current version (unless given); success moves the version on."""
        args = {"doc_id": self.doc_id, "version": self.version, **args}
        outcome = await self.door.call(tool, args)
        if outcome.ok and not outcome.body.get("dry_run"):
            self.version = outcome.body["version"]
        return outcome

    async def update(self, node_path: str, node_data: Any, **args: Any) -> Outcome:
        return await self.write("document_update_node", node_path=node_path, node_data=node_data, **args)

    async def create(self, node_path: str, node_data: Any, **args: Any) -> Outcome:
        return await self.write("document_create_node", node_path=node_path, node_data=node_data, **args)

    async def delete(self, node_path: str, **args: Any) -> Outcome:
        return await self.write("document_delete_node", node_path=node_path, **args)

    async def patch(self, patch: Any, **args: Any) -> Outcome:
        return await self.write("document_apply_patch", patch=patch, **args)

    async def merge(self, node_path: str, merge_patch: Any, **args: Any) -> Outcome:
        return await self.write("document_merge_patch", node_path=node_path, merge_patch=merge_patch, **args)

    async def revert(self, to_version: int, **args: Any) -> Outcome:
        return await self.write("document_revert", to_version=to_version, **args)

    async def delete_document(self, **args: Any) -> Outcome:
        """``document_delete`` at the current version (unless given); success moves the version on."""
        return await self.write("document_delete", **args)

    async def at(self, version: int, node_path: str = "/") -> Any:
        """The node's content as it was at ``version`` (and a check that the read names that version)."""
        body = ok(await self.door.call("document_read_node",
                                       {"doc_id": self.doc_id, "node_path": node_path, "at_version": version}))
        assert body["version"] == version, f"read at {version} says version {body['version']}"
        return body["node_content"]

    async def history(self, *, page_size: int = 1000) -> list[dict[str, Any]]:
        """Every journal entry, oldest first, gathered page by page (each page checked for consistency)."""
        entries: list[dict[str, Any]] = []
        since = 0
        while True:
            body = ok(await self.door.call("document_history",
                                           {"doc_id": self.doc_id, "since_version": since, "limit": page_size}))
            page = body["entries"]
            assert len(page) <= page_size
            assert [entry["version"] for entry in page] == list(range(since + 1, since + 1 + len(page))), page
            entries += page
            if not body["has_more"]:
                assert body["next_since_version"] == body["current_version"] == len(entries), body
                return entries
            assert len(page) == page_size and body["next_since_version"] == page[-1]["version"], body
            since = body["next_since_version"]

    async def snapshot(self) -> tuple[int, Any]:
        """(version, whole content) as the server has them now."""
        body = ok(await self.read("/"))
        return body["version"], body["node_content"]


async def new_doc(door: Door) -> Doc:
    body = ok(await door.call("document_create", {}))
    return Doc(door, body["doc_id"], body["version"])


async def book_doc(door: Door) -> Doc:
    """A new document holding :func:`sample_book` (version 2)."""
    doc = await new_doc(door)
    ok(await doc.update("/", sample_book()))
    return doc
