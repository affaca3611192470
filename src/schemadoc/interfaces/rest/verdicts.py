"""The REST routes of verdicts under the served schema, beside the catalogue (docs/schema-changes.md): the
server's status (the served schema's digest, the verdict counts, the inventory's progress), the inventory
started on demand, a document's verdict, and a check of one document on demand.

They are routes of their own, not catalogue operations: MCP agents see verdicts in ``document_list`` (its
``valid`` filter and each item's ``valid``), and the tool list stays within its budget.
"""

from __future__ import annotations

import functools
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Path

from schemadoc.interfaces.rest.wire import JSONBody, Rest, errors
from schemadoc.operations.arguments import ULID_PATTERN
from schemadoc.operations.verdicts import DocumentVerdictResult, ServerStatusResult
from schemadoc.service import DocumentService
from schemadoc.storage.base import DocumentMeta, check_doc_id

__all__ = ["add_verdict_routes", "document_verdict", "server_status"]

_DocIdPath = Annotated[str, Path(description="The document's id (a ULID returned by document_create).",
                                 json_schema_extra={"pattern": ULID_PATTERN})]


def server_status(service: DocumentService) -> dict[str, Any]:
    """The status answer: the served schema's digest, the verdict counts and the inventory's progress."""
    counts = service.verdict_counts()
    return {"success": True, "schema_uri": service.schema_uri, "schema_digest": service.schema.digest, **counts,
            "inventory": service.inventory.to_dict()}


def document_verdict(service: DocumentService, meta: DocumentMeta) -> dict[str, Any]:
    """A document's verdict answer: the digest its last write recorded, and the served schema's verdict."""
    verdict = service.current_verdict(meta)
    return {"success": True, "doc_id": meta.doc_id, "version": meta.version, "schema_digest": meta.schema_digest,
            "status": service.document_status(meta), "verdict": None if verdict is None else verdict.to_dict()}


def _read_verdict(service: DocumentService, doc_id: str) -> dict[str, Any]:
    doc_id = check_doc_id(doc_id)
    service.version_of(doc_id)  # document-not-found for a deleted one, like every read
    return document_verdict(service, service.store.read_meta(doc_id))


def _check(service: DocumentService, doc_id: str) -> dict[str, Any]:
    doc_id = check_doc_id(doc_id)
    service.version_of(doc_id)
    meta, _ = service.check_document(doc_id)
    return document_verdict(service, meta)


def add_verdict_routes(router: APIRouter) -> None:
    """Add ``GET /status``, ``POST /inventory``, ``GET /documents/{doc_id}/verdict`` and
    ``POST /documents/{doc_id}/check``."""

    @router.get("/status", response_model=ServerStatusResult, tags=["schema"], operation_id="server_status",
                summary="The served schema's digest, how many documents it accepts, refuses or has not checked yet",
                description="Counts over live documents; `inventory` is the background check after start-up "
                            "(check_documents_on_start).", responses=errors(500))
    async def status(rest: Rest) -> JSONBody:
        return JSONBody(await anyio.to_thread.run_sync(server_status, rest.service))

    @router.post("/inventory", response_model=ServerStatusResult, tags=["schema"], status_code=202,
                 operation_id="inventory_start", summary="Check every unchecked document now, in the background",
                 description="Starts the inventory (as after start-up) unless it is running; the answer is the "
                             "status, whose `inventory` shows its progress.", responses=errors(500))
    async def inventory(rest: Rest) -> JSONBody:
        rest.service.start_inventory()
        return JSONBody(await anyio.to_thread.run_sync(server_status, rest.service), status_code=202)

    @router.get("/documents/{doc_id}/verdict", response_model=DocumentVerdictResult, tags=["schema"],
                operation_id="document_verdict", summary="What the served schema says of a document",
                description="The digest of the schema its last write was judged by, and the served schema's "
                            "verdict on its current version (valid, or the count and the first five violations); "
                            "`unchecked` until the inventory or a check reaches it.", responses=errors(400, 404))
    async def verdict(rest: Rest, doc_id: _DocIdPath) -> JSONBody:
        return JSONBody(await anyio.to_thread.run_sync(functools.partial(_read_verdict, rest.service, doc_id)))

    @router.post("/documents/{doc_id}/check", response_model=DocumentVerdictResult, tags=["schema"],
                 operation_id="document_check", summary="Check a document against the served schema now",
                 description="Validates the current version and records the verdict (no new version, nothing "
                             "journaled); a verdict already known for this version and schema is returned as it is.",
                 responses=errors(400, 404, 408, 500))
    async def check(rest: Rest, doc_id: _DocIdPath) -> JSONBody:
        return JSONBody(await anyio.to_thread.run_sync(functools.partial(_check, rest.service, doc_id)))
