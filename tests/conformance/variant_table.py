"""The table of docs/conformance.md that lists every variant and the clause that catches it, generated from both
catalogues: ``python tests/conformance/variant_table.py`` prints it; ``test_variant_table.py`` checks the docs hold it.

The markers ``<!-- catalogue:start -->`` and ``<!-- catalogue:end -->`` delimit it in the docs;
``python tests/conformance/variant_table.py --write`` replaces what is between them.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from blackbox import CATALOGUE
from variants import FEATURES, VARIANTS

from schemadoc.conformance.clauses import CLAUSES

DOCS = Path(__file__).resolve().parents[2] / "docs" / "conformance.md"
START, END = "<!-- catalogue:start -->", "<!-- catalogue:end -->"


def _cell(text: str) -> str:
    return " ".join(text.replace("``", "`").replace("|", "\\|").split())


UNBREAKABLE: dict[str, str] = {}
"""Spec clauses no variant can break from outside, each with the reason why (none at present: every spec clause
has a breaking variant in one of the two catalogues)."""

_HOW = {"mcp": "MCP stdio proxy", "rest": "REST proxy", "http": "REST proxy (whole server: `--url`)"}


def _caught(clauses: tuple[str, ...]) -> str:
    return "caught on " + ", ".join(f"**{clause}**" for clause in clauses)


def covered() -> set[str]:
    """The clauses some broken variant must fail."""
    return ({clause for entry in CATALOGUE for clause in entry.clauses}
            | {clause for variant in VARIANTS.values() for clause in variant.clauses})


def uncovered() -> list[str]:
    """The spec's clauses no broken variant fails, nor a reason in :data:`UNBREAKABLE` explains."""
    return [clause.id for clause in CLAUSES.values()
            if not clause.optional and clause.id not in covered() and clause.id not in UNBREAKABLE]


def table() -> str:
    rows = ["| variant | how it is made | what it does | verdict |", "|---|---|---|---|"]
    for entry in CATALOGUE:
        verdict = _caught(entry.clauses) if entry.clause else "legal: passes `--profile spec`"
        rows.append(f"| `{entry.name}` | {_HOW[entry.door]} | {_cell(entry.what)} | {verdict} |")
    for variant in VARIANTS.values():
        rows.append(f"| `{variant.name}` | patched internals | {_cell(variant.what)} | {_caught(variant.clauses)} |")
    for name, feature in FEATURES.items():
        rows.append(f"| `{name}` | patched internals | {_cell((feature.__doc__ or '').split(': ', 1)[-1])} | "
                    "legal: its clause is not applicable |")
    broken = sum(entry.clause is not None for entry in CATALOGUE) + len(VARIANTS)
    legal = sum(entry.clause is None for entry in CATALOGUE) + len(FEATURES)
    spec = [clause.id for clause in CLAUSES.values() if not clause.optional]
    caught = [clause for clause in spec if clause in covered()]
    text = (f"\n\n{broken} broken variants, each caught on the clauses it breaks; {legal} legal ones. "
            f"{len(caught)} of the spec's {len(spec)} clauses have a variant that breaks them.")
    missing = uncovered()
    if missing:
        text += f" Spec clauses no variant breaks yet: {', '.join(missing)}."
    for clause, reason in UNBREAKABLE.items():
        text += f"\n\n- **{clause}** cannot be broken from outside: {_cell(reason)}"
    return "\n".join(rows) + text + "\n"


def main(argv: list[str]) -> int:
    generated = table()
    if "--write" not in argv:
        sys.stdout.write(generated)
        return 0
    text = DOCS.read_text(encoding="utf-8")
    before, _, rest = text.partition(START)
    _, _, after = rest.partition(END)
    DOCS.write_text(f"{before}{START}\n{generated}{END}{after}", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
