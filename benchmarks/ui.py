"""The browser page at /ui on a large document: first paint, the tree, expanding a node.

Not a test: it prints figures and writes them as Markdown to ``benchmarks/results/ui.md``.

    .venv/bin/python benchmarks/ui.py              # a 100 MiB book (generate.py), 5 page loads
    .venv/bin/python benchmarks/ui.py --size 20 --runs 3

A real ``schemadoc serve`` process gets the book through ``PUT ?path=/``; headless Chromium
(``tests/e2e/browser.py``: offline but for the loopback, a fresh profile) opens
``/ui/documents/{id}`` in a new tab for every run. Figures are read from the page's own clock
(``performance``, milliseconds since the navigation started):

- ``first contentful paint``: Chromium's paint entry (the page's frame, before any data);
- ``tree shown``: the page's ``schemadoc:tree`` mark, after the one bounded first read is drawn;
- ``node panel shown``: ``schemadoc:node``, the selected node's panel and schema drawn;
- ``expand /chapters``, ``expand /chapters/10``, ``show more``: from the click to the new items
  in the DOM (a bounded read of 50 children, drawn), measured in the page.
"""

from __future__ import annotations

import argparse
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
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tests" / "e2e"))

import orjson  # noqa: E402
from browser import Browser, Page, chromium  # noqa: E402
from generate import MIB, make_book  # noqa: E402
from rest import Server, load_average  # noqa: E402

DEFAULT_OUT = HERE / "results" / "ui.md"

_CLICK_AND_WAIT = """
(async () => {
  const li = document.querySelector(%(item)s);
  const before = li.querySelectorAll(':scope > ul > li[role=treeitem]').length;
  const t0 = performance.now();
  (%(target)s).click();
  for (;;) {
    const now = li.querySelectorAll(':scope > ul > li[role=treeitem]').length;
    if (li.getAttribute('aria-expanded') === 'true' && now > before) break;
    await new Promise((resolve) => requestAnimationFrame(resolve));
  }
  return performance.now() - t0;
})()
"""


def _item(pointer: str) -> str:
    return orjson.dumps(f'li[role=treeitem][data-ptr="{pointer}"]').decode()


def click_and_wait(page: Page, pointer: str, target: str) -> float:
    return float(page.evaluate(_CLICK_AND_WAIT % {"item": _item(pointer), "target": target}, timeout=120))


def one_run(browser: Browser, url: str) -> dict[str, float]:
    page = browser.new_page(width=1440, height=900)
    try:
        page.goto(url)
        page.wait_for("performance.getEntriesByName('schemadoc:node').length > 0", timeout=120)
        figures = {
            "first contentful paint": float(page.evaluate(
                "performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? NaN")),
            "tree shown": float(page.evaluate("performance.getEntriesByName('schemadoc:tree')[0].startTime")),
            "node panel shown": float(page.evaluate("performance.getEntriesByName('schemadoc:node')[0].startTime")),
        }
        figures["expand /chapters (50 of its items)"] = click_and_wait(
            page, "/chapters", f"document.querySelector({_item('/chapters')} + ' > .row > .twisty')")
        figures["show 50 more chapters"] = click_and_wait(
            page, "/chapters", f"document.querySelector({_item('/chapters')} + ' > ul > li.more button')")
        figures["expand /chapters/10"] = click_and_wait(
            page, "/chapters/10", f"document.querySelector({_item('/chapters/10')} + ' > .row > .twisty')")
        figures["JS heap after (MB)"] = float(page.evaluate("performance.memory.usedJSHeapSize")) / 1e6
        figures["tree items in the DOM"] = float(page.count("li[role=treeitem]"))
        return figures
    finally:
        page.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=float, default=100.0, help="MiB of the generated book (default 100)")
    parser.add_argument("--runs", type=int, default=5, help="page loads (default 5)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="Markdown results file")
    args = parser.parse_args(argv)
    if chromium() is None:
        print("chromium is not installed (Debian: apt-get install chromium)", file=sys.stderr)
        return 2
    load_before = load_average()
    book = orjson.dumps(make_book(args.size))
    with tempfile.TemporaryDirectory(prefix="schemadoc-bench-ui-") as work:
        server = Server("ui", None, REPO / "schemas" / "book.schema.json", Path(work))
        try:
            _, made = server.client.json("POST", "/api/v1/documents", {}, expect=201)
            doc_id = made["doc_id"]
            started = time.perf_counter()
            status, _, data = server.client.request(
                "PUT", f"/api/v1/documents/{doc_id}?path=/", b'{"version": 1, "node_data": ' + book + b"}")
            if status != 200:
                raise RuntimeError(f"upload failed: {status} {data[:300]!r}")
            upload = time.perf_counter() - started
            _, root = server.client.json("GET", f"/api/v1/documents/{doc_id}?path=/&max_bytes=16384")
            chapters = root["node_content"]["chapters"]
            url = f"http://127.0.0.1:{server.port}/ui/documents/{doc_id}"
            runs: list[dict[str, float]] = []
            with Browser(width=1440, height=900, timeout=120, extra_args=("--enable-precise-memory-info",)) as browser:
                one_run(browser, url)  # warm-up: Chromium's caches, the server's first reads
                for i in range(args.runs):
                    runs.append(one_run(browser, url))
                    print(f"run {i + 1}: " + ", ".join(f"{k} {v:.0f}" for k, v in runs[-1].items()), flush=True)
        finally:
            server.stop()
    names = list(runs[0])
    rows = []
    for name in names:
        values = [run[name] for run in runs]
        unit = "" if name.endswith("(MB)") or name == "tree items in the DOM" else " ms"
        digits = 1 if name.endswith("(MB)") else 0
        rows.append(f"| {name} | {statistics.median(values):.{digits}f}{unit} | {min(values):.{digits}f}{unit} | "
                    f"{max(values):.{digits}f}{unit} |")
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    text = "\n".join([
        "# The browser page on a large document",
        "",
        f"`benchmarks/ui.py`, {stamp}; load average (1/5/15 min) {load_before} before, {load_average()} after; "
        f"{os.cpu_count()} CPUs, {platform.platform()}, Python {platform.python_version()}.",
        "",
        f"A generated book of {len(book) / MIB:.1f} MiB ({len(book):,} bytes), uploaded in {upload:.1f} s; its "
        f"`/chapters` ({chapters.get('count', '?')} chapters) is a stub in the first read. Headless Chromium, "
        f"1440x900, {args.runs} page loads after one warm-up, each in a new tab; times from the page's own clock.",
        "",
        "| step | median | min | max |",
        "|---|---|---|---|",
        *rows,
        "",
    ])
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
