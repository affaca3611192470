"""``python -m schemadoc``: the ``schemadoc`` command."""

from __future__ import annotations

from schemadoc.interfaces.cli.command import main

if __name__ == "__main__":
    raise SystemExit(main())
