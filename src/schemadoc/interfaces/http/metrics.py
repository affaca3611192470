"""``/metrics``: the server's figures in the Prometheus text format, from ``prometheus-client``.

One private :class:`~prometheus_client.CollectorRegistry` per application (never the library's global one), holding:

- what is counted per request by :meth:`Metrics.observe` (the request log's ``on_request``): requests by door,
  operation, status and error code, their durations, writes by outcome and the violations of refused writes. Every
  label comes from a closed set: an operation, code or violation code the catalogue does not know is ``other``, so
  no client can make the server hold a new series;
- what is read at scrape time (:class:`_StateCollector`, nothing per request): documents, the memory budget, the
  snapshot lag, the PostgreSQL pool, subscribers and MCP sessions;
- the durations the service reports through its observer callbacks (cold loads, snapshots): nothing below
  ``interfaces/`` imports prometheus-client;
- prometheus-client's process, platform and garbage collector collectors;
- under ``serve --workers N``, ``schemadoc_worker_info{worker="k"} 1``: which worker answered the scrape.

docs/operations.md lists every metric with its labels.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from schemadoc.errors import CATALOG, SchemaDocError
from schemadoc.interfaces.http.request_context import RequestRecord
from schemadoc.interfaces.http.subscribers import SubscriberSlots
from schemadoc.operations.catalogue import CATALOGUE
from schemadoc.service import DocumentService

__all__ = ["CONTENT_TYPE_LATEST", "DOORS", "OPERATIONS", "Metrics"]

DOORS: Final = frozenset({"rest", "mcp", "stdio"})
OPERATIONS: Final = frozenset({operation.name for operation in CATALOGUE}) | frozenset(
    {"events", "changes", "health", "metrics", "ui", "docs", "mcp-protocol", "other"})
_WRITES: Final = frozenset(operation.name for operation in CATALOGUE if operation.writes)
_VIOLATIONS: Final = frozenset(code for code, entry in CATALOG.items() if entry.kind == "validation")
_LATENCY_BUCKETS: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
                           float("inf"))
_SLOW_BUCKETS: Final = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, float("inf"))
_DOCUMENTS_EVERY_SECONDS: Final = 10.0
"""How long a count of the documents is reused (it lists the store: a directory scan, or a query)."""


def _status_label(record: RequestRecord) -> str:
    if record.status is None:
        return "error" if record.error is not None else "ok"
    return str(record.status) if 100 <= record.status <= 599 else "other"


class Metrics:
    """The metrics of one application over ``service`` (module docstring).

    ``subscribers``: the event-stream and MCP subscription slots; ``mcp_sessions``: how many MCP sessions are open;
    ``worker``: the number of this worker of ``serve --workers N`` (1 to N; ``None``: one server, no such series).
    Registers its duration callbacks with the service (:meth:`close` removes them).
    """

    def __init__(self, service: DocumentService, *, subscribers: SubscriberSlots | None = None,
                 mcp_sessions: Callable[[], int] | None = None, worker: int | None = None) -> None:
        self.service = service
        self.registry = CollectorRegistry(auto_describe=True)
        for collector in (ProcessCollector, PlatformCollector, GCCollector):
            collector(registry=self.registry)
        self._requests = Counter("schemadoc_requests", "Requests answered, by door, operation, HTTP status (ok or "
                                 "error on stdio) and catalogued error code ('' on success).",
                                 ["door", "operation", "status", "code"], registry=self.registry)
        self._durations = Histogram("schemadoc_request_duration_seconds", "Time to answer a request.",
                                    ["door", "operation"], buckets=_LATENCY_BUCKETS, registry=self.registry)
        self._writes = Counter("schemadoc_writes", "Writes, by operation and outcome (committed, refused, dry_run).",
                               ["operation", "outcome"], registry=self.registry)
        self._violations = Counter("schemadoc_write_violations", "Violations in refused writes, by violation code.",
                                   ["code"], registry=self.registry)
        self._cold_loads = Histogram("schemadoc_cold_load_duration_seconds", "Time to load a document that was not "
                                     "in memory from the store.", buckets=_SLOW_BUCKETS, registry=self.registry)
        self._snapshots = Histogram("schemadoc_snapshot_duration_seconds", "Time to write one snapshot.",
                                    buckets=_SLOW_BUCKETS, registry=self.registry)
        self.registry.register(_StateCollector(service, subscribers, mcp_sessions))
        if worker is not None:  # a replaced worker takes the number of the one it replaces
            Gauge("schemadoc_worker_info", "The worker of serve --workers that answered this scrape (always 1).",
                  ["worker"], registry=self.registry).labels(str(worker)).set(1)
        self._children: dict[tuple[str, str, str, str], tuple[Any, Any]] = {}
        self._lock = threading.Lock()
        service.on_cold_load = self._cold_loads.observe
        service.snapshots.on_snapshot = self._snapshots.observe

    def close(self) -> None:
        """Stop hearing the service's durations."""
        if self.service.on_cold_load == self._cold_loads.observe:
            self.service.on_cold_load = None
        if self.service.snapshots.on_snapshot == self._snapshots.observe:
            self.service.snapshots.on_snapshot = None

    def observe(self, record: RequestRecord, seconds: float) -> None:
        """Count one answered request (its labels folded into their closed sets)."""
        door = record.door if record.door in DOORS else "other"
        operation = record.operation if record.operation in OPERATIONS else "other"
        code = record.code if not record.code or record.code in CATALOG else "other"
        key = (door, operation, _status_label(record), code)
        children = self._children.get(key)
        if children is None:
            with self._lock:
                children = self._children.setdefault(key, (self._requests.labels(*key),
                                                           self._durations.labels(door, operation)))
        children[0].inc()
        if not record.streamed:  # an event stream's duration is how long its reader stayed, not a latency
            children[1].observe(seconds)
        if operation in _WRITES:
            self._count_write(record, operation)

    def _count_write(self, record: RequestRecord, operation: str) -> None:
        if record.dry_run:
            outcome = "dry_run"
        elif record.error is None and (record.status is None or record.status < 400):
            outcome = "committed"
        elif record.error is not None:
            outcome = "refused"
            violations = record.error.details.get("violations")
            for violation in violations if isinstance(violations, list) else ():
                code = violation.get("code") if isinstance(violation, dict) else None
                self._violations.labels(code if code in _VIOLATIONS else "other").inc()
        else:
            return  # no answer (the client went away): not known
        self._writes.labels(operation, outcome).inc()

    def exposition(self) -> bytes:
        """The text exposition of every metric (reads the state: call it off the event loop)."""
        return generate_latest(self.registry)


