"""The API documentation pages: what they weigh and how long a browser takes to render them, offline.

Not a test: it prints figures and writes them as Markdown to ``benchmarks/results/api_docs.md``.
A real ``schemadoc serve`` on 127.0.0.1; headless Chromium with every host but the loopback
unresolvable (``tests/e2e/browser.py``) renders ``/docs`` and ``/redoc`` ``--runs`` times each,
with a fresh profile every time (a cold cache: every asset is fetched).

- ``render``: wall time of one Chromium run, from start to the dumped DOM holding every operation
  of ``/openapi.json``; ``about:blank`` is the same run on an empty page, Chromium's own cost;
- ``assets``: every file the pages load, raw and gzip-compressed (level 6, what a compressing
  proxy in front would send; the server itself sends them uncompressed), and the median time to
  fetch it over one keep-alive connection.

    .venv/bin/python benchmarks/api_docs.py             # 5 runs per page
    .venv/bin/python benchmarks/api_docs.py --runs 11
"""

from __future__ import annotations

import argparse
import gzip
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests" / "e2e"))

import httpx  # noqa: E402
from browser import chromium, render  # noqa: E402
from http_server import Server  # noqa: E402

from schemadoc.interfaces.http.apidocs import ASSETS, ASSETS_PATH  # noqa: E402

DEFAULT_OUT = HERE / "results" / "api_docs.md"
_MARKERS = {"/docs": "operations-{tag}-{id}", "/redoc": "tag/{tag}/operation/{id}"}


def _operations(url: str) -> list[dict[str, str]]:
    spec = httpx.get(f"{url}/openapi.json", timeout=10).json()
    return [{"id": operation["operationId"], "tag": operation["tags"][0]}
            for item in spec["paths"].values() for operation in item.values() if "operationId" in operation]


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def _row(label: str, samples: list[float]) -> str:
    return (f"| {label} | {len(samples)} | {_ms(statistics.median(samples))} | {_ms(min(samples))} | "
            f"{_ms(max(samples))} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="Chromium runs per page")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the Markdown results file")
    args = parser.parse_args(argv)
    if chromium() is None:
        print("chromium not installed: make docs-browser installs it", file=sys.stderr)
        return 1
    load_before = os.getloadavg()
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="schemadoc-bench-docs-") as tmp:
        server = Server(Path(tmp) / "data", Path(tmp) / "logs")
        try:
            operations = _operations(server.url)
            renders: dict[str, list[float]] = {"about:blank": [], "/docs": [], "/redoc": []}
            for _ in range(args.runs):  # interleaved, so the machine's load falls on every page alike
                renders["about:blank"].append(render("about:blank", virtual_time_ms=1_000).seconds)
                for page, marker in _MARKERS.items():
                    rendered = render(f"{server.url}{page}")
                    missing = [op["id"] for op in operations if marker.format(**op) not in rendered.dom]
                    if missing:
                        raise SystemExit(f"{page} did not render {missing}")
                    renders[page].append(rendered.seconds)
            sizes: dict[str, tuple[int, int, float]] = {}
            with httpx.Client(base_url=server.url, timeout=30) as client:
                for name in ASSETS:
                    times = []
                    for _ in range(11):
                        started = time.perf_counter()
                        body = client.get(f"{ASSETS_PATH}/{name}").raise_for_status().content
                        times.append(time.perf_counter() - started)
                    sizes[name] = (len(body), len(gzip.compress(body, 6)), statistics.median(times))
        finally:
            try:
                server.stop()
            finally:
                server.kill()
    load_after = os.getloadavg()

    lines += ["# API documentation pages (offline)", "",
              f"`benchmarks/api_docs.py`, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; load average (1/5/15 min) "
              f"{' / '.join(f'{x:.2f}' for x in load_before)} before, "
              f"{' / '.join(f'{x:.2f}' for x in load_after)} after; {os.cpu_count()} CPUs, "
              f"{platform.platform()}, Python {platform.python_version()}.", "",
              f"Headless Chromium, fresh profile per run, no host but the loopback; {len(operations)} operations "
              "rendered on each page.", "",
              "| render (start to DOM) | runs | median | min | max |", "|---|---|---|---|---|"]
    lines += [_row(page, samples) for page, samples in renders.items()]
    blank = statistics.median(renders["about:blank"])
    lines += ["", "Beyond Chromium's own start (about:blank, medians): "
              + ", ".join(f"{page} {_ms(statistics.median(renders[page]) - blank)}" for page in _MARKERS) + ".", "",
              "| asset | bytes | gzip -6 | fetch (median of 11, keep-alive) |", "|---|---|---|---|"]
    lines += [f"| {ASSETS_PATH}/{name} | {raw:,} | {packed:,} | {_ms(seconds)} |"
              for name, (raw, packed, seconds) in sizes.items()]
    docs = sum(sizes[name][0] for name in ("swagger-ui-bundle.js", "swagger-ui.css", "favicon.png"))
    redoc = sum(sizes[name][0] for name in ("redoc.standalone.js", "favicon.png"))
    lines += ["", f"A cold /docs loads {docs:,} bytes of assets, /redoc {redoc:,} (plus /openapi.json)."]
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
