"""The status view at /ui/status in headless Chromium: its reader of the Prometheus text format, its quantiles,
the series it draws, and what it shows of a real server's /metrics.

The exposition text the parser and the view are checked against is written by prometheus-client itself from
values the test sets (``status_metrics.py``), so the expected figures are known; the last tests read a real
``schemadoc serve`` after a known workload. Skipped, with the reason, where Chromium is not installed.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from browser import CHROMIUM_MISSING, Browser, Page, chromium
from http_server import Server, tokens_file
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Exemplar, Sample
from status_metrics import BUCKETS, MetricsStandIn, StatusMetrics, in_page, samples_of

TEXT = "text/plain; version=0.0.4; charset=utf-8"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    if chromium() is None:
        pytest.skip(CHROMIUM_MISSING)
    base = tmp_path_factory.mktemp("ui-status")
    with Server(base / "data", base / "logs") as running:
        yield running


@pytest.fixture(scope="module")
def browser(server: Server) -> Iterator[Browser]:
    with Browser(width=1280, height=900) as driven:
        yield driven


def _checked_close(opened: Page) -> None:
    errors = [error for error in opened.console_errors() if "Failed to load resource" not in error]
    opened.close()
    assert not errors, f"the page logged errors: {errors}"


@pytest.fixture(scope="module")
def modules(browser: Browser, server: Server) -> Iterator[Page]:
    """One page whose origin serves the status view's modules, to run them on given text."""
    opened = browser.new_page()
    opened.goto(f"{server.url}/ui/status")
    try:
        yield opened
    finally:
        _checked_close(opened)


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    opened = browser.new_page(width=1280, height=900)
    try:
        yield opened
    finally:
        _checked_close(opened)


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    return Path(os.environ.get("SCHEMADOC_UI_SCREENSHOTS") or tmp_path)


def parsed(page: Page, text: str) -> list[dict[str, object]]:
    """The samples the page reads in ``text``, in the order of :func:`ordered`."""
    return ordered(in_page(page, "return metrics.parseMetrics(values.text).map("
                                 "(s) => ({name: s.name, labels: s.labels, value: fin(s.value)}));", text=text))


def ordered(samples: list[dict[str, object]]) -> list[dict[str, object]]:
    """Samples in one order (the text format groups a family's series by suffix, the registry by series)."""
    return sorted(samples, key=lambda sample: json.dumps(sample, sort_keys=True))


# -- the reader of the text format --------------------------------------------------------------------------------


def test_the_parser_reads_back_every_sample_prometheus_client_writes(modules: Page) -> None:
    metrics = StatusMetrics()
    metrics.answer("rest", "document_read", "200", times=3, seconds=0.02)
    metrics.answer("rest", "document_read", "404", "document-not-found", seconds=0.004)
    metrics.answer("mcp", "node_update", "422", 'a "quoted" \\ back\nslash', seconds=3.0)
    metrics.documents.set(float("nan"))
    metrics.lag_seconds.set(float("inf"))
    metrics.memory_used.set(float("-inf"))
    metrics.memory_budget.set(1.5e12)
    text = metrics.text()
    assert "# HELP" in text and "# TYPE" in text and 'le="+Inf"' in text and "NaN" in text

    assert parsed(modules, text) == ordered(samples_of(metrics.registry))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(st.text(st.characters(exclude_categories=("Cs",)), max_size=12), min_size=1, max_size=5),
       count=st.integers(min_value=0, max_value=2**40))
def test_any_label_value_and_count_survive_the_text_format(modules: Page, values: list[str], count: int) -> None:
    metrics = StatusMetrics()
    for value in values:
        metrics.requests.labels("rest", value, "200", value).inc(count)
    assert parsed(modules, metrics.text()) == ordered(samples_of(metrics.registry))


def test_odd_lines_are_skipped_and_the_rest_read(modules: Page) -> None:
    metrics = StatusMetrics()
    metrics.documents.set(7)
    text = "not a sample at all {\nschemadoc_x{a=\"unterminated} 1\n" + metrics.text().replace("\n", "\r\n")
    result = in_page(modules, "const s = metrics.parseMetrics(values.text);"
                     " return [s.skipped, metrics.sumOf(s, 'schemadoc_documents')];", text=text)
    assert result == [2, 7]