class _StateCollector(Collector):
    """The gauges read at scrape time, and the counters the service keeps as plain numbers."""

    def __init__(self, service: DocumentService, subscribers: SubscriberSlots | None,
                 mcp_sessions: Callable[[], int] | None) -> None:
        self.service = service
        self.subscribers = subscribers
        self.mcp_sessions = mcp_sessions
        self._documents: tuple[float, int] | None = None

    def describe(self) -> Iterable[Metric]:
        return ()  # read at scrape time only

    def _document_count(self) -> int | None:
        now = time.monotonic()
        if self._documents is None or now - self._documents[0] > _DOCUMENTS_EVERY_SECONDS:
            try:
                metas = self.service.store.list_metas()
            except SchemaDocError:  # the store cannot be listed now (an outage): the last count, if any
                return self._documents[1] if self._documents is not None else None
            self._documents = (now, sum(1 for meta in metas if meta.deleted_at is None))
        return self._documents[1]

    def collect(self) -> Iterator[Metric]:
        documents = self._document_count()
        if documents is not None:
            yield _gauge("schemadoc_documents", "Documents in the store (not deleted).", documents)
        memory = self.service.memory
        yield _gauge("schemadoc_memory_budget_bytes", "The memory budget for documents held.", memory.budget_bytes)
        yield _gauge("schemadoc_memory_used_bytes", "Bytes charged by the documents held.", memory.charged)
        yield _gauge("schemadoc_memory_documents", "Documents held in memory.", len(memory))
        yield CounterMetricFamily("schemadoc_memory_evictions", "Documents dropped from memory to stay within the "
                                  "budget.", value=memory.evictions)
        yield CounterMetricFamily("schemadoc_cold_loads", "Documents loaded from the store (first reads and reloads "
                                  "after an eviction).", value=memory.loads)
        versions, journal_bytes, oldest = self.service.snapshots.lag()
        yield _gauge("schemadoc_journal_bytes", "Journal bytes not yet covered by a snapshot (documents held).",
                     journal_bytes)
        yield _gauge("schemadoc_snapshot_lag_versions", "Versions journaled but not yet in a snapshot.", versions)
        yield _gauge("schemadoc_snapshot_lag_bytes", "Journal bytes written but not yet in a snapshot.",
                     journal_bytes)
        yield _gauge("schemadoc_snapshot_lag_seconds", "Age of the oldest write not yet in a snapshot (0: none).",
                     max(time.monotonic() - oldest, 0.0) if oldest is not None else 0.0)
        failures = self.service.search_index.failures()
        yield _gauge("schemadoc_search_index_failed_documents", "Documents whose search index changes failed to apply "
                     "and wait to be indexed again from the store.", failures["failed"])
        yield CounterMetricFamily("schemadoc_search_index_failures", "Documents whose search index changes failed to "
                                  "apply (each counted once until it is indexed again).", value=failures["failures"])
        connections = getattr(self.service.store, "connections", None)
        stats = getattr(connections, "stats", None)
        if callable(stats):
            pool = stats()
            family = GaugeMetricFamily("schemadoc_postgres_pool_connections", "PostgreSQL pool connections.",
                                       labels=["state"])
            family.add_metric(["idle"], pool["idle"])
            family.add_metric(["used"], pool["used"])
            yield family
            yield _gauge("schemadoc_postgres_pool_size_max", "The PostgreSQL pool's maximum size.", pool["max"])
            yield CounterMetricFamily("schemadoc_postgres_pool_waits", "Requests that waited for a pooled connection.",
                                      value=pool["waits"])
            yield _gauge("schemadoc_postgres_available", "1 while PostgreSQL answers, 0 during an outage.",
                         pool["available"])
        if self.subscribers is not None:
            yield _gauge("schemadoc_subscribers", "Event streams and MCP subscriptions open.",
                         self.subscribers.count())
        if self.mcp_sessions is not None:
            yield _gauge("schemadoc_mcp_sessions", "MCP sessions open (handshake era).", self.mcp_sessions())


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)
