"""The repair rule (``validation_level: moderate``): a write to a document the served schema already rejects is
accepted when it adds no violation, one the document did not have before (docs/schema-changes.md).

The identity of a violation is its catalog code, the schema location of the failing keyword (``schema_path``) and
the place in the document (``path``), that place carried through the write's patch (:func:`schemadoc.ops.carry`):
an item inserted, removed or moved before an invalid item shifts its index, not its identity. A missing required
member is one violation per member (its name is part of the identity), and so is each unexpected member of
``additionalProperties`` / ``unevaluatedProperties``: adding one more unexpected member adds a violation. Removing
an invalid subtree takes its violations away with it; what a write leaves at a place (a value replaced, still
too long) keeps that place's violations: the same ones, not new ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from schemadoc.ops.carry import carry
from schemadoc.validation.incremental import ChangeChecker
from schemadoc.validation.violations import VALID, ValidationReport, Violation, report_order, violation_of
from schemadoc.validation.walk import hint_of

__all__ = ["Repair", "ViolationKey", "judge_repair", "report_after_repair", "violation_keys"]

ViolationKey = tuple[str, str, str, str | None]
"""(code, schema_path, path, member name or None)."""

_NAMED = frozenset({"required", "dependentRequired"})
_UNEXPECTED = frozenset({"additionalProperties", "unevaluatedProperties"})


@dataclass(frozen=True)
class Repair:
    """The verdict of the repair rule on one write to an invalid document."""

    before: ValidationReport
    """The document's report before the write (invalid)."""
    after: ValidationReport
    """Its report after the write: what remains, when it is accepted."""
    added: tuple[Violation, ...]
    """Violations of ``after`` the document did not have before (none: the write is accepted)."""
    resolved: int
    """Violations of ``before`` that ``after`` no longer has."""

    @property
    def accepted(self) -> bool:
        return not self.added

    @property
    def already_there(self) -> tuple[Violation, ...]:
        """The violations of ``after`` the document had before."""
        added = {id(violation) for violation in self.added}
        return tuple(violation for violation in self.after.violations if id(violation) not in added)


def violation_keys(violation: Violation, path: str | None = None) -> list[ViolationKey]:
    """The identities a violation stands for (one per missing or unexpected member where it names several), at
    ``path`` (default: its own)."""
    where = violation.path if path is None else path
    if violation.constraint in _NAMED:
        names: Iterable[Any] = [violation.expected]
    elif violation.constraint in _UNEXPECTED and isinstance(violation.actual, list) and violation.actual:
        names = violation.actual
    else:
        return [(violation.code, violation.schema_path, where, None)]
    return [(violation.code, violation.schema_path, where, str(name)) for name in names]


def judge_repair(before_document: Any, patch: list[dict[str, Any]], before: ValidationReport,
                 after: ValidationReport, *, before_all: Sequence[Violation] | None = None,
                 after_all: Sequence[Violation] | None = None) -> Repair:
    """The repair rule on the write of ``patch`` to ``before_document``, whose reports are ``before`` and ``after``.

    ``before_all`` / ``after_all``: every violation of each, when its report lists only the first ones (a
    truncated report); the identities are compared on every violation, the ones listed as ``added`` come from
    ``after`` where it lists them."""
    old = list(before_all if before_all is not None else before.violations)
    new = list(after_all if after_all is not None else after.violations)
    places = carry(before_document, patch, {violation.path for violation in old})
    had: set[ViolationKey] = set()
    for violation in old:
        carried = places[violation.path]
        if carried is not None:
            had.update(violation_keys(violation, carried))
    now: set[ViolationKey] = set()
    added: list[Violation] = []
    for violation in new:
        keys = violation_keys(violation)
        now.update(keys)
        if not all(key in had for key in keys):
            added.append(violation)
    resolved = sum(1 for violation in old
                   if (carried := places[violation.path]) is None
                   or not any(key in now for key in violation_keys(violation, carried)))
    if after_all is not None:  # the added ones as the report lists them (with their suggested fixes) where it does
        listed = {(v.code, v.schema_path, v.path, repr(v.expected), repr(v.actual)): v for v in after.violations}
        added = [listed.get((v.code, v.schema_path, v.path, repr(v.expected), repr(v.actual)), v) for v in added]
    return Repair(before, after, tuple(added), resolved)


def report_after_repair(changes: ChangeChecker, before: Any, after: Any, patch: list[dict[str, Any]],
                        was: ValidationReport, *, limit: int) -> ValidationReport | None:
    """The report of ``after`` from the remembered report of the invalid ``before`` (``was``) and the places where
    they differ: the report whole validation gives (its violations without fixes), or None when it cannot be told
    that way (then the whole document is validated).

    The walk of a change (:mod:`.incremental`) looks at the same checks in both documents: where they differ, every
    node's own keywords and the subtrees that are new. A check it skips finds the same in both (at a place the
    patch may have shifted). So the violations of ``after`` are those the walk finds in it, and those of ``before``
    the walk, run the other way, does not find there, carried through the patch. That holds where the walk pairs
    what the patch carries: a patch of replacements, or of one insertion or removal (:func:`~.walk.hint_of`). After
    any other (a move, two insertions), an array's items are compared by position while the places follow each item:
    a member the same in two different items would be skipped there and its old violation carried elsewhere."""
    if was.truncated or after is before or hint_of(patch) is None:
        return None  # a patch that moves items (a move, or several inserts and removals): the walk, which then pairs
        # the items of an array by position, and the carrying of places, which follows each item, would disagree
    found = changes.change_errors(before, after, patch, limit=limit, unexpected=False)
    gone = changes.change_errors(after, before, None, limit=limit, unexpected=False) if found is not None else None
    if found is None or gone is None:
        return None
    seen_there = {_sameness(violation_of(error)) for error in gone}
    kept = [violation for violation in was.violations if _sameness(violation) not in seen_there]
    places = carry(before, patch, {violation.path for violation in kept})
    violations = [moved for violation in kept if (moved := _moved(violation, places[violation.path])) is not None]
    violations.extend(violation_of(error) for error in found)
    if len(violations) > limit:
        return None
    if not violations:
        return VALID
    return ValidationReport(False, tuple(sorted(violations, key=report_order)))


def _sameness(violation: Violation) -> tuple[str, str, str, str]:
    return violation.code, violation.schema_path, violation.path, violation.message


def _moved(violation: Violation, path: str | None) -> Violation | None:
    """``violation`` at its place after the patch (its fix, which named the old place, left to be made again)."""
    if path is None:
        return None
    if path == violation.path:
        return replace(violation, suggested_fix=None, schema_excerpt=None) if violation.suggested_fix else violation
    old, new = violation.path or "/", path or "/"
    message = new + violation.message[len(old):] if violation.message.startswith(old) else violation.message
    return replace(violation, path=path, message=message, suggested_fix=None, schema_excerpt=None)
