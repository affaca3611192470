"""A whole store judged against a schema, document by document: what ``schemadoc check`` reports.

:class:`StoreCheck` walks a store's documents one at a time, each at its current version
(:func:`~schemadoc.storage.current.read_current`: snapshot + journal replayed, never a stale snapshot),
validates each whole with the server's validator (:class:`~schemadoc.validation.DocumentValidator`) and keeps
a bounded summary: the counts (checked, valid, invalid, deleted, unreadable), the violations by catalog code
and by path pattern (array indices replaced by ``*``: ``/chapters/*/isbn``), each with a few example doc_ids,
and per invalid document its id, version, violation count and first violations. Nothing is written; only the
document being judged is held (the validator is told to forget it afterwards).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from schemadoc.errors import SchemaDocError
from schemadoc.pointer import escape, format_pointer, parse
from schemadoc.storage.base import DocumentStore
from schemadoc.storage.current import CurrentDocument, current_documents, list_documents
from schemadoc.validation import DocumentValidator, Violation

__all__ = ["DocumentVerdict", "StoreCheck", "Tally", "path_pattern"]

EXAMPLES = 3
"""Example doc_ids kept per violation code and per path pattern."""
FIRST_VIOLATIONS = 3
"""Violations listed per invalid document (the count says how many there are)."""
MAX_PATTERNS = 1000
"""Distinct path patterns tallied; violations beyond go to the ``(other)`` pattern (a bound on the summary)."""
OTHER_PATTERN = "(other)"


def path_pattern(document: Any, violation: Violation) -> str:
    """Where ``violation`` lies in ``document``, with every array index replaced by ``*`` (``/chapters/*/isbn``).

    A missing required member is placed at the member (its object's path and its name), so that one member
    missing in every chapter is one pattern. Array positions are told from the document itself: a digit
    token of an object member stays as it is.
    """
    tokens = parse(violation.path) if violation.path not in ("", "/") else []
    pattern: list[str | int] = []
    node = document
    for token in tokens:
        if isinstance(node, list):
            pattern.append("*")
            node = node[int(token)] if token.isdigit() and int(token) < len(node) else None
        else:
            pattern.append(token)
            node = node.get(token) if isinstance(node, dict) else None
    shown = format_pointer(pattern)
    if violation.constraint in ("required", "dependentRequired") and isinstance(violation.expected, str):
        shown = f"{shown}/{escape(violation.expected)}"
    return shown or "/"


@dataclass
class Tally:
    """Violations of one code or one path pattern: how many, in how many documents, a few of those documents."""

    violations: int = 0
    documents: int = 0
    examples: list[str] = field(default_factory=list)

    def add(self, doc_id: str, violations: int) -> None:
        self.violations += violations
        self.documents += 1
        if len(self.examples) < EXAMPLES:
            self.examples.append(doc_id)

    def to_dict(self) -> dict[str, Any]:
        return {"violations": self.violations, "documents": self.documents, "examples": list(self.examples)}


@dataclass(frozen=True)
class DocumentVerdict:
    """One document's verdict at ``version``: valid, or its violation count and first violations."""

    doc_id: str
    version: int
    valid: bool
    violation_count: int = 0
    violations: tuple[dict[str, Any], ...] = ()
    deleted: bool = False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"doc_id": self.doc_id, "version": self.version, "violation_count": self.violation_count,
                               "violations": list(self.violations)}
        if self.deleted:
            out["deleted"] = True
        return out


def _shown(violation: Violation) -> dict[str, Any]:
    """A violation as listed in the summary: what it is and where, without excerpts or suggested fixes."""
    return {"code": violation.code, "path": violation.path, "message": violation.message}


class StoreCheck:
    """Judges a store's documents against ``validator``'s schema and summarises the verdicts (module docstring).

    ``include_deleted``: check deleted documents too (by default they are only counted: a deleted document
    is not served until it is restored).
    """

    def __init__(self, validator: DocumentValidator, *, include_deleted: bool = False) -> None:
        self.validator = validator
        self.include_deleted = include_deleted
        self.total = 0
        self.checked = 0
        self.valid = 0
        self.deleted = 0
        self.invalid: list[DocumentVerdict] = []
        self.unreadable: list[dict[str, Any]] = []
        self.by_code: dict[str, Tally] = {}
        self.by_pattern: dict[str, Tally] = {}

    def run(self, store: DocumentStore, progress: Callable[[int, int], None] | None = None) -> None:
        """Check every document of ``store`` (listed once at the start; those created later are not seen),
        calling ``progress(done, total)`` after each."""
        metas, failures = list_documents(store)
        for failure in failures:
            self.note_unreadable(failure)
        self.deleted = sum(1 for meta in metas if meta.deleted_at is not None)
        if not self.include_deleted:
            metas = [meta for meta in metas if meta.deleted_at is None]
        self.total = len(metas) + len(self.unreadable)
        for done, read in enumerate(current_documents(store, metas), start=len(self.unreadable) + 1):
            if isinstance(read, SchemaDocError):
                self.note_unreadable(read)
            else:
                self.judge(read)
            if progress is not None:
                progress(done, self.total)

    def note_unreadable(self, error: SchemaDocError) -> None:
        if error.code == "document-not-found":  # purged since the list was read
            self.total -= 1
            return
        self.unreadable.append({"doc_id": error.details.get("doc_id"), "code": error.code, "message": error.message})

    def judge(self, document: CurrentDocument) -> DocumentVerdict:
        meta, content = document.meta, document.content
        try:
            report = self.validator.validate(content)
        finally:
            self.validator.forget(content)  # the validator remembers valid documents: only this one is held
        self.checked += 1
        deleted = meta.deleted_at is not None
        if report.valid:
            self.valid += 1
            return DocumentVerdict(meta.doc_id, meta.version, True, deleted=deleted)
        codes: dict[str, int] = {}
        patterns: dict[str, int] = {}
        for violation in report.violations:
            codes[violation.code] = codes.get(violation.code, 0) + 1
            pattern = path_pattern(content, violation)
            if pattern not in self.by_pattern and len(self.by_pattern) >= MAX_PATTERNS:
                pattern = OTHER_PATTERN
            patterns[pattern] = patterns.get(pattern, 0) + 1
        for code, count in codes.items():
            self.by_code.setdefault(code, Tally()).add(meta.doc_id, count)
        for pattern, count in patterns.items():
            self.by_pattern.setdefault(pattern, Tally()).add(meta.doc_id, count)
        verdict = DocumentVerdict(meta.doc_id, meta.version, False, report.count,
                                  tuple(_shown(v) for v in report.violations[:FIRST_VIOLATIONS]), deleted)
        self.invalid.append(verdict)
        return verdict

    @property
    def all_valid(self) -> bool:
        return not self.invalid and not self.unreadable

    def summary(self) -> dict[str, Any]:
        """The counts, the tallies (most violations first) and the invalid and unreadable documents."""
        def ordered(tallies: dict[str, Tally]) -> dict[str, Any]:
            ranked = sorted(tallies.items(), key=lambda item: (-item[1].violations, item[0]))
            return {name: tally.to_dict() for name, tally in ranked}

        return {"documents": self.total, "checked": self.checked, "valid": self.valid, "invalid": len(self.invalid),
                "unreadable": len(self.unreadable), "deleted": self.deleted, "deleted_checked": self.include_deleted,
                "by_code": ordered(self.by_code), "by_path": ordered(self.by_pattern),
                "invalid_documents": [verdict.to_dict() for verdict in self.invalid],
                "unreadable_documents": list(self.unreadable)}
