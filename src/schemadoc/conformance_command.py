"""``schemadoc-conformance``: the conformance suite's command, usable from a plain install.

The suite needs the ``conformance`` extra (pytest, Hypothesis, httpx, anyio). Without it this entry point
says how to install it and exits 2 (a usage error), instead of failing on an import with a traceback.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence

__all__ = ["main", "missing_modules"]

EXIT_USAGE = 2
# the import names of the conformance extra's requirements (pyproject.toml)
_NEEDED = ("pytest", "hypothesis", "httpx", "anyio")


def missing_modules() -> list[str]:
    """The conformance extra's modules this environment cannot import."""
    return [name for name in _NEEDED if importlib.util.find_spec(name) is None]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the conformance command, or say how to install what it needs (exit 2)."""
    missing = missing_modules()
    if missing:
        print(f"schemadoc-conformance: the conformance suite needs {', '.join(missing)}, which this installation "
              "lacks. Install the extra: pip install 'schemadoc[conformance]' (or pipx inject schemadoc "
              "'schemadoc[conformance]', uv tool install 'schemadoc[conformance]').", file=sys.stderr)
        return EXIT_USAGE
    from schemadoc.conformance.cli import main as run_suite

    return run_suite(argv)


if __name__ == "__main__":
    raise SystemExit(main())
