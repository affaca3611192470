"""Exceptions of :mod:`schemadoc.client`: every error answer of the server, carrying its error object."""

from __future__ import annotations

from typing import Any

__all__ = ["ClientError", "VersionConflictError"]


class ClientError(Exception):
    """The server refused a request: ``status`` (HTTP), ``code`` (the catalog's, e.g. ``path-not-found``),
    ``message``, ``details``, ``remediation``, and ``error``, the whole error object as the server sent it
    (``{"code", "category", "message", "details", "remediation"}``)."""

    def __init__(self, status: int, error: dict[str, Any]) -> None:
        self.status = status
        self.error = error
        self.code: str = str(error.get("code", "unexpected-response"))
        self.message: str = str(error.get("message", ""))
        details = error.get("details")
        self.details: dict[str, Any] = details if isinstance(details, dict) else {}
        self.remediation: str | None = error.get("remediation")
        super().__init__(f"{status} {self.code}: {self.message}")

    @property
    def violations(self) -> list[dict[str, Any]]:
        """For ``validation-failed``: every violation (code, path, message, ...).

        ``details["suggested_call"]`` is the one call that would fix them."""
        found = self.details.get("violations")
        return found if isinstance(found, list) else []


class VersionConflictError(ClientError):
    """``version-conflict``: the document moved on since the version the write named (``details`` has the
    current version). :meth:`schemadoc.client.Client.retry_on_conflict` re-reads and tries again."""


def error_for(status: int, body: Any) -> ClientError:
    """The exception for an error answer (a body that is not an error object still gives one)."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        error = {"code": "unexpected-response", "message": f"HTTP {status}: {str(body)[:500]}", "details": {}}
    kind = VersionConflictError if error.get("code") == "version-conflict" else ClientError
    return kind(status, error)
