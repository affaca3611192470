"""The same application ``schemadoc serve`` builds, as a factory for Granian (``benchmarks/throughput.py --granian``).

Only for measuring Granian against uvicorn: the settings come from the environment (``SCHEMA_PATH``,
``STORAGE_DIR``, ``STORAGE_URL``, ...) as for ``serve``; Granian's own HTTP layer replaces uvicorn's
bounded httptools protocol (``interfaces/http/protocol.py``), so the header, timeout and connection
guards of ``serve`` are not there.
"""

from __future__ import annotations

import os
from typing import Any


def app() -> Any:
    from schemadoc.config import load_settings
    from schemadoc.interfaces.app import build_app
    from schemadoc.interfaces.cli.common import create_service

    settings = load_settings({}, os.environ)
    service = create_service(settings)  # opened
    return build_app(service, settings)
