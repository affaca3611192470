"""Whole-document validation with every violation, each mapped to a catalog code.

The runtime validator is ``jsonschema-rs`` (compiled, formats asserted). ``is_valid`` runs
first and errors are only collected for invalid documents: an error near the root makes
``jsonschema-rs`` copy that whole subtree into the error (measured 208 ms instead of 12 ms at
10 MB), and reports never carry whole instances, only short summaries. A report lists its
violations in document order (see :func:`~schemadoc.validation.violations.report_order`), however
they were found. :mod:`.violations` holds the report's types, :mod:`.suggestions` the guided
repairs, :mod:`.incremental` the verdict on a change from what it reached.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson

from schemadoc.errors import SchemaDocError
from schemadoc.pointer import parse, resolve
from schemadoc.validation.incremental import ChangeChecker
from schemadoc.validation.repair import Repair, judge_repair, report_after_repair
from schemadoc.validation.suggestions import suggest
from schemadoc.validation.violations import (
    COUNT_VIOLATIONS_UP_TO,
    VALID,
    ValidationReport,
    Violation,
    report_order,
    summarise,
    violation_of,
)

if TYPE_CHECKING:
    from schemadoc.schema import LoadedSchema

__all__ = ["SUGGESTED_FIRST", "VALID", "DocumentValidator", "Repair", "ValidationReport", "Violation",
           "creation_problems", "summarise"]

_MAX_VIOLATIONS = 1000
_KNOWN_VALID = 64  # documents remembered as valid (each the current version of one edited document)
SUGGESTED_FIRST = 5
"""A repaired document's report: the violations (first in report order) given their fixes when it is made."""
_KNOWN_INVALID = 16  # documents remembered with their report (a document being repaired: its current version)


