"""The status view at /ui/status: what one reading of /metrics costs the page, and what it keeps.

Not a test: it prints figures and writes them as Markdown to ``benchmarks/results/ui_status.md``.

    .venv/bin/python benchmarks/ui_status.py                 # 300 readings, 5 runs
    .venv/bin/python benchmarks/ui_status.py --readings 100 --runs 3

The exposition is written by prometheus-client with the names the server serves, at the worst a
server can reach: every catalogue operation (and the other operation labels) through both HTTP
doors, answered with every status and error code the catalogue lists for it, each with its
duration histogram (the default buckets), beside the process and Python collectors. A real
``schemadoc serve`` serves the page's modules (headless Chromium, ``tests/e2e/browser.py``);
the readings are handed to the modules in the page, timed with the page's own clock:

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--readings", type=int, default=300)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    if chromium() is None:
        sys.exit("chromium is not installed")
    text, lines = exposition()
    print(f"exposition: {len(text.encode()) / 1024:.0f} KiB, {lines} lines")
    runs = []
    with tempfile.TemporaryDirectory() as tmp, Server(Path(tmp) / "data", Path(tmp) / "logs") as server, \
            Browser() as browser:
        for _ in range(args.runs):
            page = browser.new_page()
            page.goto(f"{server.url}/ui/status")
            runs.append(page.evaluate(_MEASURE % {"text": json.dumps(text), "readings": args.readings}, timeout=300))
            page.close()
    figures = {key: statistics.median(run[key] for run in runs) for key in ("parse", "keep", "draw")}
    last = runs[-1]
    rows = [
        ("parse", f"{figures['parse']:.2f} ms"),
        ("summarize + keep", f"{figures['keep']:.3f} ms"),
        ("draw", f"{figures['draw']:.2f} ms"),
        ("samples in the text", f"{last['samples']:,}"),
        ("readings kept", f"{last['points']:,}"),
        ("kept (JSON of the summaries)", f"{last['kept'] / 1024:.0f} KiB"),
        ("elements drawn", f"{last['elements']:,}"),
    ]
    for name, value in rows:
        print(f"{name:32} {value}")
    header = (f"# The status view: one reading of /metrics\n\n`benchmarks/ui_status.py`, {datetime.now(UTC):%Y-%m-%d}, "
              f"{platform.python_implementation()} {platform.python_version()}, load average {load_average()}. "
              f"Exposition: {len(text.encode()) / 1024:.0f} KiB, {lines:,} lines (every closed label set); "
              f"medians of {args.runs} runs of {args.readings} readings.\n\n| step | per reading |\n|---|---|\n")
    args.out.write_text(header + "".join(f"| {name} | {value} |\n" for name, value in rows), encoding="utf-8")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
