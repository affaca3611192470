"""What observing one request costs, piece by piece, in process (no server): the request id, counting it for
``/metrics``, writing its log line (text and JSON, to /dev/null), and the tracing hooks off and on.

Not a test: it prints microseconds per call (the best of five runs of ``--number`` calls each). The whole-server
figure is ``benchmarks/rest.py`` with ``--server-env`` (docs/operations.md, "Overhead").

    .venv/bin/python benchmarks/observability.py
"""

from __future__ import annotations

import argparse
import io
import logging
import os
import timeit
from pathlib import Path

from schemadoc.interfaces.http.logs import JsonLogFormatter, LogFormatter, LogHandler
from schemadoc.interfaces.http.metrics import Metrics
from schemadoc.interfaces.http.request_context import RequestRecord, request_id_of
from schemadoc.interfaces.http.request_log import log_request
from schemadoc.interfaces.http.tracing import tracing_from_environment
from schemadoc.schema import load_schema
from schemadoc.service import DocumentService
from schemadoc.storage.memory import MemoryDocumentStore

SCHEMA = Path(__file__).resolve().parents[1] / "schemas" / "book.schema.json"


def per_call_us(statement: object, number: int) -> float:
    return min(timeit.repeat(statement, number=number, repeat=5)) / number * 1e6  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--number", type=int, default=20_000, help="calls per run (default 20000)")
    args = parser.parse_args(argv)
    service = DocumentService(load_schema(SCHEMA), MemoryDocumentStore())
    service.open()
    metrics = Metrics(service)
    record = RequestRecord("0af7651916cd43dd8448eb211c80319c", "rest", "PUT", "/api/v1/documents/01J?path=/title",
                           operation="document_update_node", doc_id="01JABCDEFGHJKMNPQRSTVWXYZ0", version=7,
                           status=200, token="writer")
    headers = [(b"host", b"127.0.0.1:8080"), (b"accept", b"*/*"), (b"content-type", b"application/json"),
               (b"x-request-id", b"client-chosen-id-42")]
    rows: list[tuple[str, float]] = [
        ("request id from X-Request-ID", per_call_us(lambda: request_id_of(headers), args.number)),
        ("request id generated", per_call_us(lambda: request_id_of(headers[:3]), args.number)),
        ("count the request (metrics.observe, a write)", per_call_us(lambda: metrics.observe(record, 0.0012),
                                                                      args.number)),
    ]
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    with open(os.devnull, "w") as sink:
        for name, formatter in (("text", LogFormatter()), ("json", JsonLogFormatter())):
            handler = LogHandler(sink)
            handler.setFormatter(formatter)
            root.handlers = [handler]
            rows.append((f"the request's log line, {name}", per_call_us(lambda: log_request(record, 0.0012, 1000),
                                                                      args.number)))
    root.handlers = []
    rows.append(("tracing off: the service's span hook", per_call_us(lambda: service.span("validation").__enter__(),
                                                                     args.number)))
    tracing = tracing_from_environment({"OTEL_TRACES_EXPORTER": "console"}, console=io.StringIO())
    if tracing is not None:
        def one_span() -> None:
            with tracing.span("validation"):
                pass
        rows.append(("tracing on (console exporter to memory): one span", per_call_us(one_span, args.number // 10)))
        tracing.close()
    width = max(len(name) for name, _ in rows)
    print(f"{'what':<{width}}  µs per call")
    for name, micros in rows:
        print(f"{name:<{width}}  {micros:8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