class DocumentValidator:
    """Validates whole documents against the server's schema."""

    def __init__(self, schema: LoadedSchema) -> None:
        self._schema = schema
        self._validator = schema.make_validator()
        self._fragments: dict[bytes, Any] = {}
        self._changes = ChangeChecker(schema)
        self._known_valid: OrderedDict[int, Any] = OrderedDict()
        self._known_invalid: OrderedDict[int, tuple[Any, ValidationReport]] = OrderedDict()
        self._known_lock = threading.Lock()

    def validate_fragment(self, schema: dict[str, Any], instance: Any) -> ValidationReport:
        """Validate ``instance`` against a schema derived from ours (e.g. a merge-patch schema).

        Compiled validators are cached by the schema's canonical JSON; ``$ref``s in the fragment
        resolve against the server's schema and its sibling files.
        """
        key = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
        validator = self._fragments.get(key)
        if validator is None:
            validator = self._schema.make_validator(schema)
            self._fragments[key] = validator
        return _report(validator, instance)

    def is_valid(self, document: Any) -> bool:
        return bool(self._validator.is_valid(document))

    def validate(self, document: Any) -> ValidationReport:
        report = _report(self._validator, document, self._schema)
        if report.valid:
            self._remember(document, None)
        return report

    def validate_change(self, before: Any, after: Any, *, patch: Sequence[Any] | None = None,
                        keep: bool = True) -> ValidationReport:
        """The report :meth:`validate` gives for ``after``, looking only where it differs from ``before``.

        ``after`` must share every unchanged subtree with ``before`` (a patch applied on a
        structurally shared copy) and neither may be mutated afterwards. The incremental verdict
        is used when this validator has itself found ``before`` valid (documents are
        remembered by identity); otherwise the whole document is validated. An invalid
        ``after`` is reported exactly as by :meth:`validate`: from the places the change reached
        (:meth:`change_report`) where that is exact, else by validating the whole document.
        ``patch`` (the strict RFC 6902 patch that made ``after``) lets the walk go straight to
        the changed places instead of scanning big containers for them. ``keep`` (a write about
        to be stored, not a dry run) remembers a valid ``after`` in place of ``before``, so that
        the next change to it is checked incrementally too.
        """
        known = self._known(before)
        was = None if known else self.known_invalid(before)
        if was is not None and patch is not None:  # a document being repaired: from its report and the change
            report = report_after_repair(self._changes, before, after, list(patch), was, limit=_MAX_VIOLATIONS)
            if report is not None:
                if report.valid and keep:
                    self._remember(after, before)
                elif not report.valid:
                    report = ValidationReport(False, tuple(_suggested(report.violations[:SUGGESTED_FIRST], after,
                                                                      self._schema))
                                              + report.violations[SUGGESTED_FIRST:])
                return report
        if self._change_is_valid(known, before, after, patch):
            if keep:
                self._remember(after, before)
            return VALID
        if known:
            report = self.change_report(before, after, patch)
            if report is not None:
                return report
        # the verdict is in: collect the errors without asking jsonschema-rs for it again (a
        # whole is_valid pass, half the cost of a rejected write on a big document). A document being
        # repaired (remembered invalid) gets the fixes of the first violations only: the others are suggested
        # where they are shown (a repair write's answer lists the first few)
        repairing = self.known_invalid(before) is not None
        return _report(self._validator, after, self._schema, judged_invalid=True,
                       suggest_first=SUGGESTED_FIRST if repairing else None)

    def change_report(self, before: Any, after: Any, patch: Sequence[Any] | None = None) -> ValidationReport | None:
        """The report of an invalid ``after`` from the places where it differs from the valid ``before``.

        It equals :meth:`validate`'s report of ``after``; None when it cannot be built exactly
        that way (see :meth:`ChangeChecker.change_errors`) and the whole document must be
        validated. ``before`` must be valid (this is not checked here).
        """
        errors = self._changes.change_errors(before, after, patch, limit=_MAX_VIOLATIONS)
        if not errors:  # nothing found where the change is: let whole validation decide
            return None
        violations = [suggest(violation_of(error), error.instance, self._schema) for error in errors]
        return ValidationReport(False, tuple(sorted(violations, key=report_order)))

    def change_is_valid(self, before: Any, after: Any, patch: Sequence[Any] | None = None) -> bool:
        """The verdict alone (see :meth:`validate_change`); nothing is remembered."""
        return self._change_is_valid(self._known(before), before, after, patch)

    def report_of(self, document: Any) -> ValidationReport:
        """:meth:`validate`'s report of ``document``, remembered: a document found valid costs nothing more, and
        the current version of a document being repaired is not validated again on each write. Only its first
        violations come with their fixes (:meth:`with_suggestions` gives the others theirs)."""
        with self._known_lock:
            if self._known_valid.get(id(document)) is document:
                return VALID
            known = self._known_invalid.get(id(document))
            if known is not None and known[0] is document:
                self._known_invalid.move_to_end(id(document))
                return known[1]
        report = _report(self._validator, document, self._schema, suggest_first=SUGGESTED_FIRST)
        if report.valid:
            self._remember(document, None)
        else:
            self.remember_invalid(document, report)
        return report

    def known_invalid(self, document: Any) -> ValidationReport | None:
        """The invalid report remembered of ``document`` (:meth:`report_of`), if any; nothing is computed."""
        with self._known_lock:
            known = self._known_invalid.get(id(document))
            return known[1] if known is not None and known[0] is document else None

    def remember_invalid(self, document: Any, report: ValidationReport, replaced: Any = None) -> None:
        """Remember ``document``'s (invalid) ``report``, in place of what was remembered of ``replaced``."""
        if not isinstance(document, dict | list):
            return
        with self._known_lock:
            self._drop(replaced)
            self._known_invalid[id(document)] = (document, report)
            self._known_invalid.move_to_end(id(document))
            while len(self._known_invalid) > _KNOWN_INVALID:
                self._known_invalid.popitem(last=False)

    def repair(self, before: Any, after: Any, patch: list[dict[str, Any]], after_report: ValidationReport) -> Repair:
        """The repair rule (:mod:`.repair`) on a write that made ``after`` (reported invalid: ``after_report``)
        from ``before`` by ``patch``. ``before``'s report is remembered (:meth:`report_of`); where a report lists
        only its first violations, every violation is gathered for the comparison."""
        before_report = self.report_of(before)
        before_all = self.every_violation(before) if before_report.truncated else None
        after_all = self.every_violation(after) if after_report.truncated else None
        return judge_repair(before, patch, before_report, after_report, before_all=before_all, after_all=after_all)

    def with_suggestions(self, violations: Sequence[Violation], document: Any) -> list[Violation]:
        """``violations`` of ``document``, each with its schema excerpt and suggested fix (those of a report that
        gave them to its first violations only)."""
        return _suggested(violations, document, self._schema)

    def every_violation(self, document: Any) -> list[Violation]:
        """Every violation of ``document`` (up to :data:`COUNT_VIOLATIONS_UP_TO`), without suggested fixes."""
        violations = []
        for error in self._validator.iter_errors(document):
            violations.append(violation_of(error))
            if len(violations) >= COUNT_VIOLATIONS_UP_TO:
                break
        return violations

    def forget(self, document: Any) -> None:
        """Stop remembering ``document`` as valid or its report (its holder dropped it: let it be freed)."""
        with self._known_lock:
            self._drop(document)

    def _drop(self, document: Any) -> None:
        if document is None:
            return
        if self._known_valid.get(id(document)) is document:
            del self._known_valid[id(document)]
        known = self._known_invalid.get(id(document))
        if known is not None and known[0] is document:
            del self._known_invalid[id(document)]

    def known_valid(self, document: Any) -> bool:
        """Whether this validator found ``document`` valid and still remembers it."""
        return self._known(document)

    def _known(self, document: Any) -> bool:
        with self._known_lock:
            return self._known_valid.get(id(document)) is document

    def _change_is_valid(self, known: bool, before: Any, after: Any, patch: Sequence[Any] | None) -> bool:
        if not known:
            return bool(self._validator.is_valid(after))
        return self._changes.is_valid_change(before, after, patch)

    def _remember(self, document: Any, replaced: Any) -> None:
        if not isinstance(document, dict | list):
            return
        with self._known_lock:
            known = self._known_valid
            self._drop(replaced)
            known[id(document)] = document
            known.move_to_end(id(document))
            while len(known) > _KNOWN_VALID:
                known.popitem(last=False)


