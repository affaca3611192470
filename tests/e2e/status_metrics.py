"""Metrics for the status page's tests, written by prometheus-client itself: the names and labels ``/metrics``
serves (docs/ui.md, "Status"), on a private registry whose values each test sets, so what the page should show
is known. Also a stand-in for ``/metrics`` inside Chromium (the DevTools Fetch domain), for tests that need
answers a real server would not give on demand (404, 403, a counter reset, text with odd label values).
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from browser import Page
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


@dataclass
class StatusMetrics:
    """The metrics the status page reads, on their own registry."""

    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        r = self.registry
        self.requests = Counter("schemadoc_requests", "Requests answered.", ["door", "operation", "status", "code"],
                                registry=r)
        self.duration = Histogram("schemadoc_request_duration_seconds", "Time to answer.", ["door", "operation"],
                                  buckets=BUCKETS, registry=r)
        self.documents = Gauge("schemadoc_documents", "Documents in the store.", registry=r)
        self.memory_budget = Gauge("schemadoc_memory_budget_bytes", "The memory budget.", registry=r)
        self.memory_used = Gauge("schemadoc_memory_used_bytes", "What is held.", registry=r)
        self.memory_documents = Gauge("schemadoc_memory_documents", "Documents held.", registry=r)
        self.evictions = Counter("schemadoc_memory_evictions", "Documents evicted.", registry=r)
        self.lag_versions = Gauge("schemadoc_snapshot_lag_versions", "Versions not snapshotted.", registry=r)
        self.lag_seconds = Gauge("schemadoc_snapshot_lag_seconds", "Age of the oldest write not snapshotted.",
                                 registry=r)
        self.subscribers = Gauge("schemadoc_subscribers", "Event streams and MCP subscriptions open.", registry=r)
        self.mcp_sessions = Gauge("schemadoc_mcp_sessions", "MCP sessions open.", registry=r)

    def answer(self, door: str, operation: str, status: str, code: str = "", seconds: float = 0.001,
               times: int = 1) -> None:
        for _ in range(times):
            self.requests.labels(door, operation, status, code).inc()
            self.duration.labels(door, operation).observe(seconds)

    def text(self) -> str:
        return generate_latest(self.registry).decode()


def samples_of(registry: CollectorRegistry) -> list[dict[str, Any]]:
    """Every sample prometheus-client holds, as the page's parser should read it back (non-finite values as text,
    since JSON has none)."""
    found = []
    for family in registry.collect():
        for sample in family.samples:
            found.append({"name": sample.name, "labels": dict(sample.labels), "value": as_json(sample.value)})
    return found


def as_json(value: float) -> float | str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    return value


IMPORTS = ("const metrics = await import('/ui/static/metrics.js');"
           " const data = await import('/ui/static/status_data.js');"
           " const fin = (v) => Number.isNaN(v) ? 'NaN' : v === Infinity ? '+Inf' : v === -Infinity ? '-Inf' : v;")


def in_page(page: Page, body: str, **values: Any) -> Any:
    """Run ``body`` (an async function body) in the page with the modules ``metrics`` and ``data`` (the status
    view's), the helper ``fin`` (non-finite numbers as text) and ``values`` (JSON) at hand; its return value."""
    return page.evaluate(f"(async () => {{ {IMPORTS} const values = {json.dumps(values)}; {body} }})()")


class MetricsStandIn:
    """Answers the page's requests for ``/metrics`` from this test (DevTools ``Fetch.requestPaused``): ``reply()``
    gives the status, the content type and the body of each. ``served`` counts the answers."""

    def __init__(self, page: Page, reply: Callable[[], tuple[int, str, str]]) -> None:
        self.page = page
        self.reply = reply
        self.served = 0
        self._stop = threading.Event()
        self._seen = len(page.browser.events)
        page.send("Fetch.enable", {"patterns": [{"urlPattern": "*/metrics"}]})
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            events = list(self.page.browser.events)
            for event in events[self._seen:]:
                if event.get("method") == "Fetch.requestPaused" and event.get("sessionId") == self.page.session:
                    status, kind, body = self.reply()
                    self.page.send("Fetch.fulfillRequest", {
                        "requestId": event["params"]["requestId"], "responseCode": status,
                        "responseHeaders": [{"name": "Content-Type", "value": kind}],
                        "body": base64.b64encode(body.encode()).decode()})
                    self.served += 1
            self._seen = len(events)
            time.sleep(0.02)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
