"""The status view at /ui/status: what one reading of /metrics costs the page, and what it keeps.

Not a test: it prints figures and writes them as Markdown to ``benchmarks/results/ui_status.md``.

    .venv/bin/python benchmarks/ui_status.py                 # 300 readings, 5 runs
    .venv/bin/python benchmarks/ui_status.py --readings 100 --runs 3

Two expositions: a real ``schemadoc serve`` after a small workload (its own ``/metrics``), and the
worst a server can reach, written by prometheus-client with the names the server serves: every
catalogue operation (and the other operation labels) through both HTTP doors, answered with every
status and error code of the catalogue, each with its duration histogram, beside the process and
Python collectors. The server also serves the page's modules (headless Chromium,
``tests/e2e/browser.py``); the readings are handed to them in the page, timed with its own clock:

- ``parse``: ``parseMetrics`` of the whole text;
- ``summarize + keep``: the summary of one reading, added to a full window (300 readings);
- ``draw``: the whole view drawn from that window (every chart and figure);
- ``kept``: the window's summaries as JSON, the size of what the page holds.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tests" / "e2e"))

import common  # noqa: E402,F401  (src on the import path)
from browser import Browser, chromium  # noqa: E402
from http_server import Server  # noqa: E402
from prometheus_client import (  # noqa: E402
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    generate_latest,
)
from rest import load_average  # noqa: E402
from status_metrics import StatusMetrics  # noqa: E402

from schemadoc.errors import CATALOG  # noqa: E402
from schemadoc.operations.catalogue import CATALOGUE  # noqa: E402

DEFAULT_OUT = HERE / "results" / "ui_status.md"
OTHER_OPERATIONS = ("events", "changes", "health", "metrics", "ui", "docs", "mcp-protocol", "other")

_MEASURE = """
(async () => {
  const metrics = await import('/ui/static/metrics.js');
  const data = await import('/ui/static/status_data.js');
  const { StatusView } = await import('/ui/static/status.js');
  const { h } = await import('/ui/static/dom.js');
  const text = %(text)s;
  const readings = %(readings)d;
  const view = new StatusView(h('div'));
  view.cards = h('div');
  let t0 = performance.now();
  let samples;
  for (let i = 0; i < readings; i += 1) samples = metrics.parseMetrics(text);
  const parse = (performance.now() - t0) / readings;
  t0 = performance.now();
  for (let i = 0; i < readings; i += 1) view.history.add(Date.now() - (readings - i) * 1000, data.summarize(samples));
  const keep = (performance.now() - t0) / readings;
  t0 = performance.now();
  for (let i = 0; i < 20; i += 1) view.render();
  const draw = (performance.now() - t0) / 20;
  return { parse, keep, draw, samples: samples.length, points: view.history.points.length,
           kept: JSON.stringify(view.history.points).length, elements: view.cards.querySelectorAll('*').length };
})()
"""


def exposition() -> tuple[str, int]:
    """The largest /metrics a server can serve (every closed label set), and its number of lines."""
    metrics = StatusMetrics()
    names = [operation.name for operation in CATALOGUE] + list(OTHER_OPERATIONS)
    codes = [(str(entry.status), entry.code) for entry in CATALOG.values() if entry.status >= 400]
    for door in ("rest", "mcp"):
        for name in names:
            metrics.answer(door, name, "200", seconds=0.003, times=3)
            for status, code in codes:
                metrics.answer(door, name, status, code, seconds=0.02)
    for collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
        metrics.registry.register(collector)
    text = generate_latest(metrics.registry).decode()
    return text, text.count("\n")


def _measure(browser: Browser, server: Server, text: str, readings: int, runs: int) -> dict[str, float]:
    results = []
    for _ in range(runs):
        page = browser.new_page()
        page.goto(f"{server.url}/ui/status")
        results.append(page.evaluate(_MEASURE % {"text": json.dumps(text), "readings": readings}, timeout=300))
        page.close()
    figures = {key: statistics.median(run[key] for run in results) for key in ("parse", "keep", "draw")}
    return {**results[-1], **figures, "bytes": len(text.encode()), "lines": text.count("\n")}


def _workload(url: str) -> str:
    """A few requests of each kind (created, read, refused), then the server's own /metrics."""
    import httpx

    api = f"{url}/api/v1"
    made = [httpx.post(f"{api}/documents", timeout=10).json()["doc_id"] for _ in range(5)]
    for doc_id in made:
        httpx.get(f"{api}/documents/{doc_id}", timeout=10)
        httpx.put(f"{api}/documents/{doc_id}", params={"path": "/title"}, json={"node_data": "x", "version": 9},
                  timeout=10)
    httpx.get(f"{api}/documents/none-such", timeout=10)
    return httpx.get(f"{url}/metrics", timeout=10).text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--readings", type=int, default=300)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    if chromium() is None:
        sys.exit("chromium is not installed")
    worst, _ = exposition()
    with tempfile.TemporaryDirectory() as tmp, Server(Path(tmp) / "data", Path(tmp) / "logs") as server, \
            Browser() as browser:
        columns = {"a server after a small workload": _measure(browser, server, _workload(server.url),
                                                               args.readings, args.runs),
                   "every closed label set": _measure(browser, server, worst, args.readings, args.runs)}
    rows = [
        ("exposition", lambda r: f"{r['bytes'] / 1024:.0f} KiB, {r['lines']:,} lines"),
        ("samples", lambda r: f"{r['samples']:,}"),
        ("parse", lambda r: f"{r['parse']:.2f} ms"),
        ("summarize + keep", lambda r: f"{r['keep']:.3f} ms"),
        ("draw", lambda r: f"{r['draw']:.2f} ms"),
        ("readings kept", lambda r: f"{r['points']:,}"),
        ("kept (JSON of the summaries)", lambda r: f"{r['kept'] / 1024:.0f} KiB"),
        ("elements drawn", lambda r: f"{r['elements']:,}"),
    ]
    names = list(columns)
    print(f"{'':32} " + " | ".join(f"{name:>34}" for name in names))
    for label, show in rows:
        print(f"{label:32} " + " | ".join(f"{show(columns[name]):>34}" for name in names))
    header = (f"# The status view: one reading of /metrics\n\n`benchmarks/ui_status.py`, {datetime.now(UTC):%Y-%m-%d}, "
              f"{platform.python_implementation()} {platform.python_version()}, load average {load_average()}; "
              f"medians of {args.runs} runs of {args.readings} readings, timed in headless Chromium.\n\n"
              f"| per reading | {' | '.join(names)} |\n|---|{'---|' * len(names)}\n")
    body = "".join(f"| {label} | {' | '.join(show(columns[name]) for name in names)} |\n" for label, show in rows)
    args.out.write_text(header + body, encoding="utf-8")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
