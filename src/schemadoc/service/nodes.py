"""Writes to a document's content: node updates, creations, deletions and moves, patches, merge patches, revert.

Each builds an RFC 6902 patch against the current content and goes through :meth:`NodeWrites._write`:
version check, apply on a structurally shared copy, validation, dry run or commit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from schemadoc.errors import SchemaDocError
from schemadoc.ops.apply import apply_patch, check_patch, check_written_depth, json_equal
from schemadoc.ops.compile import CompiledWrite, compile_create, compile_delete, compile_move, compile_update
from schemadoc.ops.history import compile_merge_patch, diff
from schemadoc.ops.limits import (
    ArgumentScan,
    check_operation_count,
    check_pointer_length,
    check_string_lengths,
    scan_argument,
)
from schemadoc.ops.sizes import patch_size
from schemadoc.pointer import format_pointer, parse, parse_node_path, resolve
from schemadoc.reading.examples import fill_defaults
from schemadoc.service.checks import check_version, path_arg
from schemadoc.service.history import History
from schemadoc.service.models import WriteResult
from schemadoc.service.payloads import PREVIEW_BYTES, json_bytes
from schemadoc.storage.base import check_doc_id
from schemadoc.validation import SUGGESTED_FIRST, Repair, ValidationReport, Violation
from schemadoc.validation.suggestions import fold_fixes

__all__ = ["NodeWrites"]

Retry = Callable[[str, Any, list[dict[str, Any]]], "tuple[str, dict[str, Any]] | None"]
"""A refused write's call again with corrected arguments (from the written node's pointer, the node as written
and the fix in document paths), or None when the fix does not fit in them."""

NodeOf = Literal["before", "after"] | None
"""What a write returns as its node: the node at its pointer in the content before or after it, or none."""


class NodeWrites(History):
    """The use cases that change a document's content (each one new version, or a dry run)."""

    def update_node(self, doc_id: str, node_path: str, node_data: Any, version: int, *,
                    dry_run: bool = False, scanned: ArgumentScan | None = None, fill_defaults: bool = False,
                    report_only: bool = False, actor: str | None = None,
                    placeholders: Sequence[str] = ()) -> WriteResult:
        """Each write here takes ``actor``: who makes it, recorded in its journal entry (``info.actor``).
        ``placeholders`` (node writes: relative to ``node_data``; a patch: document pointers): where a suggested
        call put values the server made up; next_incomplete lists them until they are written over."""
        return self._node_write(doc_id, "update_node", compile_update, node_path, node_data, version,
                                dry_run=dry_run, scanned=scanned, fill=fill_defaults, report_only=report_only,
                                actor=actor, placeholders=placeholders)

    def create_node(self, doc_id: str, node_path: str, node_data: Any, version: int, *,
                    dry_run: bool = False, scanned: ArgumentScan | None = None, fill_defaults: bool = False,
                    report_only: bool = False, actor: str | None = None,
                    placeholders: Sequence[str] = ()) -> WriteResult:
        return self._node_write(doc_id, "create_node", compile_create, node_path, node_data, version,
                                dry_run=dry_run, scanned=scanned, fill=fill_defaults, report_only=report_only,
                                actor=actor, placeholders=placeholders)

    def _node_write(self, doc_id: str, op: str, compile_write: Callable[[Any, str, Any], CompiledWrite],
                    node_path: str, node_data: Any, version: int, *, dry_run: bool,
                    scanned: ArgumentScan | None, fill: bool = False, report_only: bool = False,
                    actor: str | None = None, placeholders: Sequence[str] = ()) -> WriteResult:
        """``update_node`` or ``create_node``: the request limits of ``node_data``, then the write. ``fill``: the
        defaults of absent members of ``node_data`` filled in first, as ``document_create`` does."""
        path = path_arg(node_path)
        check_pointer_length(path, self.max_string_length, "node_path")
        scan = self._scan(node_data, scanned, "node_data")

        def build(document: Any) -> CompiledWrite:
            compiled = compile_write(document, path, node_data)
            if not fill or not isinstance(node_data, dict | list):
                return compiled
            tokens = [str(token) for token in parse(compiled.node_path)]
            return compile_write(document, path, fill_defaults(node_data, tokens, self.schema))

        tool = f"document_{op}"

        def retry(node_pointer: str, written_node: Any, fix: list[dict[str, Any]]) -> tuple[str, dict[str, Any]] | None:
            """The same call with node_data corrected, when every fix lies inside the written node."""
            relative: list[dict[str, Any]] = []
            for operation in fix:
                paths = [operation["path"], *([operation["from"]] if "from" in operation else [])]
                if not all(p == node_pointer or p.startswith(node_pointer + "/") for p in paths):
                    return None
                relative.append({**operation, **{key: operation[key][len(node_pointer):]
                                                 for key in ("path", "from") if key in operation}})
            try:
                corrected = apply_patch(written_node, check_patch(relative)).document
            except SchemaDocError:
                return None
            return tool, {"node_path": node_path, "node_data": corrected,
                          **({"fill_defaults": True} if fill else {})}

        return self._write(doc_id, version, op, build, dry_run=dry_run, node_of="after",
                           written=_written_depths(scan, [node_data], 0), report_only=report_only, retry=retry,
                           actor=actor, marks=placeholders)

    def scan_argument(self, value: Any, *, text: bytes | None = None, surrogates: bool = False) -> ArgumentScan:
        """The one walk of a written argument (``node_data``, ``patch``, ``merge_patch``) at this service's
        limits (:func:`~schemadoc.ops.limits.scan_argument`). A door that makes it passes it on to the
        write as ``scanned``, so the write does not walk the value again; ``text``: the JSON it was read from."""
        return scan_argument(value, max_json_depth=self.max_json_depth, max_string_length=self.max_string_length,
                             surrogates=surrogates, text=text)

    def _scan(self, value: Any, scanned: ArgumentScan | None, argument: str) -> ArgumentScan:
        """``scanned`` when it is a scan of ``value`` at this service's limit, else a new one;
        ``request-too-large`` (naming the offender) when a string or member name is too long."""
        scan = scanned if scanned is not None and scanned.covers(value, self.max_string_length) \
            else self.scan_argument(value)
        if scan.too_long:
            check_string_lengths(value, self.max_string_length, argument)  # finds the offender and raises
        return scan

    def delete_node(self, doc_id: str, node_path: str, version: int, *, dry_run: bool = False,
                    actor: str | None = None) -> WriteResult:
        path = path_arg(node_path)
        return self._write(doc_id, version, "delete_node", lambda doc: compile_delete(doc, path),
                           dry_run=dry_run, node_of="before", actor=actor)

    def move_node(self, doc_id: str, from_path: str, to_path: str, version: int, *,
                  dry_run: bool = False, actor: str | None = None) -> WriteResult:
        """RFC 6902 ``move`` (also reordering inside an array; ``to_path`` may end in ``/-``), validated
        like every write; negative indices count from the end (:func:`~schemadoc.ops.compile.compile_move`);
        the result's node is the moved node at its concrete new path, the journal keeps both concrete paths."""
        source, target = path_arg(from_path), path_arg(to_path)
        check_pointer_length(source, self.max_string_length, "from_path")
        check_pointer_length(target, self.max_string_length, "to_path")
        if source in ("", "/"):
            raise SchemaDocError("invalid-request", "The root cannot be moved.", {"argument": "from_path"})
        info: dict[str, Any] = {}

        def build(document: Any) -> CompiledWrite:
            strict = apply_patch(document, check_patch(compile_move(document, source, target))).patch
            info.update(from_path=strict[0]["from"], node_path=strict[0]["path"])
            return CompiledWrite(strict, strict[0]["path"])

        return self._write(doc_id, version, "move_node", build, dry_run=dry_run, node_of="after", info=info,
                           actor=actor)

    def apply_patch(self, doc_id: str, patch: Any, version: int, *, dry_run: bool = False,
                    scanned: ArgumentScan | None = None, actor: str | None = None,
                    migration: str | None = None, placeholders: Sequence[str] = ()) -> WriteResult:
        """A raw RFC 6902 patch (all six ops) as one atomic write. ``migration``: the name of the migration the
        write is (``schemadoc migrate-documents``), journaled as the entry's ``info.migration``."""
        if isinstance(patch, list):  # counted first: a patch over the limit is not inspected op by op
            check_operation_count(len(patch), self.max_patch_operations, "patch")
        checked = check_patch(patch)
        scan = self._scan(checked, scanned, "patch")  # values, paths and 'from' alike
        # an operation's value sits two containers down in the patch (the array, the operation)
        values = [operation["value"] for operation in checked if operation["op"] in ("add", "replace")]
        return self._write(doc_id, version, "patch", lambda doc: CompiledWrite(checked, ""),
                           dry_run=dry_run, node_of=None, written=_written_depths(scan, values, 2), actor=actor,
                           info=None if migration is None else {"migration": migration}, marks=placeholders)

    def merge_patch(self, doc_id: str, node_path: str, merge_patch: Any, version: int, *,
                    dry_run: bool = False, scanned: ArgumentScan | None = None,
                    actor: str | None = None) -> WriteResult:
        """RFC 7396 at a node, checked against the node's merge-patch schema, journaled as RFC 6902."""
        path = path_arg(node_path)
        check_pointer_length(path, self.max_string_length, "node_path")
        self._scan(merge_patch, scanned, "merge_patch")
        tokens = parse_node_path(path)

        def build(document: Any) -> CompiledWrite:
            node, concrete = resolve(document, tokens)
            problems = self._merge_patch_problems(concrete, merge_patch)
            compiled = CompiledWrite(compile_merge_patch(node, merge_patch, concrete), format_pointer(concrete))
            check_operation_count(len(compiled.patch), self.max_patch_operations, "merge_patch")
            if problems:
                self._refuse_merge_patch(doc_id, version, document, compiled, problems)
            return compiled

        return self._write(doc_id, version, "merge_patch", build, dry_run=dry_run, node_of="after", actor=actor)

    def revert(self, doc_id: str, to_version: int, version: int, *, dry_run: bool = False,
               actor: str | None = None) -> WriteResult:
        """A new version whose content equals ``to_version`` (nothing in the journal is rewritten)."""
        doc_id = check_doc_id(doc_id)
        target = self.read_version(doc_id, to_version)

        def build(document: Any) -> CompiledWrite:
            patch = diff(document, target)
            inverse = self._undo_patch(doc_id, to_version, target, document)
            if inverse is not None and json_bytes(inverse) < json_bytes(patch):
                patch = inverse
            return CompiledWrite(patch, "")

        return self._write(doc_id, version, "revert", build, dry_run=dry_run, node_of=None,
                           info={"to_version": to_version}, actor=actor)

    def _undo_patch(self, doc_id: str, to_version: int, target: Any, current: Any) -> list[dict[str, Any]] | None:
        """The inverse of the journal entries after ``to_version``, last first (one ``move`` undoes a ``move``),
        when it can be built and verifiably turns ``current`` into ``target``; else None."""
        entries = self.store.read_journal(doc_id, since_version=to_version, until_version=None)
        operations = [operation for entry in entries for operation in entry.patch]
        if len(operations) > self.max_patch_operations:
            return None
        inverse: list[dict[str, Any]] = []
        document = target
        try:
            for operation in operations:
                undo = _inverse_of(document, operation)
                document = apply_patch(document, [operation]).document
                inverse[:0] = undo
        except (SchemaDocError, KeyError, IndexError, TypeError):
            return None
        if not json_equal(document, current) or not json_equal(apply_patch(current, inverse).document, target):
            return None
        return inverse

    def _write(self, doc_id: str, version: int, op: str, build: Callable[[Any], CompiledWrite], *,
               dry_run: bool, node_of: NodeOf, info: dict[str, Any] | None = None,
               written: dict[int, tuple[int, bool]] | None = None, report_only: bool = False,
               retry: Retry | None = None, actor: str | None = None, marks: Sequence[str] = ()) -> WriteResult:
        """One write, or its dry run. A dry run answers what the write would: the same result (``dry_run``) or
        the same error, its details marked ``dry_run: true`` (a refused one with the ``patch`` it compiled to).
        ``report_only``: a dry run returns an invalid report instead of failing (``document_validate_node``)."""
        try:
            return self._write_once(doc_id, version, op, build, dry_run=dry_run, node_of=node_of, info=info,
                                    written=written, retry=None if report_only else retry, report_only=report_only,
                                    actor=actor, marks=marks)
        except SchemaDocError as error:
            refused = self._where_the_schema_forbids(error)
            if dry_run and "dry_run" not in refused.details:
                refused = SchemaDocError(refused.code, refused.message, {**refused.details, "dry_run": True},
                                         refused.remediation)
            if refused is error:
                raise
            raise refused from None

    def _where_the_schema_forbids(self, error: SchemaDocError) -> SchemaDocError:
        """``path-not-found`` whose remediation would send the agent to create a member the schema forbids:
        said so instead (``details.forbidden``), with the members the schema allows there."""
        missing = error.details.get("missing") if error.code == "path-not-found" else None
        if not isinstance(missing, str):
            return error
        try:
            self.schema.shared_node_schema(parse(missing))
            return error
        except SchemaDocError as refusal:
            allowed = refusal.details.get("allowed")
            where = refusal.details.get("deepest_valid_path")
            if not isinstance(allowed, list):
                return error
        names = ", ".join(repr(name) for name in allowed) or "nothing"
        return SchemaDocError(
            "path-not-found", f"{error.message} The schema forbids {missing} (at {where or '/'} it allows "
                              f"{names}).",
            {**error.details, "forbidden": True, "allowed": allowed, "create_first": None},
            remediation=f"Do not create {missing}: the schema does not allow it. Use one of the members "
                        f"{where or '/'} allows ({names}); schema_get_node shows each one's schema.")

    def _write_once(self, doc_id: str, version: int, op: str, build: Callable[[Any], CompiledWrite], *,
                    dry_run: bool, node_of: NodeOf, info: dict[str, Any] | None,
                    written: dict[int, tuple[int, bool]] | None, retry: Retry | None,
                    report_only: bool = False, actor: str | None = None, marks: Sequence[str] = ()) -> WriteResult:
        doc_id = check_doc_id(doc_id)
        version = check_version(version)
        if not isinstance(dry_run, bool):
            raise SchemaDocError("invalid-request", "dry_run must be a boolean.", {"argument": "dry_run"})
        with self._locked(doc_id, version, dry_run=dry_run) as state:
            current = state.meta.version
            compiled = build(state.content)
            applied = apply_patch(state.content, compiled.patch)
            check_written_depth(applied.document, applied.patch, self.max_json_depth, known=written)
            if self.validation_level == "moderate" and not self.validator.known_valid(state.content):
                # the version written to, just loaded: judged whole once (what judging the new one whole would have
                # cost), so the new one is judged from the change, and a repair from the old report
                with self.span("validation"):
                    self.validator.report_of(state.content)
            was = self.validator.known_invalid(state.content)  # a document being repaired (remembered, not computed)
            with self.span("validation"):
                report = self.validator.validate_change(state.content, applied.document, patch=applied.patch,
                                                        keep=not dry_run)
            node_path = compiled.node_path
            node = None if node_of is None else _at(state.content if node_of == "before" else applied.document,
                                                    node_path)
            repair = None
            if self.validation_level == "moderate":
                if not report.valid:
                    with self.span("validation"):
                        repair = self._repair_of(state.content, applied.document, applied.patch, report)
                elif was is not None:  # the last repair: every violation fixed
                    repair = Repair(was, report, (), was.count)
            accepted = report.valid or (repair is not None and repair.accepted)
            if not accepted and not report_only:
                self._refuse(doc_id, current, applied.document, applied.patch, node_path, node, report, retry,
                             dry_run=dry_run, repair=repair, before=state.content)
            if dry_run:
                if accepted:  # a valid preview of something that cannot be stored must fail like the write
                    patch_size(state.content, state.meta.content_size_bytes, applied.patch, doc_id)
                return WriteResult(doc_id, current, applied.patch, node_path, node, report, dry_run=True,
                                   repair=repair)
            # what the patch adds is checked and measured; the document itself is not serialised
            sized = patch_size(state.content, state.meta.content_size_bytes, applied.patch, doc_id)
            entry_info = dict(info) if info is not None else ({"node_path": node_path} if op != "patch" else {})
            meta = self._commit(doc_id, state, applied.document, applied.patch, op, entry_info, kind="updated",
                                size=sized.size, edit_bytes=sized.added_bytes, actor=actor, report=report,
                                marks=[node_path + mark for mark in marks if isinstance(mark, str)])
        return WriteResult(doc_id, meta.version, applied.patch, node_path, node, report, repair=repair)

    def _repair_of(self, before: Any, after: Any, patch: list[dict[str, Any]],
                   report: ValidationReport) -> Repair | None:
        """The repair rule on a write whose result is invalid: None when ``before`` was valid (the write is judged
        as every write to a valid document: refused), else what it adds and resolves
        (:mod:`schemadoc.validation.repair`)."""
        if self.validator.known_valid(before):  # a valid document's refusal costs what it always did
            return None
        repair = self.validator.repair(before, after, patch, report)
        return None if repair.before.valid else repair

    def _refuse(self, doc_id: str, version: int, after: Any, patch: list[dict[str, Any]], node_path: str, node: Any,
                report: ValidationReport, retry: Retry | None, *, dry_run: bool,
                repair: Repair | None = None, before: Any = None) -> None:
        """``validation-failed`` with every violation and one fix that can be sent as it is: ``suggested_call``,
        the same call with corrected arguments (or a patch of the current document), whose fixes never conflict.

        The violations' own ``suggested_fix`` patches point into the document the write would have made, which
        does not exist: they are folded into ``suggested_call`` and left out of the violations. ``placeholders``
        names the made-up values to replace with real content; ``resolves`` says whether the suggested call
        passes validation.

        ``repair``: the write went to a document the schema already rejected and adds violations: only those are
        listed (and fixed by the suggested call, whose ``resolves`` then says whether the repair rule would accept
        it); ``already_invalid`` counts and lists the first of those the document already had (``before``), which
        the write may leave."""
        try:
            if repair is not None:
                report = ValidationReport(False, tuple(self.validator.with_suggestions(repair.added, after)))
            else:  # a report made from a remembered one gave its first violations their fixes only
                fixed = tuple(self.validator.with_suggestions(report.violations, after))
                report = ValidationReport(report.valid, fixed, report.truncated, report.total)
            report.raise_if_invalid(doc_id=doc_id, version=version)
        except SchemaDocError as error:
            details = error.details
            if repair is not None:
                count = len(repair.added)
                error = SchemaDocError(error.code, f"The document was already invalid ({repair.before.count} "
                                       f"violation{'s' if repair.before.count != 1 else ''}), and this write would "
                                       f"add {count} new violation{'s' if count != 1 else ''}; nothing was changed.",
                                       details, "A write to a document the schema already rejects may leave its "
                                       "violations but not add any: fix the ones listed in details.violations.")
                details["already_invalid"] = already_invalid(repair)
            fix, details["violations"] = fold_fixes(details["violations"])
            if fix:
                resolves = (lambda: self._fix_resolves(before, after, patch, fix)) if repair is None else \
                    (lambda: self._repair_accepts(before, [*patch, *fix]))
                details["suggested_call"] = self._suggested_call(doc_id, version, after, patch, node_path, node,
                                                                 fix, retry, resolves)
            if dry_run:
                details.update({"dry_run": True, **_preview(patch)})
            suggestion = ("Send details.suggested_call as it is (replace the values listed in its placeholders with "
                          "real content first), or fix each violation and retry." if fix else None)
            remediation = " ".join(text for text in (suggestion, error.remediation) if text) or None
            raise SchemaDocError(error.code, error.message, details, remediation=remediation) from None

    def _suggested_call(self, doc_id: str, version: int, after: Any, patch: list[dict[str, Any]], node_path: str,
                        node: Any, fix: list[dict[str, Any]], retry: Retry | None,
                        resolves: Callable[[], bool] | None = None) -> dict[str, Any]:
        found = retry(node_path, node, fix) if retry is not None else None
        tool, arguments = found if found is not None else ("document_apply_patch", {"patch": [*patch, *fix]})
        return self._suggestion(after, fix, tool, {"doc_id": doc_id, **arguments, "version": version},
                                node_path if found is not None else "", resolves)

    def _fix_resolves(self, before: Any, after: Any, patch: list[dict[str, Any]], fix: list[dict[str, Any]]) -> bool:
        """Whether ``fix`` applied to ``after`` (what ``patch`` made of ``before``) leaves a valid document: judged,
        as an accepted write is, from where the write and its fix reached (``before`` is the version written to;
        remembered valid, else the fixed document is validated whole). Nothing is remembered: the fixed document
        is never stored."""
        fixed = apply_patch(after, check_patch(fix))
        return self.validator.change_is_valid(before, fixed.document, [*patch, *fixed.patch])

    def _repair_accepts(self, before: Any, patch: list[dict[str, Any]]) -> bool:
        """Whether the repair rule accepts ``patch`` on the invalid ``before`` (the write and its fixes, as one)."""
        applied = apply_patch(before, check_patch(patch))
        report = self.validator.validate_change(before, applied.document, patch=applied.patch, keep=False)
        return report.valid or self.validator.repair(before, applied.document, applied.patch, report).accepted

    def _merge_patch_problems(self, concrete: list[str | int], merge_patch: Any) -> list[dict[str, Any]]:
        """What the node's merge-patch schema refuses in ``merge_patch``, with paths from the document root."""
        node_pointer = format_pointer(concrete)
        schema = self.schema.merge_patch_schema([str(token) for token in concrete])
        report = self.validator.validate_fragment(schema, merge_patch)
        return [{**v.to_dict(), "path": node_pointer + v.path} for v in report.violations]

    def _refuse_merge_patch(self, doc_id: str, version: Any, document: Any, compiled: CompiledWrite,
                            problems: list[dict[str, Any]]) -> None:
        """``validation-failed`` listing every violation the merge patch would cause, at once.

        The merge-patch schema finds refused values and members; the resulting document's
        validation finds what the patch's deletions break (a required member set to null). Both
        are listed, each violation once: the result's own violations first, then what only the
        merge-patch schema saw (its "null or a valid value" ``any-of-failed`` is left out where
        the result already names the value's problem).
        """
        after: Any = None
        try:
            applied = apply_patch(document, compiled.patch)
            after = applied.document
            # from what the merge patch reached when the document written to is known valid, else whole
            resulting = self.validator.validate_change(document, after, patch=applied.patch, keep=False) \
                if self.validator.known_valid(document) else self.validator.validate(after)
        except SchemaDocError:  # the result cannot even be built: what the schema check found is all there is
            resulting = None
        violations = [] if resulting is None else [v.to_dict() for v in resulting.violations]
        seen = {(v["code"], v["path"]) for v in violations}
        for problem in problems:
            path = problem["path"]
            covered = problem["code"] == "any-of-failed" and any(
                v["path"] == path or v["path"].startswith(path + "/") for v in violations)
            if (problem["code"], path) not in seen and not covered:
                seen.add((problem["code"], path))
                violations.append(problem)
        count = len(violations)
        fix, listed = fold_fixes(violations)
        if resulting is None:
            fix = []
        details: dict[str, Any] = {"doc_id": doc_id, "version": version, "path": compiled.node_path or "/",
                                   "violations": listed}
        if fix:
            details["suggested_call"] = self._suggested_call(
                doc_id, version, after, compiled.patch, "", None, fix, None,
                lambda: self._fix_resolves(document, after, compiled.patch, fix))
        raise SchemaDocError(
            "validation-failed",
            f"The merge patch would make the document invalid ({count} error{'s' if count != 1 else ''}); "
            "nothing was changed.", details,
            remediation="Send details.suggested_call as it is, or fix each violation and retry." if fix else None)


