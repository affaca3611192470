"""A document's verdict under one schema at one version (docs/schema-changes.md), kept with its meta."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["VERDICT_VIOLATIONS", "Verdict"]

VERDICT_VIOLATIONS = 5
"""A verdict keeps the first five violations (code, path, message); the count says how many there are."""
_VERDICT_TEXT_CHARS = 300


@dataclass(frozen=True)
class Verdict:
    """A document's verdict under one schema at one version: valid, or its violation count and the first few.

    ``digest`` is the schema's (:attr:`~schemadoc.schema.LoadedSchema.digest`), ``version`` the document's
    version it judged. Bounded: at most :data:`VERDICT_VIOLATIONS` violations, each ``{"code", "path",
    "message"}`` with its texts cut to 300 characters (about 2 KB at most). ``checked_at`` is set by a check
    (the inventory, on demand), ``None`` for the verdict a write recorded.
    """

    version: int
    digest: str
    violation_count: int = 0
    violations: tuple[dict[str, str], ...] = ()
    checked_at: str | None = None

    @property
    def valid(self) -> bool:
        return self.violation_count == 0

    @classmethod
    def of(cls, version: int, digest: str, violations: Iterable[Any], count: int,
           checked_at: str | None = None) -> Verdict:
        """The verdict with the first :data:`VERDICT_VIOLATIONS` of ``violations`` (objects with ``code``,
        ``path`` and ``message``), their texts cut to a bound."""
        kept: list[dict[str, str]] = []
        for violation in violations:
            if len(kept) == VERDICT_VIOLATIONS:
                break
            kept.append({name: _cut(str(getattr(violation, name, "") if not isinstance(violation, dict)
                                        else violation.get(name, ""))) for name in ("code", "path", "message")})
        return cls(version, digest, count, tuple(kept), checked_at)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"version": self.version, "digest": self.digest, "valid": self.valid,
                                "violation_count": self.violation_count, "violations": list(self.violations)}
        if self.checked_at is not None:
            data["checked_at"] = self.checked_at
        return data

    @classmethod
    def from_dict(cls, data: Any) -> Verdict | None:
        """The verdict of a JSON object as :meth:`to_dict` makes it; ``None`` for anything else (a damaged
        record only means the document counts as unchecked)."""
        if not isinstance(data, dict):
            return None
        version, digest, count = data.get("version"), data.get("digest"), data.get("violation_count", 0)
        violations = data.get("violations", [])
        checked_at = data.get("checked_at")
        if (not isinstance(version, int) or isinstance(version, bool) or not isinstance(digest, str)
                or not isinstance(count, int) or isinstance(count, bool) or count < 0
                or not isinstance(violations, list) or not (checked_at is None or isinstance(checked_at, str))):
            return None
        return cls.of(version, digest, [item for item in violations if isinstance(item, dict)], count, checked_at)


def _cut(text: str) -> str:
    return text if len(text) <= _VERDICT_TEXT_CHARS else text[:_VERDICT_TEXT_CHARS - 1] + "\u2026"
