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


def table() -> str:
    rows = ["| variant | how it is made | what it does | verdict |", "|---|---|---|---|"]
    for entry in CATALOGUE:
        how = "MCP stdio proxy" if entry.door == "mcp" else "REST proxy"
        verdict = f"caught on **{entry.clause}**" if entry.clause else "legal: passes `--profile spec`"
        rows.append(f"| `{entry.name}` | {how} | {_cell(entry.what)} | {verdict} |")
    for variant in VARIANTS.values():
        rows.append(f"| `{variant.name}` | patched internals | {_cell(variant.what)} | "
                    f"caught on **{variant.clause}** |")
    for name, feature in FEATURES.items():
        rows.append(f"| `{name}` | patched internals | {_cell((feature.__doc__ or '').split(': ', 1)[-1])} | "
                    "legal: its clause is not applicable |")
    broken = sum(entry.clause is not None for entry in CATALOGUE) + len(VARIANTS)
    legal = sum(entry.clause is None for entry in CATALOGUE) + len(FEATURES)
    caught = {entry.clause for entry in CATALOGUE} | {variant.clause for variant in VARIANTS.values()}
    uncovered = [clause.id for clause in CLAUSES.values() if not clause.optional and clause.id not in caught]
    return "\n".join(rows) + (f"\n\n{broken} broken variants, each caught on the clause it breaks; {legal} legal "
                              f"ones. Spec clauses no variant breaks yet: {', '.join(uncovered)}.\n")


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
