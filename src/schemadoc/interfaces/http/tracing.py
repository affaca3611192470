"""OpenTelemetry spans, only when an exporter is configured (``pip install 'schemadoc[otel]'``).

Configured by the standard environment variables: ``OTEL_TRACES_EXPORTER`` (``otlp``, ``console``, several
separated by commas, ``none``) or an OTLP endpoint (``OTEL_EXPORTER_OTLP_ENDPOINT``,
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``: then ``otlp``), with the OTLP exporter's own variables (headers, timeout,
compression), ``OTEL_SERVICE_NAME`` (default ``schemadoc``) and ``OTEL_RESOURCE_ATTRIBUTES``. The OTLP exporter
speaks HTTP/protobuf. ``console`` writes one JSON object per span, to stdout (stderr under ``--transport stdio``,
whose stdout is the protocol).

Spans: ``request`` (a server span per HTTP request or stdio tool call, a child of the caller's ``traceparent``),
``operation`` (the catalogue operation run), ``validation`` (of a write's change) and ``journal commit``. The
provider is this application's own (never the global one), so FastAPI's own instrumentation stays off. What a
client sent (its path, request id, tool name, document id) is cleaned as the log cleans it: no query value, bearer
credential or token of the tokens file reaches a span.

Unconfigured, nothing is imported beyond this module and nothing is done per request: the request layer and the
service keep their ``None`` / no-op hooks.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO

from schemadoc import __version__
from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.http.logs import LogFormatter, TokenSecrets, escape_controls
from schemadoc.interfaces.http.request_context import RequestRecord

__all__ = ["Tracing", "tracing_from_environment"]

log = logging.getLogger("schemadoc.tracing")

_EXPORTERS = ("otlp", "console")


class Tracing:
    """The spans of one application (see the module docstring), over an OpenTelemetry ``tracer``."""

    def __init__(self, tracer: Any, provider: Any, redact: Callable[[str], str] | None = None) -> None:
        from opentelemetry import trace
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        self.tracer = tracer
        self.provider = provider
        self.redact = redact or LogFormatter().redact
        """What a client-given text goes through before it is a span attribute: the log's own redaction."""
        self._trace = trace
        self._propagator = TraceContextTextMapPropagator()

    @contextlib.contextmanager
    def span(self, name: str) -> Iterator[Any]:
        """A child span of the current one (an operation, ``validation``, ``journal commit``). A failure is noted by
        its catalogued code (``error.type``; status ERROR for a server error), never its message: messages quote
        what the client sent."""
        with self.tracer.start_as_current_span(name, record_exception=False, set_status_on_exception=False) as span:
            try:
                yield span
            except SchemaDocError as error:
                span.set_attribute("error.type", error.code)
                if error.status >= 500:
                    span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, error.code))
                raise
            except Exception as error:
                span.set_attribute("error.type", type(error).__qualname__)
                span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, type(error).__qualname__))
                raise

    @contextlib.contextmanager
    def request(self, record: RequestRecord, headers: Any) -> Iterator[None]:
        """The server span of one request, a child of its ``traceparent``; finished with what the record says."""
        carrier: dict[str, str] = {}
        for name, value in headers:
            if name in (b"traceparent", b"tracestate"):
                carrier[name.decode("latin-1")] = bytes(value).decode("latin-1")
        parent = self._propagator.extract(carrier) if carrier else None
        kind = self._trace.SpanKind.SERVER
        with self.tracer.start_as_current_span("request", context=parent, kind=kind, record_exception=False,
                                               set_status_on_exception=False) as span:
            try:
                yield
            finally:
                span.update_name(f"{record.method} {record.operation or ''}".strip())  # both from closed sets
                attributes = {"schemadoc.request_id": record.request_id, "schemadoc.door": record.door,
                              "schemadoc.operation": record.operation, "schemadoc.tool": record.tool,
                              "schemadoc.doc_id": record.doc_id, "schemadoc.version": record.version,
                              "http.request.method": record.method or None,
                              "url.path": record.path.split("?", 1)[0] or None,
                              "http.response.status_code": record.status, "error.type": record.code or None}
                span.set_attributes({name: self.redact(escape_controls(value)) if isinstance(value, str) else value
                                     for name, value in attributes.items() if value is not None})
                if (record.status is not None and record.status >= 500) or (
                        record.error is not None and record.error.status >= 500):
                    span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, record.code))

    def close(self) -> None:
        """Export what is left and stop."""
        self.provider.shutdown()


def _wanted(environ: Mapping[str, str]) -> list[str]:
    named = [name.strip().lower() for name in environ.get("OTEL_TRACES_EXPORTER", "").split(",") if name.strip()]
    if "none" in named:
        return []
    if not named and (environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")):
        return ["otlp"]
    return named


def tracing_from_environment(environ: Mapping[str, str] | None = None, *, console: TextIO | None = None,
                             tokens_file: Path | None = None) -> Tracing | None:
    """The application's :class:`Tracing` when the environment configures an exporter, else ``None``.

    ``console``: where the ``console`` exporter writes (default stdout). ``tokens_file``: its tokens are hidden in
    span attributes as in the log (with query values and bearer credentials), wherever a client put them. An exporter
    this module does not know, or the SDK missing, is one WARNING and no tracing: the server runs as it would
    without.
    """
    environ = os.environ if environ is None else environ
    wanted = _wanted(environ)
    if not wanted:
        return None
    unknown = [name for name in wanted if name not in _EXPORTERS]
    if unknown:
        log.warning("OTEL_TRACES_EXPORTER names %s; schemadoc exports spans with %s only: no tracing",
                    ", ".join(unknown), " or ".join(_EXPORTERS))
        return None
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor
    except ImportError as error:
        log.warning("tracing is configured (OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_*) but the OpenTelemetry SDK is "
                    "not installed (%s): pip install 'schemadoc[otel]'; no tracing", error)
        return None
    resource = Resource.create({"service.name": environ.get("OTEL_SERVICE_NAME") or "schemadoc",
                                "service.version": __version__})
    provider = TracerProvider(resource=resource)
    for name in wanted:
        if name == "console":
            out = console if console is not None else sys.stdout
            provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(
                out=out, formatter=_one_line)))
            continue
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as error:
            log.warning("OTLP export needs opentelemetry-exporter-otlp-proto-http (%s): pip install "
                        "'schemadoc[otel]'; no OTLP export", error)
            continue
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    log.info("tracing: spans exported with %s", ", ".join(wanted))
    redact = LogFormatter(TokenSecrets(tokens_file) if tokens_file is not None else None).redact
    return Tracing(provider.get_tracer("schemadoc", __version__), provider, redact)


def _one_line(span: Any) -> str:
    text: str = span.to_json(indent=None)
    return text + "\n"