class _Stamped:
    """A collector whose samples carry timestamps and an exemplar (what the OpenMetrics format adds)."""

    def collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily("schemadoc_requests", "Requests answered.", labels=["door"])
        requests.add_metric(["rest"], 5, timestamp=1_700_000_000.5)
        yield requests
        duration = HistogramMetricFamily("schemadoc_request_duration_seconds", "Time to answer.", labels=["door"])
        duration.add_metric(["rest"], [("0.1", 2), ("+Inf", 3)], 0.5)
        first = duration.samples[0]
        duration.samples[0] = Sample(first.name, first.labels, first.value, None,
                                     Exemplar({"trace_id": "a b # c"}, 0.05, 1_700_000_000.0))
        yield duration


def test_timestamps_exemplars_and_the_openmetrics_end_are_read_past(modules: Page) -> None:
    registry = CollectorRegistry()
    registry.register(_Stamped())
    text = generate_openmetrics(registry).decode()
    assert "# EOF" in text and '# {trace_id="a b # c"}' in text and " 1700000000.5" in text
    assert parsed(modules, text) == ordered(samples_of(registry))


# -- quantiles, as Prometheus' histogram_quantile --------------------------------------------------------------------


def _quantiles(page: Page, text: str, qs: list[float]) -> list[object]:
    result: list[object] = in_page(
        page, "const b = metrics.bucketsOf(metrics.parseMetrics(values.text), 'schemadoc_request_duration_seconds');"
              " return values.qs.map((q) => fin(metrics.histogramQuantile(q, b)));", text=text, qs=qs)
    return result


def test_quantiles_interpolate_inside_the_bucket_that_holds_them(modules: Page) -> None:
    metrics = StatusMetrics()
    # 100 observations, summed over two series as `sum by (le)`: cumulative 10 <= 0.005, 40 <= 0.025,
    # 80 <= 0.1, 95 <= 0.5 and 100 in all (5 beyond the highest finite bound, 10 s)
    metrics.answer("rest", "document_read", "200", seconds=0.004, times=10)
    metrics.answer("rest", "document_read", "200", seconds=0.02, times=30)
    metrics.answer("mcp", "node_update", "200", seconds=0.08, times=40)
    metrics.answer("mcp", "node_update", "200", seconds=0.3, times=15)
    metrics.answer("rest", "document_create", "200", seconds=20.0, times=5)
    cumulative = {0.005: 10, 0.01: 10, 0.025: 40, 0.05: 40, 0.1: 80, 0.25: 80, 0.5: 95}
    # the rank q * 100 falls in the first bucket whose cumulative count reaches it: interpolate from the bound below
    p50 = 0.05 + (0.1 - 0.05) * (50 - cumulative[0.05]) / (cumulative[0.1] - cumulative[0.05])
    p95 = 0.25 + (0.5 - 0.25) * (95 - cumulative[0.25]) / (cumulative[0.5] - cumulative[0.25])
    p05 = 0 + (0.005 - 0) * 5 / cumulative[0.005]
    result = _quantiles(modules, metrics.text(), [0.5, 0.95, 0.05, 0.99, 1.0, -0.1, 1.1])
    assert result[:3] == [pytest.approx(p50), pytest.approx(p95), pytest.approx(p05)]
    assert result[3:] == [10.0, 10.0, "-Inf", "+Inf"]  # in the +Inf bucket: the highest finite bound