def _report(validator: Any, instance: Any, schema: LoadedSchema | None = None, *,
            judged_invalid: bool = False, suggest_first: int | None = None) -> ValidationReport:
    """Every violation of ``instance`` (at most ``_MAX_VIOLATIONS``); ``judged_invalid``: the
    verdict is known already, so the ``is_valid`` pass that spares valid documents is skipped.
    ``suggest_first``: only the first so many violations (in report order) get their schema excerpt and
    suggested fix (the others can get them later, :meth:`DocumentValidator.with_suggestions`)."""
    if not judged_invalid and validator.is_valid(instance):
        return VALID
    violations: list[Violation] = []
    truncated = False
    total = 0
    now = schema is not None and suggest_first is None
    for error in validator.iter_errors(instance):
        total += 1
        if len(violations) >= _MAX_VIOLATIONS:  # beyond the listed ones, only counted
            truncated = True
            if total >= COUNT_VIOLATIONS_UP_TO:
                break
            continue
        violation = violation_of(error)
        if now and schema is not None:  # whole documents: paths are the schema's own, so fixes can be suggested
            violation = suggest(violation, error.instance, schema)
        violations.append(violation)
    if not violations:  # whole-document validation is the truth, whatever the verdict said
        return VALID
    ordered = sorted(violations, key=report_order)
    if schema is not None and suggest_first is not None:
        ordered[:suggest_first] = _suggested(ordered[:suggest_first], instance, schema)
    return ValidationReport(False, tuple(ordered), truncated, total if truncated else None)


def _suggested(violations: Sequence[Violation], document: Any, schema: LoadedSchema) -> list[Violation]:
    """``violations`` of ``document`` with their schema excerpts and suggested fixes (the failing node read from
    ``document`` at each one's path, as the validator's error would carry it)."""
    out = []
    for violation in violations:
        if violation.schema_excerpt is not None or violation.suggested_fix is not None:
            out.append(violation)
            continue
        try:
            node, _ = resolve(document, parse(violation.path), allow_negative=False)
        except SchemaDocError:
            out.append(violation)
            continue
        out.append(suggest(violation, node, schema))
    return out


def creation_problems(schema: LoadedSchema) -> list[dict[str, Any]]:
    """Why ``document_create`` (which takes no arguments) can never succeed on ``schema``, or ``[]`` when it can.

    Each problem is ``{"pointer", "keyword", "reason"}``: a required field with no default anywhere
    (``required-field-without-default``), or a violation of the document built from the defaults.
    """
    try:
        document = schema.defaults()
    except SchemaDocError as error:
        paths = error.details.get("paths") or [error.details.get("path", "")]
        return [{"pointer": str(path), "keyword": "required",
                 "reason": f"{error.code}: required, and no default anywhere in the schema"} for path in paths]
    problems: list[dict[str, Any]] = []
    for violation in DocumentValidator(schema).validate(document).violations:
        item = violation.to_dict()
        problems.append({"pointer": str(item.get("path") or ""), "keyword": item.get("constraint") or item.get("code"),
                         "reason": f"{item.get('code')}: {item.get('message')}"})
    return problems
