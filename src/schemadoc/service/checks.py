"""The argument checks the use cases share: each bad argument is ``invalid-request`` naming it."""

from __future__ import annotations

from typing import Any

from schemadoc.errors import SchemaDocError
from schemadoc.pointer import LARGEST_INDEX, json_type

__all__ = ["LARGEST_INTEGER", "MIN_MAX_BYTES", "check_bounds", "check_current", "check_int", "check_version",
           "path_arg", "shown_int"]

LARGEST_INTEGER = LARGEST_INDEX
"""The largest integer an argument, query parameter or header may be: a signed 64-bit integer (what the
PostgreSQL store keeps, and what JSON clients commonly hold exactly). Beyond it is ``invalid-request``."""

MIN_MAX_BYTES = 512
"""The smallest ``max_bytes`` a bounded read accepts (room for a stub and its pointer)."""


def check_int(name: str, value: Any, low: int, high: int | None) -> int:
    """``value`` when it is an integer from ``low`` to ``high`` (no ``high``: :data:`LARGEST_INTEGER`)."""
    top = LARGEST_INTEGER if high is None else high
    if isinstance(value, bool) or not isinstance(value, int) or value < low or value > top:
        bounds = f"from {low} to {top}"
        raise SchemaDocError("invalid-request", f"{name} must be an integer {bounds}, got {shown_int(value)}.",
                             {"argument": name, "value": shown_int(value)})
    return int(value)


def shown_int(value: Any) -> str:
    """``repr(value)`` for a message, shortened (``repr`` of an integer of more than 4,300 digits fails)."""
    if isinstance(value, int) and not isinstance(value, bool) and not -LARGEST_INTEGER - 1 <= value <= LARGEST_INTEGER:
        return f"an integer of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= 100 else text[:100] + "…"


def check_version(version: Any) -> int:
    return check_int("version", version, 1, None)


def check_bounds(*, max_depth: int | None = None, offset: int = 0, limit: int | None = None,
                 max_bytes: int | None = None) -> None:
    """The arguments of bounded reads: ``invalid-request`` naming the one out of range."""
    if max_depth is not None:
        check_int("max_depth", max_depth, 0, 255)
    check_int("offset", offset, 0, None)
    if limit is not None:
        check_int("limit", limit, 1, None)
    if max_bytes is not None:
        check_int("max_bytes", max_bytes, MIN_MAX_BYTES, None)


def path_arg(node_path: Any) -> str:
    if not isinstance(node_path, str):
        raise SchemaDocError("invalid-request", f"node_path must be a string, got {json_type(node_path)}.",
                             {"argument": "node_path"})
    return node_path


def check_current(doc_id: str, version: int, current: int) -> None:
    if version != current:
        raise SchemaDocError(
            "version-conflict",
            f"Document {doc_id} is at version {current}, not {version}; it changed since you read it.",
            {"doc_id": doc_id, "expected_version": version, "actual_version": current},
            remediation="Re-read the node to get the current version and content, reapply your "
                        "change, and retry with that version.")
