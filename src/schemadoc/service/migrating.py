"""Running a named migration over stored documents (``schemadoc migrate-documents``), through the service's write
path: each document's migration is one journaled version whose ``info.migration`` is the migration's name,
validated like any write, made from the version read (a ``version-conflict`` means read again and plan again).

Already migrated: a document whose journal holds an entry with the migration's name. The journal is read from
the stored meta's version back, a page at a time, stopping at the first entry of that name (version 1, the
creation, is never read: no migration made it), before the document is loaded; so a re-run after a crash costs
a meta read and a short journal read for each document the first run reached (never its content), and the
journal after version 1 for those it did not. Entries written after that check and before the document's read
are read too. The version read and the version written are the same (the write names it), so two runs at once
still migrate each document once: the loser of the race reads again and finds the winner's entry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from schemadoc.errors import SchemaDocError
from schemadoc.ops.apply import json_equal
from schemadoc.ops.migration import Migration, plan
from schemadoc.pointer import parse, resolve
from schemadoc.storage.base import check_doc_id

if TYPE_CHECKING:
    from schemadoc.service import DocumentService

__all__ = ["OUTCOMES", "DocumentOutcome", "MigrationSummary", "Where", "migrate_document", "migrate_documents",
           "migrated_at"]

OUTCOMES: Final = ("valid", "invalid", "refused", "failed", "not_applicable", "unchanged", "already_migrated")
"""Each document's outcome: migrated (or, in a dry run, would be) and valid; migrated and still invalid (only where
writes may repair: the moderate validation level); refused by the schema (``validation-failed``); failed (any other
error: an operation that cannot apply, the function raised, the store); not applicable (a ``test`` guard failed);
unchanged (the migration changes nothing in it); already migrated (its journal has the migration's entry)."""
FAILING: Final = frozenset({"refused", "failed"})
EXAMPLES: Final = 5
"""doc_ids kept as examples of each outcome."""
MAX_FAILURES: Final = 100
"""Failures kept with their details (every one is counted)."""
ATTEMPTS: Final = 50
"""Reads and plans of one document before its ``version-conflict`` is reported (another writer keeps winning)."""
_PAGE: Final = 64


@dataclass(frozen=True)
class Where:
    """A selection: the documents whose node at ``pointer`` equals ``value`` (JSON equality)."""

    pointer: str
    value: Any

    def matches(self, document: Any) -> bool:
        try:
            node, _ = resolve(document, parse(self.pointer), allow_negative=False)
        except SchemaDocError:
            return False
        return json_equal(node, self.value)


@dataclass(frozen=True)
class DocumentOutcome:
    doc_id: str
    outcome: str                     # one of OUTCOMES, or "not_selected"
    version: int = 0                 # the version written (a dry run: the version read); already migrated: its entry
    code: str = ""                   # refused / failed: the error code
    message: str = ""
    violation: dict[str, Any] | None = None   # refused: the first violation
    remaining: int = 0               # invalid: the violations that remain

    def to_dict(self) -> dict[str, Any]:
        item: dict[str, Any] = {"doc_id": self.doc_id, "outcome": self.outcome}
        if self.version:
            item["version"] = self.version
        if self.code:
            item.update(code=self.code, message=self.message)
        elif self.message:
            item["reason"] = self.message
        if self.violation is not None:
            item["first_violation"] = self.violation
        if self.outcome == "invalid":
            item["remaining_violations"] = self.remaining
        return item


@dataclass
class MigrationSummary:
    """What a run did (or a dry run would do): a count per outcome, a few example doc_ids per outcome, and the
    first :data:`MAX_FAILURES` failures with their code and message."""

    migration: str
    kind: str
    dry_run: bool
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    examples: dict[str, list[str]] = field(default_factory=lambda: {outcome: [] for outcome in OUTCOMES})
    failures: list[DocumentOutcome] = field(default_factory=list)
    not_selected: int = 0

    def add(self, outcome: DocumentOutcome) -> None:
        if outcome.outcome == "not_selected":
            self.not_selected += 1
            return
        self.counts[outcome.outcome] += 1
        if len(self.examples[outcome.outcome]) < EXAMPLES:
            self.examples[outcome.outcome].append(outcome.doc_id)
        if outcome.outcome in FAILING and len(self.failures) < MAX_FAILURES:
            self.failures.append(outcome)

    @property
    def selected(self) -> int:
        return sum(self.counts.values())

    @property
    def ok(self) -> bool:
        """Every selected document was migrated or skipped (already migrated, not applicable, unchanged)."""
        return not any(self.counts[outcome] for outcome in FAILING)

    def to_dict(self) -> dict[str, Any]:
        return {"migration": self.migration, "kind": self.kind, "dry_run": self.dry_run,
                "documents": self.selected, "not_selected": self.not_selected, "counts": dict(self.counts),
                "examples": {outcome: ids for outcome, ids in self.examples.items() if ids},
                "failures": [failure.to_dict() for failure in self.failures],
                "failures_total": sum(self.counts[outcome] for outcome in FAILING), "ok": self.ok}


def migrated_at(service: DocumentService, doc_id: str, name: str, version: int, since: int = 1) -> int | None:
    """The version of ``doc_id`` (above ``since``, at most ``version``) that migration ``name`` wrote, or None: its
    journal read from ``version`` back a page at a time (version 1, the creation, is never a migration's)."""
    until = version
    floor = max(1, since)
    while until > floor:
        since = max(floor, until - _PAGE)
        for entry in reversed(service.store.read_journal(doc_id, since, until)):
            if entry.info.get("migration") == name:
                return entry.version
        until = since
    return None


def migrate_document(service: DocumentService, migration: Migration, doc_id: str, *, dry_run: bool = False,
                     actor: str | None = None, where: Sequence[Where] = ()) -> DocumentOutcome:
    """Migrate one document from its current version (or tell what would happen, ``dry_run``). Never raises for
    the document's own trouble: its failure is the outcome."""
    try:
        doc_id = check_doc_id(doc_id)
        # the journal first, from the stored meta's version: a document already migrated is never loaded
        checked = service.store.read_meta(doc_id).version
        reached = migrated_at(service, doc_id, migration.name, checked)
        if reached is not None:
            return DocumentOutcome(doc_id, "already_migrated", reached)
        for _ in range(ATTEMPTS):
            read = service.read_node(doc_id, "")
            if read.version > checked:  # written since: only the newer entries are read
                reached = migrated_at(service, doc_id, migration.name, read.version, since=checked)
                if reached is not None:
                    return DocumentOutcome(doc_id, "already_migrated", reached)
                checked = read.version
            if not all(selection.matches(read.node) for selection in where):
                return DocumentOutcome(doc_id, "not_selected", read.version)
            planned = plan(read.node, migration)
            if planned.patch is None:
                return DocumentOutcome(doc_id, "not_applicable", read.version, message=planned.reason)
            if not planned.patch:
                return DocumentOutcome(doc_id, "unchanged", read.version)
            try:
                result = service.apply_patch(doc_id, planned.patch, read.version, dry_run=dry_run, actor=actor,
                                             migration=migration.name)
            except SchemaDocError as error:
                if error.code == "version-conflict":
                    continue  # written meanwhile: migrate the new version
                raise
            if result.report.valid:
                return DocumentOutcome(doc_id, "valid", result.version)
            return DocumentOutcome(doc_id, "invalid", result.version, remaining=len(result.report.violations))
        raise SchemaDocError("version-conflict", f"Document {doc_id} was written by others {ATTEMPTS} times while "
                             "it was being migrated.", {"doc_id": doc_id})
    except SchemaDocError as error:
        if error.code == "validation-failed":
            violations = error.details.get("violations") or []
            first = violations[0] if violations and isinstance(violations[0], dict) else None
            shown = {key: first[key] for key in ("path", "code", "message") if key in first} if first else None
            return DocumentOutcome(doc_id, "refused", code=error.code, message=error.message, violation=shown)
        return DocumentOutcome(doc_id, "failed", code=error.code, message=error.message)


def selected_doc_ids(service: DocumentService, doc_ids: Iterable[str] | None) -> list[str]:
    """The doc_ids named (in order, once each), or every document not deleted, by doc_id."""
    if doc_ids is not None:
        return list(dict.fromkeys(doc_ids))
    return [meta.doc_id for meta in service.store.list_metas() if meta.deleted_at is None]


def migrate_documents(service: DocumentService, migration: Migration, doc_ids: Iterable[str] | None = None, *,
                      dry_run: bool = False, actor: str | None = None, where: Sequence[Where] = (),
                      progress: Callable[[int, int], None] | None = None) -> MigrationSummary:
    """Migrate the documents named (default: every document not deleted), one at a time, each dropped from memory
    once done; ``progress(done, total)`` after each."""
    ids = selected_doc_ids(service, doc_ids)
    summary = MigrationSummary(migration.name, migration.kind, dry_run)
    for done, doc_id in enumerate(ids, start=1):
        summary.add(migrate_document(service, migration, doc_id, dry_run=dry_run, actor=actor, where=where))
        # each document is visited once: holding it would only fill the budget (its lagging snapshot is still
        # written, from one load of it at a time)
        service._forget(doc_id)
        if progress is not None:
            progress(done, len(ids))
    return summary
