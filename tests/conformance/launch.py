"""Start schemadoc with one broken variant switched on: ``python launch.py VARIANT serve --transport stdio ...``.

A test build: the variant (``variants.py``) is applied to this process only, then the ``schemadoc``
command runs as usual. The conformance suite is pointed at it with ``--mcp-command``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from variants import FEATURES, VARIANTS

from schemadoc.interfaces.cli.command import main

if __name__ == "__main__":
    name = sys.argv[1]
    FEATURES[name]() if name in FEATURES else VARIANTS[name].apply()
    raise SystemExit(main(sys.argv[2:]))
