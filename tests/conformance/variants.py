"""The catalogue of deliberately broken schemadoc variants: each a small switch in a test build.

A variant monkeypatches the service, the store, the validator or the pointer module of a schemadoc
process started by ``launch.py``; the product's code path never sees these switches. The conformance
suite must fail every variant on the clause it breaks (``clause``); ``keyword`` narrows the catalogue
run to the tests of that clause most likely to catch it, so the run stays short.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from schemadoc import pointer, validation
from schemadoc.errors import SchemaDocError
from schemadoc.ops.compile import CompiledWrite
from schemadoc.service import DocumentService, core, nodes
from schemadoc.storage.files import FileDocumentStore


@dataclass(frozen=True)
class Variant:
    name: str
    what: str
    clause: str
    keyword: str
    apply: Callable[[], None]
    also: tuple[str, ...] = ()
    """More clauses the same bug breaks, which must fail too (``keyword`` selects a test of each)."""

    @property
    def clauses(self) -> tuple[str, ...]:
        return (self.clause, *self.also)


def _first_error_only() -> None:
    validate, validate_change = validation.DocumentValidator.validate, validation.DocumentValidator.validate_change

    def first_only(self: Any, document: Any) -> validation.ValidationReport:
        report = validate(self, document)
        return replace(report, violations=report.violations[:1])

    def first_change_only(self: Any, before: Any, after: Any, *, keep: bool = True) -> validation.ValidationReport:
        report = validate_change(self, before, after, keep=keep)
        return replace(report, violations=report.violations[:1])

    validation.DocumentValidator.validate = first_only  # type: ignore[method-assign]
    validation.DocumentValidator.validate_change = first_change_only  # type: ignore[method-assign]


def _no_version_check() -> None:
    core.check_current = lambda doc_id, version, current: None


def _validate_only_created_here() -> None:
    created: set[str] = set()
    create, write = DocumentService.create_document, DocumentService._write

    def create_document(self: DocumentService) -> Any:
        result = create(self)
        created.add(result[0])
        return result

    def unvalidated_write(self: DocumentService, doc_id: str, *args: Any, **kwargs: Any) -> Any:
        if doc_id in created:
            return write(self, doc_id, *args, **kwargs)
        validator = self.validator
        self.validator = _AcceptEverything()  # type: ignore[assignment]
        try:
            return write(self, doc_id, *args, **kwargs)
        finally:
            self.validator = validator

    DocumentService.create_document = create_document  # type: ignore[method-assign]
    DocumentService._write = unvalidated_write  # type: ignore[method-assign]


class _AcceptEverything:
    def validate(self, document: Any) -> validation.ValidationReport:
        return validation.VALID

    def validate_change(self, before: Any, after: Any, *, keep: bool = True) -> validation.ValidationReport:
        return validation.VALID


def _version_checked_only_here() -> None:
    """The version is checked only on documents this process created: one loaded from storage (after a restart)
    takes a write at any version."""
    created: set[str] = set()
    create, check_current = DocumentService.create_document, core.check_current

    def create_document(self: DocumentService, *args: Any, **kwargs: Any) -> Any:
        result = create(self, *args, **kwargs)
        created.add(result[0])
        return result

    def check_if_created_here(doc_id: str, version: int, current: int) -> None:
        if doc_id in created:
            check_current(doc_id, version, current)

    DocumentService.create_document = create_document  # type: ignore[method-assign]
    core.check_current = check_if_created_here


def _ancestor_off_by_one() -> None:
    not_found = pointer._not_found

    def one_level_up(concrete: list[str | int], *args: Any, **kwargs: Any) -> Any:
        try:
            not_found(concrete, *args, **kwargs)
        except SchemaDocError as error:
            error.details["deepest_ancestor"] = pointer.format_pointer(concrete[:-1]) or "/"
            raise

    pointer._not_found = one_level_up


def _dash_in_journal() -> None:
    """An append is journaled (and returned) as asked, ``/-``, instead of at its concrete index."""
    apply_patch, compile_create = nodes.apply_patch, nodes.compile_create

    def ask_with_the_dash(document: Any, node_path: str, value: Any) -> CompiledWrite:
        compiled = compile_create(document, node_path, value)
        if node_path.endswith("/-"):
            return CompiledWrite([{**compiled.patch[0], "path": node_path}], compiled.node_path)
        return compiled

    def leave_the_dash(document: Any, patch: list[dict[str, Any]]) -> Any:
        applied = apply_patch(document, patch)
        journaled = [{**done, "path": asked["path"]} if str(asked.get("path", "")).endswith("/-") else done
                     for asked, done in zip(patch, applied.patch, strict=False)]
        return replace(applied, patch=journaled)

    nodes.compile_create = ask_with_the_dash
    nodes.apply_patch = leave_the_dash


def _dry_run_writes() -> None:
    write = DocumentService._write

    def writes_anyway(self: DocumentService, *args: Any, dry_run: bool, **kwargs: Any) -> Any:
        result = write(self, *args, dry_run=False, **kwargs)
        return replace(result, dry_run=dry_run)

    DocumentService._write = writes_anyway  # type: ignore[method-assign]


def _lost_update_between_processes() -> None:
    """Each process trusts its own view: the service its cached state, the store the journal tail it last
    read, so a second process writes over what the first one committed."""
    state, tail = DocumentService._state, FileDocumentStore._tail

    def cached_state(self: DocumentService, doc_id: str, *, include_deleted: bool = False) -> Any:
        cached = self._states.get(doc_id)
        return cached if cached is not None else state(self, doc_id, include_deleted=include_deleted)

    def cached_tail(self: FileDocumentStore, doc_id: str, paths: Any) -> Any:
        cached = self._tails.get(doc_id)
        return cached if cached is not None else tail(self, doc_id, paths)

    DocumentService._state = cached_state  # type: ignore[method-assign]
    FileDocumentStore._tail = cached_tail  # type: ignore[method-assign]


def _ack_before_durable() -> None:
    """The store answers at once and writes half a second later, on a thread of its own."""
    commit = FileDocumentStore.commit

    def later(self: FileDocumentStore, *args: Any, **kwargs: Any) -> None:
        def run() -> None:
            time.sleep(0.5)
            commit(self, *args, **kwargs)

        threading.Thread(target=run, daemon=True).start()

    FileDocumentStore.commit = later  # type: ignore[method-assign]


def _create_overwrites() -> None:
    compile_create, compile_update = nodes.compile_create, nodes.compile_update

    def overwrite(document: Any, node_path: str, value: Any) -> CompiledWrite:
        try:
            return compile_create(document, node_path, value)
        except SchemaDocError as error:
            if error.code != "conflict":
                raise
            return compile_update(document, node_path, value)

    nodes.compile_create = overwrite


def _versions_skip() -> None:
    commit = DocumentService._commit

    def skip_one(self: DocumentService, doc_id: str, state: Any, *args: Any, **kwargs: Any) -> Any:
        if state is not None:
            state = replace(state, meta=replace(state.meta, version=state.meta.version + 1))
        return commit(self, doc_id, state, *args, **kwargs)

    DocumentService._commit = skip_one  # type: ignore[method-assign]


def _failed_write_persists() -> None:
    """An invalid write is reported as failed, but stored all the same."""
    write = DocumentService._write

    def persist_then_fail(self: DocumentService, *args: Any, **kwargs: Any) -> Any:
        validator = self.validator
        try:
            return write(self, *args, **kwargs)
        except SchemaDocError as error:
            if error.code != "validation-failed" or kwargs.get("dry_run"):
                raise
            self.validator = _AcceptEverything()  # type: ignore[assignment]
            try:
                write(self, *args, **kwargs)
            finally:
                self.validator = validator
            raise

    DocumentService._write = persist_then_fail  # type: ignore[method-assign]


def _negative_index_off_by_one() -> None:
    index_token = pointer.index_token

    def one_too_far(token: str, length: int, pointer_text: str, *, allow_negative: bool) -> int:
        index = index_token(token, length, pointer_text, allow_negative=allow_negative)
        return index - 1 if token.startswith("-") and index > 0 else index

    pointer.index_token = one_too_far


def _list_drops_the_newest() -> None:
    list_documents = DocumentService.list_documents

    def all_but_newest(self: DocumentService, limit: int = 100, offset: int = 0) -> Any:
        listed = list_documents(self, limit, offset)
        return replace(listed, documents=listed.documents[:-1], total=max(listed.total - 1, 0))

    DocumentService.list_documents = all_but_newest  # type: ignore[method-assign]


def _stale_export() -> None:
    """The export (``schema://{doc_id}``, REST ``GET ?path=/``) is served from the first version."""
    read_document = DocumentService.read_document

    def first_version(self: DocumentService, doc_id: str) -> Any:
        _content, meta = read_document(self, doc_id)
        return self.read_version(doc_id, 1), meta

    DocumentService.read_document = first_version  # type: ignore[method-assign]


def _without_merge_patch() -> None:
    """Not a bug: an implementation without the optional merge patch (its clause must be not applicable)."""
    from schemadoc.interfaces.mcp_door import server as mcp

    build = mcp.build_mcp_server

    def without(*args: Any, **kwargs: Any) -> Any:
        server = build(*args, **kwargs)
        server.remove_tool("document_merge_patch")
        return server

    mcp.build_mcp_server = without


FEATURES: dict[str, Callable[[], None]] = {"without-merge-patch": _without_merge_patch}
"""Switches that leave an optional feature out (the suite must say not applicable, never failed)."""

VARIANTS: dict[str, Variant] = {variant.name: variant for variant in (
    Variant("first-error-only", "validation reports only the first violation", "FR-059",
            "every_violation", _first_error_only),
    Variant("no-version-check", "writes skip the version check", "US4.7",
            "version_conflict", _no_version_check),
    Variant("validate-only-created-here", "writes are validated only on documents created by this process",
            "FR-061", "validated_and_version_checked", _validate_only_created_here),
    Variant("ancestor-off-by-one", "path-not-found names the deepest ancestor one level too high", "US2.6",
            "deepest_ancestor", _ancestor_off_by_one),
    Variant("dash-in-journal", "an append keeps '-' in its patch and journal entry", "X-patch",
            "strict_patch", _dash_in_journal),
    Variant("dry-run-writes", "a dry run is stored like a real write", "X-dry-run",
            "dry_run_returns", _dry_run_writes),
    Variant("lost-update-between-processes", "a process never notices another process's commits", "FR-084",
            "two_processes", _lost_update_between_processes),
    Variant("ack-before-durable", "a write is acknowledged half a second before it is stored", "FR-011",
            "kill_9", _ack_before_durable),
    Variant("create-overwrites", "creating where a member exists replaces it instead of a conflict", "US5.3",
            "is_a_conflict", _create_overwrites),
    Variant("versions-skip", "each write after the first moves the version on by two", "US4.1",
            "moves_the_version_on_by_one or versions_survive_a_restart", _versions_skip, also=("FR-077",)),
    Variant("failed-write-persists", "an invalid write is refused but stored anyway", "US4.2",
            "every_violation_and_changes_nothing", _failed_write_persists, also=("FR-117",)),
    Variant("version-checked-only-here", "the version is checked only on documents created by this process",
            "FR-080", "validated_and_version_checked", _version_checked_only_here),
    Variant("negative-index-off-by-one", "index -n resolves to the item before the n-th from the end", "FR-024",
            "negative_index", _negative_index_off_by_one),
    Variant("list-drops-the-newest", "the document list leaves out the newest document", "US7.1",
            "every_document_with_its_summary", _list_drops_the_newest),
    Variant("stale-export", "the export serves the document's first version", "US8.1",
            "export_is_the_result_of_every_edit", _stale_export),
)}
