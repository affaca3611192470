"""schemathesis against the application's own /openapi.json, in process (ASGI), every operation.

Every check schemathesis has (no 5xx, responses, status codes, content types and headers as
documented, schema-violating requests refused, schema-valid ones accepted) with the settings of
``schemathesis.toml``. Generated ``doc_id`` values follow the ULID pattern but name no document,
so half of the cases use a document that exists instead (created for the test).

The default run is short (a few examples per operation); ``SCHEMADOC_FUZZ_EXAMPLES`` raises it
(``make fuzz``), and ``make fuzz`` also runs the schemathesis command line with stateful links
against a real server.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Any

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig

from schemadoc.config import Settings
from schemadoc.interfaces.app import build_app, create_service

ROOT = Path(__file__).resolve().parents[2]
_ULID = re.compile("[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}")
EXAMPLES = int(os.environ.get("SCHEMADOC_FUZZ_EXAMPLES", "3"))

_storage = tempfile.TemporaryDirectory(prefix="schemadoc-openapi-fuzz-")
_settings = Settings(schema_path=ROOT / "schemas" / "book.schema.json", storage_dir=Path(_storage.name),
                     allowed_hosts=("*",))  # schemathesis calls in process as http://testserver
_service = create_service(_settings)
_app = build_app(_service, _settings)
_doc_id = _service.create_document()[0]


async def _rest_only(scope: Any, receive: Any, send: Any) -> None:
    """The application without its lifespan, which schemathesis would start for every call (the MCP
    session manager runs once per application; the REST routes do not need it)."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            else:
                await send({"type": "lifespan.shutdown.complete"})
                return
    await _app(scope, receive, send)


_config = SchemathesisConfig.from_path(ROOT / "schemathesis.toml")
if EXAMPLES <= 3:  # the default suite: the documented examples and a few generated cases per operation
    _config.projects.default.phases.update(phases=["examples", "fuzzing"])
schema = schemathesis.openapi.from_asgi("/openapi.json", _rest_only, config=_config)


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 3,
          suppress_health_check=list(HealthCheck))
def test_every_operation_as_documented(case: Any) -> None:
    parameters = case.path_parameters or {}
    generated = parameters.get("doc_id")
    if isinstance(generated, str) and _ULID.fullmatch(generated) and ord(generated[-1]) % 2 == 0:
        # half of the well-formed ids (reproducibly): a document that exists
        parameters["doc_id"] = _doc_id
    # an event stream never ends by itself: what it sent within a second is what is checked
    streaming = case.operation.path.endswith("/events")
    case.call_and_validate(**({"timeout": 1.0} if streaming else {}))