REMAINING_LISTED = SUGGESTED_FIRST
"""Violations a repair write's answer lists (of those that remain); the count says how many there are."""


def already_invalid(repair: Repair) -> dict[str, Any]:
    """What a refused repair write says of the violations the document already had."""
    there = repair.already_there
    return {"violation_count_before": repair.before.count, "still_there_count": len(there),
            "still_there": [_without_fix(violation) for violation in there[:REMAINING_LISTED]],
            "resolved_count": repair.resolved}


def _without_fix(violation: Violation) -> dict[str, Any]:
    """A violation as listed beside a refusal (its fix would point into the document the write would have made)."""
    out = violation.to_dict()
    out.pop("suggested_fix", None)
    return out


def _inverse_of(document: Any, operation: dict[str, Any]) -> list[dict[str, Any]]:
    """The operations that undo one strict RFC 6902 ``operation`` applied to ``document``."""
    op, path = operation["op"], operation["path"]
    if op == "test":
        return []
    if op == "move":
        return [{"op": "move", "from": path, "path": operation["from"]}]
    if op == "remove":
        return [{"op": "add", "path": path, "value": _at(document, path)}]
    if op == "replace":
        return [{"op": "replace", "path": path, "value": _at(document, path)}]
    # add or copy: a new member or item is removed; an existing member (replaced by add) gets its value back
    if path == "":
        return [{"op": "replace", "path": "", "value": document}]
    tokens = parse(path)
    parent, _ = resolve(document, tokens[:-1], allow_negative=False)
    if isinstance(parent, dict) and tokens[-1] in parent:
        return [{"op": "replace", "path": path, "value": parent[tokens[-1]]}]
    return [{"op": "remove", "path": path}]


def _at(document: Any, pointer: str) -> Any:
    node, _ = resolve(document, parse(pointer), allow_negative=False)
    return node


def _preview(patch: list[dict[str, Any]]) -> dict[str, Any]:
    """A refused dry run's preview: the patch when it is small, else its size (the error stays readable)."""
    size = json_bytes(patch)
    return {"patch": patch} if size <= PREVIEW_BYTES else {"patch_op_count": len(patch), "patch_size_bytes": size}


def _written_depths(scan: ArgumentScan, values: list[Any], below: int) -> dict[int, tuple[int, bool]]:
    """What ``scan`` says of the depth of ``values`` it covers, each ``below`` containers down in the
    scanned value: by identity, for :func:`~schemadoc.ops.apply.check_written_depth` (exact only for the
    scanned value itself)."""
    bound = max(scan.depth - below, 0)
    return {id(value): (bound, scan.depth_exact and below == 0) for value in values if isinstance(value, dict | list)}