def test_no_observations_give_no_quantile(modules: Page) -> None:
    metrics = StatusMetrics()
    metrics.duration.labels("rest", "document_read")  # the series exists, empty
    assert _quantiles(modules, metrics.text(), [0.5]) == ["NaN"]
    assert _quantiles(modules, "", [0.5]) == ["NaN"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(observations=st.lists(st.floats(min_value=0, max_value=30, allow_nan=False), min_size=1, max_size=60),
       q=st.floats(min_value=0.01, max_value=1.0))
def test_a_quantile_lies_in_the_bucket_of_the_observation_it_stands_for(modules: Page, observations: list[float],
                                                                        q: float) -> None:
    metrics = StatusMetrics()
    for i, seconds in enumerate(observations):
        metrics.answer("rest" if i % 2 else "mcp", "document_read", "200", seconds=seconds)
    estimate = _quantiles(modules, metrics.text(), [q])[0]
    assert isinstance(estimate, float | int)
    # the ceil(q * n)-th smallest observation is in the bucket where the cumulative count first reaches q * n
    rank = math.ceil(q * len(observations))
    true_value = sorted(observations)[rank - 1]
    bounds = (0.0, *BUCKETS)
    if true_value > BUCKETS[-1]:
        assert estimate == BUCKETS[-1]
    else:
        upper = next(i for i, bound in enumerate(bounds) if i > 0 and true_value <= bound)
        assert bounds[upper - 1] - 1e-12 <= estimate <= bounds[upper] + 1e-12


# -- the series the view draws ----------------------------------------------------------------------------------------


def _history(page: Page, readings: list[tuple[int, str]], body: str, **options: object) -> object:
    return in_page(page, "const h = new data.StatusHistory(values.options); for (const [t, text] of values.readings)"
                         f" h.add(t, data.summarize(metrics.parseMetrics(text))); {body}",
                   readings=readings, options=options)


def test_rates_come_from_counter_deltas_leaving_out_the_readings_of_metrics(modules: Page) -> None:
    metrics = StatusMetrics()
    metrics.answer("rest", "document_read", "200", times=10)
    metrics.answer("rest", "metrics", "200", times=5)
    first = metrics.text()
    metrics.answer("rest", "document_read", "200", times=20)
    metrics.answer("rest", "document_read", "404", "document-not-found", times=4)
    metrics.answer("rest", "metrics", "200", times=100)
    second = metrics.text()
    restarted = StatusMetrics()  # the server restarted: its counters start again from zero
    restarted.answer("mcp", "node_update", "200", times=6)
    result = _history(modules, [(0, first), (2000, second), (4000, restarted.text())],
                      "return [h.rate('requests').map(([, v]) => v), h.rate('errors').map(([, v]) => v),"
                      " h.points.map((p) => p.summary.requests)];")
    assert result == [[None, 12, 3], [None, 2, 0], [10, 34, 6]]


def test_latency_counts_only_what_was_answered_within_its_window(modules: Page) -> None:
    metrics = StatusMetrics()
    metrics.answer("rest", "document_read", "200", seconds=0.9, times=100)  # before the view's first reading
    first = metrics.text()
    metrics.answer("rest", "document_read", "200", seconds=0.02, times=10)
    metrics.answer("rest", "metrics", "200", seconds=4.0, times=10)  # not counted
    metrics.answer("rest", "events", "200", seconds=30.0, times=10)  # streams: their time is how long they stayed open
    second = metrics.text()
    result = _history(modules, [(0, first), (2000, second), (40_000, second)],
                      "return [h.latency(0.5).map(([, v]) => v === null ? null : fin(v)),"
                      " fin(metrics.histogramQuantile(0.5, h.latest.buckets))];")
    within_window = 0.01 + (0.025 - 0.01) * 5 / 10  # the 10 observations of 0.02 s, in (0.01, 0.025]
    since_start = 0.5 + (1.0 - 0.5) * (55 - 10) / 100  # rank 55 of 110: 10 at or below 0.5 s, 100 in (0.5, 1]
    assert result == [[None, pytest.approx(within_window), None], pytest.approx(since_start)]


def test_the_window_is_bounded_in_time_and_in_points(modules: Page) -> None:
    metrics = StatusMetrics()
    text = metrics.text()
    result = _history(modules, [(0, text), (1000, text), (301_001, text)],
                      "const times = h.points.map((p) => p.t);"
                      " const many = new data.StatusHistory({maxPoints: 50});"
                      " for (let t = 0; t < 1000; t += 1) many.add(t, h.latest);"
                      " return [times, many.points.length, many.points[0].t];")
    assert result == [[301_001], 50, 950]


def test_top_error_codes_count_the_window_and_since_start(modules: Page) -> None:
    metrics = StatusMetrics()
    metrics.answer("rest", "document_read", "404", "document-not-found", times=7)
    metrics.answer("rest", "document_read", "200", times=9)
    first = metrics.text()
    metrics.answer("rest", "node_update", "409", "version-conflict", times=3)
    metrics.answer("mcp", "node_update", "422", "validation-failed", times=1)
    metrics.answer("rest", "document_read", "500", "", times=2)
    result = _history(modules, [(0, first), (2000, metrics.text())], "return h.topErrors();")
    assert result == [
        {"code": "version-conflict", "recent": 3, "total": 3},
        {"code": "HTTP 500", "recent": 2, "total": 2},
        {"code": "validation-failed", "recent": 1, "total": 1},
        {"code": "document-not-found", "recent": 0, "total": 7},
    ]


# -- the view, on answers the test gives ------------------------------------------------------------------------------


def _figure(page: Page, key: str) -> str:
    return page.text(f'[data-figure="{key}"]')


def _wait_live(page: Page) -> None:
    page.wait_for("document.querySelector('#status-state')?.dataset.state === 'live'", message="the status view")


def test_the_view_shows_each_figure_as_text_and_draws_its_charts(page: Page, server: Server) -> None:
    metrics = StatusMetrics()
    metrics.documents.set(12)
    metrics.memory_budget.set(256 * 1024 * 1024)
    metrics.memory_used.set(64 * 1024 * 1024)
    metrics.memory_documents.set(5)
    metrics.lag_versions.set(42)
    metrics.lag_seconds.set(3.5)
    metrics.subscribers.set(4)
    metrics.mcp_sessions.set(2)
    metrics.answer("rest", "document_read", "200", times=30)
    metrics.answer("rest", "metrics", "200", times=50)
    metrics.answer("rest", "document_read", "404", '<img src=x onerror="alert(1)">', times=2)
    stand_in = MetricsStandIn(page, lambda: (200, TEXT, metrics.text()))
    try:
        page.goto(f"{server.url}/ui/status")
        _wait_live(page)
        assert _figure(page, "documents") == "12"
        assert _figure(page, "memory-used") == "64 MB" and _figure(page, "memory-budget") == "256 MB"
        assert _figure(page, "memory-share") == "25.0 %" and _figure(page, "memory-documents") == "5"
        assert _figure(page, "lag-versions") == "42" and _figure(page, "lag-seconds") == "3.50 s"
        assert _figure(page, "subscribers") == "4" and _figure(page, "mcp-sessions") == "2"
        assert _figure(page, "requests-total") == "32"  # the 50 readings of /metrics are left out
        assert _figure(page, "errors-total") == "2"
        # a server's text is shown as text: the odd code is a code element's text, no image was made
        assert page.evaluate("document.querySelector('tr[data-code] code').textContent") == \
            '<img src=x onerror="alert(1)">'
        assert page.count("#status-cards img") == 0
        metrics.answer("rest", "document_read", "200", times=40)
        page.wait_for("document.querySelector('[data-figure=requests-total]').textContent === '72'", timeout=10)
        rate = _figure(page, "request-rate")
        assert rate.endswith("/s") and float(rate[:-2]) > 0
        labels = page.evaluate("[...document.querySelectorAll('svg.chart-plot')]"
                               ".map((chart) => chart.getAttribute('aria-label'))")
        assert f"Requests per second: {rate} now" in labels and "Documents: 12" in labels
        assert page.count("svg.chart-plot path.series") >= 6  # a line in every chart with two readings
        assert page.text("#status-link") == "Status"
    finally:
        stand_in.close()


def test_polling_pauses_while_the_tab_is_hidden(page: Page, server: Server) -> None:
    metrics = StatusMetrics()
    stand_in = MetricsStandIn(page, lambda: (200, TEXT, metrics.text()))
    try:
        page.goto(f"{server.url}/ui/status")
        _wait_live(page)
        hide = ("Object.defineProperty(document, 'visibilityState', {value: %s, configurable: true});"
                " document.dispatchEvent(new Event('visibilitychange'));")
        page.evaluate(hide % "'hidden'")
        assert page.evaluate("document.querySelector('#status-state').dataset.state") == "paused"
        served = stand_in.served
        page.wait_for("new Promise((done) => setTimeout(() => done(true), 5000))", timeout=10)
        assert stand_in.served == served  # nothing read while hidden
        page.evaluate(hide % "'visible'")
        _wait_live(page)
        page.wait_for("new Promise((done) => setTimeout(() => done(true), 500))")
        assert stand_in.served == served + 1  # read at once when shown again
    finally:
        stand_in.close()


@pytest.mark.parametrize(("status", "reason", "says"), [
    (404, "metrics-off", "METRICS=true"),
    (403, "token-refused", "read-only one too"),
])
def test_a_refusal_is_explained_with_how_to_fix_it(page: Page, server: Server, status: int, reason: str,
                                                   says: str) -> None:
    body = '{"error": {"code": "route-not-found", "message": "No route <b>here</b>."}}'
    stand_in = MetricsStandIn(page, lambda: (status, "application/json", body))
    try:
        page.goto(f"{server.url}/ui/status")
        page.wait_for(f"document.querySelector('[data-reason=\"{reason}\"]')")
        assert says in page.text(f'[data-reason="{reason}"]')
        assert page.count("#status-cards section") == 0
        # the stand-in counts a request when the browser's messages are read: read them once before the baseline
        page.wait_for("new Promise((done) => setTimeout(() => done(true), 500))", timeout=10)
        served = stand_in.served
        assert served >= 1
        page.wait_for("new Promise((done) => setTimeout(() => done(true), 3000))", timeout=10)
        assert stand_in.served == served  # a refusal is not read again and again
        if status == 403:
            assert "No route <b>here</b>." in page.text(f'[data-reason="{reason}"]')
            assert page.count(f'[data-reason="{reason}"] b') == 0
    finally:
        stand_in.close()


def test_odd_and_absent_values_read_as_a_dash(modules: Page) -> None:
    """A NaN or infinite gauge, or a metric the server does not report, reads as a dash, not as a number."""
    metrics = StatusMetrics()
    metrics.lag_seconds.set(float("nan"))
    metrics.memory_used.set(float("inf"))
    result = in_page(modules, "const s = data.summarize(metrics.parseMetrics(values.text));"
                              " const view = await import('/ui/static/status.js');"
                              " return [view.formatSeconds(s.lagSeconds), view.formatCount(s.memoryUsed),"
                              " view.formatCount(s.subscribers), view.formatRate(null)];",
                     text=metrics.text().replace("schemadoc_subscribers", "other_name"))
    assert result == ["—", "—", "—", "—"]


# -- a real server's /metrics ---------------------------------------------------------------------------------------


def _reference(url: str, headers: dict[str, str] | None = None) -> dict[str, list[Sample]]:
    """The server's /metrics read by prometheus-client's own parser: the samples of each name."""
    answer = httpx.get(f"{url}/metrics", headers=headers or {}, timeout=10)
    assert answer.status_code == 200, answer.text
    found: dict[str, list[Sample]] = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            found.setdefault(sample.name, []).append(sample)
    return found


def _requests_counted(reference: dict[str, list[Sample]]) -> int:
    """Requests as the view counts them: every one but the readings of /metrics."""
    return int(sum(sample.value for sample in reference["schemadoc_requests_total"]
                   if sample.labels["operation"] != "metrics"))


def _shown_bytes(page: Page, value: float) -> str:
    return str(in_page(page, "return (await import('/ui/static/dom.js')).formatBytes(values.value);", value=value))


def test_the_view_shows_a_real_servers_figures_after_a_known_workload(page: Page, tmp_path: Path,
                                                                      shots: Path) -> None:
    with Server(tmp_path / "data", tmp_path / "logs") as server:
        api = f"{server.url}/api/v1"
        made = [httpx.post(f"{api}/documents", timeout=10).json()["doc_id"] for _ in range(3)]
        assert httpx.delete(f"{api}/documents/{made[0]}", headers={"If-Match": '"1"'}, timeout=10).status_code == 200
        for _ in range(2):
            assert httpx.get(f"{api}/documents/{made[0]}", timeout=10).json()["error"]["code"] == "document-not-found"
        stale = httpx.put(f"{api}/documents/{made[1]}", params={"path": "/title"},
                          json={"node_data": "Late", "version": 99}, timeout=10)
        assert stale.json()["error"]["code"] == "version-conflict"

        page.goto(f"{server.url}/ui/status")
        _wait_live(page)
        assert _figure(page, "documents") == "2"
        assert page.text('tr[data-code="document-not-found"] .total') == "2"
        assert page.text('tr[data-code="version-conflict"] .total') == "1"
        assert _figure(page, "errors-total") == "3"
        reference = _reference(server.url)
        counted = _requests_counted(reference)  # the page's own files are requests too; its readings of /metrics not
        assert counted >= 3 + 1 + 2 + 1
        page.wait_for(f"document.querySelector('[data-figure=requests-total]').textContent === '{counted:,}'",
                      timeout=10, message=f"{counted} requests shown")
        budget = reference["schemadoc_memory_budget_bytes"][0].value
        assert _figure(page, "memory-budget") == _shown_bytes(page, budget)
        assert _figure(page, "lag-versions").replace(",", "").isdigit()

        # ten more requests, and an event stream held open: both appear on the next readings
        shown = "parseInt(document.querySelector('[data-figure=requests-total]').textContent.replaceAll(',', ''))"
        with httpx.Client(timeout=10) as reader, reader.stream("GET", f"{api}/documents/{made[1]}/events"):
            for _ in range(10):
                assert reader.get(f"{api}/documents/{made[2]}").status_code == 200
            page.wait_for("document.querySelector('[data-figure=subscribers]').textContent === '1'", timeout=10)
            page.wait_for(f"{shown} >= {counted + 10}", timeout=10, message="the ten reads counted")
            assert float(_figure(page, "request-rate").removesuffix("/s")) > 0
        page.wait_for("document.querySelector('[data-figure=subscribers]').textContent === '0'", timeout=10)
        page.wait_for(f"{shown} === {counted + 11}", timeout=10, message="the reads and the stream counted")

        # a little traffic over a few readings, for the charts (and the screenshot docs/ui.md shows)
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            httpx.get(f"{api}/documents/{made[1]}", timeout=10)
            httpx.get(f"{api}/documents/{made[0]}", timeout=10)
            time.sleep(0.05)
        page.wait_for("document.querySelectorAll('svg.chart-plot path.series').length >= 8")
        page.screenshot(shots / "status.png")


def test_the_view_works_with_a_read_only_token(page: Page, tmp_path: Path) -> None:
    watcher = "read-only-token-for-the-status-page"
    writer = "read-write-token-for-the-status-page"
    tokens = tokens_file(tmp_path, {"name": "watcher", "token": watcher, "access": "read-only"},
                         {"name": "writer", "token": writer, "access": "read-write"})
    with Server(tmp_path / "data", tmp_path / "logs", extra_args=("--tokens-file", str(tokens))) as server:
        assert httpx.get(f"{server.url}/metrics", timeout=10).status_code == 401
        httpx.post(f"{server.url}/api/v1/documents", headers={"Authorization": f"Bearer {writer}"}, timeout=10)
        page.goto(f"{server.url}/ui/status")
        page.wait_for("document.querySelector('#token-dialog').open")
        page.click("#token-dialog button.cancel")  # no token given: the view says why it shows nothing, and how
        page.wait_for("document.querySelector('[data-reason=\"token-needed\"]')")
        assert "a read-only one too" in page.text('[data-reason="token-needed"]')
        assert page.evaluate("document.querySelector('#status-state').dataset.state") == "denied"
        page.click('[data-reason="token-needed"] button')
        page.wait_for("document.querySelector('#token-dialog').open")
        page.fill("#token-dialog input", watcher)
        page.click("#token-dialog button[type=submit]")
        _wait_live(page)
        assert _figure(page, "documents") == "1"
        assert page.evaluate("sessionStorage.getItem('schemadoc.token')") == watcher
        sent = [event["params"]["request"] for event in list(page.browser.events)
                if event.get("sessionId") == page.session and event.get("method") == "Network.requestWillBeSent"
                and event["params"]["request"]["url"] == f"{server.url}/metrics"]
        assert sent[0]["headers"].get("Authorization") is None  # refused (401), which asked for the token
        assert sent[-1]["headers"]["Authorization"] == f"Bearer {watcher}"


def test_metrics_turned_off_are_explained(page: Page, tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text('{"metrics": false}', encoding="utf-8")
    with Server(tmp_path / "data", tmp_path / "logs", extra_args=("--config", str(config))) as server:
        assert httpx.get(f"{server.url}/metrics", timeout=10).status_code == 404
        page.goto(f"{server.url}/ui/status")
        page.wait_for("document.querySelector('[data-reason=\"metrics-off\"]')")
        assert "METRICS=true" in page.text('[data-reason="metrics-off"]')
        assert page.evaluate("document.querySelector('#status-state').dataset.state") == "off"
