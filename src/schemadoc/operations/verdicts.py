"""The result bodies of the REST routes beside the catalogue that tell verdicts under the served schema
(``GET /status``, ``POST /inventory``, a document's verdict and its check: docs/schema-changes.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from schemadoc.operations.results import Body, Result

__all__ = ["DocumentVerdictResult", "InventoryBody", "ServerStatusResult", "VerdictBody", "VerdictViolationBody"]


class VerdictViolationBody(Body):
    code: str
    path: str
    message: str


class VerdictBody(Body):
    version: int = Field(description="The document's version it judged.")
    digest: str = Field(description="The digest of the schema that judged it.")
    valid: bool
    violation_count: int
    violations: list[VerdictViolationBody] = Field(description="The first five violations (code, path, message).")
    checked_at: str | None = Field(default=None, description="When a check recorded it; null: the write's own.")


class DocumentVerdictResult(Result):
    doc_id: str
    version: int
    schema_digest: str | None = Field(description="The digest of the schema that judged the last write; null: "
                                                   "written before digests were recorded.")
    status: Literal["valid", "invalid", "unchecked"] = Field(
        description="What the served schema says of the current version; unchecked: not known yet.")
    verdict: VerdictBody | None = Field(description="The served schema's verdict on the current version; null "
                                                    "while unchecked.")


class InventoryBody(Body):
    state: Literal["idle", "running", "done", "stopped"]
    to_check: int
    checked: int
    valid: int
    invalid: int
    skipped: int
    failed: int
    started_at: str | None = None
    finished_at: str | None = None
    seconds: float | None = None


class ServerStatusResult(Result):
    schema_uri: str
    schema_digest: str = Field(description="The digest of the served schema (canonical, with its $ref documents).")
    documents: int = Field(description="Live documents.")
    valid: int
    invalid: int
    unchecked: int = Field(description="Documents whose verdict under the served schema is not known yet.")
    inventory: InventoryBody
