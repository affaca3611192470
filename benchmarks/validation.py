"""Validation per write on book documents of about 1, 10 and 100 MiB: incremental beside whole.

Not a test: it prints figures and writes them as a Markdown table to
``benchmarks/results/validation.md``. Each write is a patch applied on a structurally shared copy
(outside the timer), then validated:

* whole: ``is_valid`` of the whole new document (the step every write paid before), and the
  whole report (``validate``);
* incremental: ``DocumentValidator.validate_change(before, after, patch=...)`` for a leaf update
  and a chapter append, given the strict patch as the service gives it;
* rejected update (a paragraph style outside its enum): the time to the verdict
  (``change_is_valid``), to the verdict and the report built by validating the whole new
  document (what a rejected write paid before), and to the verdict and the report built where
  the change is (``validate_change``, what a rejected write pays now).

    .venv/bin/python benchmarks/validation.py                 # 1, 10 and 100 MiB
    .venv/bin/python benchmarks/validation.py --sizes 1 10 --writes 100

Median and p99 over ``--writes`` writes (each a different value), whole-document figures over
fewer runs; ratios are taken within one run, so a loaded machine shifts both sides alike.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import HERE, REPO, p99, timed
from generate import make_book, mid_paragraph_path

from schemadoc.ops.apply import AppliedPatch, apply_patch
from schemadoc.schema import load_schema
from schemadoc.validation import DocumentValidator, ValidationReport, _report

WHOLE_RUNS = {1: 11, 10: 7, 100: 5}
OUT = HERE / "results" / "validation.md"




def ms(seconds: float) -> str:
    value = seconds * 1e3
    return f"{value:.3f}" if value < 1 else f"{value:.2f}" if value < 10 else f"{value:.1f}"


def measure(size: int, writes: int, validator: DocumentValidator) -> dict[str, list[float]]:
    book = make_book(size)
    gc.collect()
    gc.freeze()  # as the service does with a loaded document: the collector stops rescanning it
    assert validator.validate(book).valid  # the stored version: known valid
    leaf = mid_paragraph_path(book)
    whole = WHOLE_RUNS.get(size, 5)
    rows: dict[str, list[float]] = {}

    rows["whole is_valid"] = timed(lambda _: validator.is_valid(book), whole)
    rows["whole report (valid)"] = timed(lambda _: validator.validate(book), whole)

    def change(patch: Callable[[int], list[dict[str, Any]]]) -> Callable[[int], Any]:
        return lambda i: apply_patch(book, patch(i))  # the new document and the strict patch

    def leaf_edit(i: int) -> list[dict[str, Any]]:
        return [{"op": "replace", "path": f"{leaf}/text", "value": f"Edited paragraph, write {i}."}]

    def append(i: int) -> list[dict[str, Any]]:
        chapter = {"id": f"ch-{900000 + i}", "title": f"Appended {i}",
                   "sections": [{"title": "One", "paragraphs": [{"text": "A new paragraph."}]}]}
        return [{"op": "add", "path": "/chapters/-", "value": chapter}]

    def rejected(i: int) -> list[dict[str, Any]]:
        return [{"op": "replace", "path": f"{leaf}/style", "value": f"not-a-style-{i}"}]

    for name, patch in (("leaf update", leaf_edit), ("chapter append", append)):
        samples = timed(lambda applied: _accepted(validator, book, applied), writes, setup=change(patch))
        rows[f"incremental {name}"] = samples
    rows["rejected: verdict (incremental)"] = timed(
        lambda applied: _refused(validator, book, applied), writes, setup=change(rejected))
    rows["rejected: verdict + whole report"] = timed(
        lambda applied: _whole_report(validator, book, applied), whole, setup=change(rejected))
    sample = change(rejected)(0)
    if validator.change_report(book, sample.document, sample.patch) != _whole_report(validator, book, sample):
        raise AssertionError("the rejected write is not reported from where it changed, or not as whole")
    rows["rejected: verdict + incremental report"] = timed(
        lambda applied: _reported(validator, book, applied), writes, setup=change(rejected))
    return rows


def _whole_report(validator: DocumentValidator, before: Any, applied: AppliedPatch) -> ValidationReport:
    """What a rejected write cost before its report was built where it changed."""
    _refused(validator, before, applied)
    return _report(validator._validator, applied.document, validator._schema, judged_invalid=True)


def _reported(validator: DocumentValidator, before: Any, applied: AppliedPatch) -> None:
    report = validator.validate_change(before, applied.document, patch=applied.patch, keep=False)
    if report.valid or len(report.violations) != 1:
        raise AssertionError("a rejected write was not reported with its one violation")


def _accepted(validator: DocumentValidator, before: Any, applied: AppliedPatch) -> None:
    if not validator.validate_change(before, applied.document, patch=applied.patch, keep=False).valid:
        raise AssertionError("a valid write was rejected")


def _refused(validator: DocumentValidator, before: Any, applied: AppliedPatch) -> None:
    if validator.change_is_valid(before, applied.document, applied.patch):
        raise AssertionError("an invalid write was accepted")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 100], help="MiB")
    parser.add_argument("--writes", type=int, default=200, help="writes per incremental row")
    parser.add_argument("--out", type=Path, default=OUT)
    options = parser.parse_args(argv)
    validator = DocumentValidator(load_schema(REPO / "schemas" / "book.schema.json"))
    results: dict[int, dict[str, list[float]]] = {}
    load = os.getloadavg()
    for size in options.sizes:
        print(f"{size} MiB ...", file=sys.stderr, flush=True)
        results[size] = measure(size, options.writes, validator)
    names = list(next(iter(results.values())))
    lines = [
        "# Validation per write (book documents)",
        "",
        f"Load average at start: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} cores; "
        f"{options.writes} writes per incremental row. Cells: median / p99 in ms.",
        "",
        "| step | " + " | ".join(f"{size} MiB" for size in options.sizes) + " |",
        "|---|" + "---|" * len(options.sizes),
    ]
    for name in names:
        cells = [f"{ms(statistics.median(results[size][name]))} / {ms(p99(results[size][name]))}"
                 for size in options.sizes]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    ratios = []
    for size in options.sizes:
        whole = statistics.median(results[size]["whole is_valid"])
        leaf = statistics.median(results[size]["incremental leaf update"])
        verdict = statistics.median(results[size]["rejected: verdict (incremental)"])
        ratios.append(f"{whole / leaf:.0f}× / {whole / verdict:.0f}×")
    lines.append("| whole is_valid ÷ incremental (leaf update / rejected verdict) | " + " | ".join(ratios) + " |")
    reported = []
    for size in options.sizes:
        whole = statistics.median(results[size]["rejected: verdict + whole report"])
        reported.append(f"{whole / statistics.median(results[size]['rejected: verdict + incremental report']):.0f}×")
    lines.append("| rejected write with its report: whole ÷ incremental | " + " | ".join(reported) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
