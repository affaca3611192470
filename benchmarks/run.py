"""Measure the schemadoc engine on book documents of about 1, 10 and 100 MiB.

Not a test: it prints figures (median, min and max of several runs) and writes them as a
Markdown table to ``benchmarks/results/latest.md``. ``benchmarks/README.md`` explains each row.

    .venv/bin/python benchmarks/run.py                    # 1, 10 and 100 MiB (several minutes)
    .venv/bin/python benchmarks/run.py --quick            # 1 and 10 MiB
    .venv/bin/python benchmarks/run.py --sizes 10 --runs 3 --no-naive

Method (as in ``notes/performance-baseline.md``): ``time.perf_counter``; garbage collection
left on, with ``gc.collect()`` before each timed run, outside the timer; every write goes
through a real :class:`FileDocumentStore` in a fresh temporary directory (so it fsyncs).
"""

from __future__ import annotations

import argparse
import copy
import gc
import importlib
import json
import os
import platform
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

import orjson
from common import HERE, REPO
from generate import MIB, book_stats, make_book, mid_paragraph_path, paragraph

from schemadoc.errors import SchemaDocError
from schemadoc.schema import LoadedSchema, load_schema
from schemadoc.service import DocumentService
from schemadoc.snapshotter import SnapshotPolicy
from schemadoc.storage.files import FileDocumentStore

ALL_SIZES = (1, 10, 100)
QUICK_SIZES = (1, 10)
DEFAULT_SCHEMA = REPO / "schemas" / "book.schema.json"
DEFAULT_OUT = HERE / "results" / "latest.md"

# Runs per size (a run of a millisecond-scale operation; "heavy" = whole-document store and cold
# load; "micro" = microsecond-scale reads; "naive" = the pure-Python pipeline).
RUNS = {1: 11, 10: 7, 100: 5}
HEAVY_RUNS = {1: 7, 10: 5, 100: 3}
MICRO_RUNS = 101
NAIVE_RUNS = {1: 5, 10: 3, 100: 1}

INVALID_STYLE = "not-a-style"   # not in the paragraph style enum: the update must be rejected


# -- measuring ---------------------------------------------------------------------------------------


@dataclass
class Row:
    """One operation: its label, how it is done, and its samples (seconds) per size."""

    key: str
    label: str
    samples: dict[int, list[float]] = field(default_factory=dict)
    unit: str = "time"                 # "time" (seconds) or "mib" (one value, MiB) or "ratio"

    def median(self, size: int) -> float | None:
        values = self.samples.get(size)
        return statistics.median(values) if values else None


def timed_runs(action: Callable[[int], object], runs: int, *,
               setup: Callable[[], object] | None = None) -> list[float]:
    """``runs`` timings of ``action(i)``, each after ``setup()`` and ``gc.collect()`` outside the timer."""
    samples: list[float] = []
    for i in range(runs):
        if setup is not None:
            setup()
        gc.collect()
        start = time.perf_counter()
        action(i)
        samples.append(time.perf_counter() - start)
    return samples


def fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs" if seconds >= 1e-5 else f"{seconds * 1e6:.1f} µs"
    if seconds < 1.0:
        ms = seconds * 1e3
        return f"{ms:.2f} ms" if ms < 10 else f"{ms:.1f} ms" if ms < 100 else f"{ms:.0f} ms"
    return f"{seconds:.2f} s"


def fmt_cell(row: Row, size: int) -> str:
    values = row.samples.get(size)
    if not values:
        return "–"
    if row.unit == "mib":
        return f"{values[0]:.0f} MiB"
    if row.unit == "ratio":
        return f"{values[0]:.0f}×" if values[0] >= 10 else f"{values[0]:.1f}×"
    middle = fmt_time(statistics.median(values))
    if len(values) == 1:
        return f"{middle} (n=1)"
    return f"{middle} ({fmt_time(min(values))} – {fmt_time(max(values))})"


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / MIB if sys.platform == "darwin" else peak / 1024


def current_rss_mib() -> float | None:
    try:
        psutil = importlib.import_module("psutil")
    except ImportError:
        return None
    return float(psutil.Process().memory_info().rss) / MIB


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- the naive pipeline --------------------------------------------------------------------------------


class NaivePipeline:
    """What a leaf update costs without the engine's design: deep copy, pure-Python validation of
    the whole copy (all errors, formats asserted), ``json.dumps`` and an atomic durable write."""

    def __init__(self, schema: LoadedSchema, path: Path) -> None:
        from jsonschema import Draft202012Validator

        self._validator = Draft202012Validator(schema.root, format_checker=Draft202012Validator.FORMAT_CHECKER)
        self._path = path

    def update(self, document: Any, tokens: Sequence[str], value: Any) -> Any:
        new = copy.deepcopy(document)
        parent = new
        for token in tokens[:-1]:
            parent = parent[int(token)] if isinstance(parent, list) else parent[token]
        parent[tokens[-1]] = value
        errors = list(self._validator.iter_errors(new))
        if errors:
            raise ValueError(f"naive pipeline: {len(errors)} validation errors, first: {errors[0].message}")
        data = json.dumps(new).encode()
        tmp = self._path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self._path)
        directory = os.open(self._path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
        return new

    def bench(self, document: Any, leaf: str, runs: int) -> list[float]:
        tokens = leaf.strip("/").split("/")
        return timed_runs(lambda i: self.update(document, tokens, f"Naive edit, run {i}."), runs)


# -- one size ----------------------------------------------------------------------------------------


@dataclass
class SizeInfo:
    size: int
    stats: dict[str, int]
    leaf: str
    generate_seconds: float
    loaded_rss_mib: float | None = None   # RSS with the document loaded by a service (steady state)


@dataclass
class Options:
    sizes: tuple[int, ...]
    runs: int | None
    naive: bool
    naive_100: bool
    schema_path: Path
    tmp_parent: Path | None


def new_service(schema: LoadedSchema, directory: Path) -> DocumentService:
    service = DocumentService(schema, FileDocumentStore(directory))
    service.open()
    return service


class Recorder:
    """Stores the samples of one size in the rows and logs them as they come."""

    def __init__(self, rows: dict[str, Row], size: int) -> None:
        self.rows = rows
        self.size = size

    def __call__(self, key: str, samples: list[float]) -> None:
        self.rows[key].samples[self.size] = samples
        log(f"  {self.rows[key].label}: {fmt_cell(self.rows[key], self.size)}")


def bench_size(size: int, schema: LoadedSchema, rows: dict[str, Row], options: Options) -> SizeInfo:
    runs = options.runs or RUNS[size]
    heavy = min(options.runs or HEAVY_RUNS[size], runs)
    record = Recorder(rows, size)
    log(f"\n== {size} MiB ==")
    start = time.perf_counter()
    book = make_book(size)
    info = SizeInfo(size, book_stats(book), mid_paragraph_path(book), time.perf_counter() - start)
    log(f"generated {info.stats['bytes']:,} bytes, {info.stats['chapters']} chapters, "
        f"{info.stats['paragraphs']:,} paragraphs in {info.generate_seconds:.1f} s; leaf {info.leaf}/text")
    base = Path(tempfile.mkdtemp(prefix=f"schemadoc-bench-{size}mb-", dir=options.tmp_parent))
    try:
        bench_create_and_store(schema, base / "scratch", book, runs, heavy, record)
        shutil.rmtree(base / "scratch")
        main_dir = base / "main"
        doc_id = store_book(schema, main_dir, book)
        del book  # from here on the only copy is the one a service loads from disk
        # the services above hold the book in reference cycles (service <-> snapshotter): collect
        # them now, before loading freezes every object alive (gc.freeze) and keeps them for good
        gc.collect()
        service = bench_cold_load(schema, main_dir, doc_id, f"{info.leaf}/text", heavy, record)
        gc.collect()
        info.loaded_rss_mib = current_rss_mib()
        bench_steady_state(service, doc_id, info.leaf, runs, record)
        if options.naive and (size != 100 or options.naive_100):
            naive_runs = NAIVE_RUNS[size] if options.runs is None else min(NAIVE_RUNS[size], options.runs)
            naive = NaivePipeline(schema, main_dir / "naive.json")
            record("naive", naive.bench(service.read_node(doc_id, "/").node, f"{info.leaf}/text", naive_runs))
            naive_median = rows["naive"].median(size)
            for engine_key, ratio_key in (("update", "ratio"), ("update_every", "ratio_every")):
                engine = rows[engine_key].median(size)
                if engine and naive_median:
                    record(ratio_key, [naive_median / engine])
        del service
        gc.collect()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    record("rss", [peak_rss_mib()])
    return info


def bench_create_and_store(schema: LoadedSchema, directory: Path, book: dict[str, Any], runs: int, heavy: int,
                           record: Recorder) -> None:
    """``create_document`` (``runs`` new documents), then the whole book stored into ``heavy`` of them."""
    service = new_service(schema, directory)
    created: list[str] = []
    record("create", timed_runs(lambda i: created.append(service.create_document()[0]), runs))
    record("store", timed_runs(lambda i: service.update_node(created[i], "/", book, 1), heavy))
    service.snapshots.stop()  # before the directory goes: no background snapshot still writing into it


def store_book(schema: LoadedSchema, directory: Path, book: dict[str, Any]) -> str:
    """The measured document, alone in its directory: created, then its root replaced by the book (untimed)."""
    service = new_service(schema, directory)
    doc_id = service.create_document()[0]
    service.update_node(doc_id, "/", book, 1)
    service.close()  # its snapshot current, and no background snapshot left running beside the timed rows
    return doc_id


def bench_cold_load(schema: LoadedSchema, directory: Path, doc_id: str, leaf_text: str, heavy: int,
                    record: Recorder) -> DocumentService:
    """A new service on the directory, ``open()`` and the first read (which parses the file).

    Returns the last of these services: the steady state of a server that loaded the document
    from disk (the engine ``gc.freeze()``s large loaded documents).
    """
    services: list[DocumentService] = []

    def cold_load(i: int) -> None:
        services.append(new_service(schema, directory))
        services[0].read_node(doc_id, leaf_text)

    # the previous run's service (and its parsed document) is freed before the timer starts
    record("cold", timed_runs(cold_load, heavy, setup=services.clear))
    return services[0]


def bench_steady_state(service: DocumentService, doc_id: str, leaf: str, runs: int, record: Recorder) -> None:
    leaf_text, leaf_style = f"{leaf}/text", f"{leaf}/style"
    paragraphs_array = leaf.rsplit("/", 1)[0]
    read = service.read_node(doc_id, leaf_text)
    if not isinstance(read.node, str):
        raise SystemExit(f"{leaf_text} is not a string: {read.node!r}")
    version = read.version
    record("read", timed_runs(lambda i: service.read_node(doc_id, leaf_text), MICRO_RUNS))
    record("schema", timed_runs(lambda i: service.node_schema(leaf_text, doc_id), MICRO_RUNS))

    def leaf_update(i: int) -> None:
        nonlocal version
        version = service.update_node(doc_id, leaf_text, f"Edited paragraph, run {i}.", version).version

    def append(i: int) -> None:
        nonlocal version
        version = service.create_node(doc_id, f"{paragraphs_array}/-",
                                      paragraph(f"Appended paragraph, run {i}."), version).version

    def rejected(i: int) -> None:
        try:
            service.update_node(doc_id, leaf_style, INVALID_STYLE, version)
        except SchemaDocError as error:
            if error.code != "validation-failed":
                raise
        else:
            raise SystemExit(f"the invalid update of {leaf_style} to {INVALID_STYLE!r} was accepted")

    record("update", timed_runs(leaf_update, runs))
    record("append", timed_runs(append, runs))
    record("rejected", timed_runs(rejected, runs))
    # the same service, now writing the snapshot with every commit (the journal-first commit with
    # the pre-journal cost on top: serialise, write, fsync and rename the whole document)
    service.snapshots.policy = SnapshotPolicy(mode="every-write")
    record("update_every", timed_runs(leaf_update, runs))
    record("append_every", timed_runs(append, runs))


# -- report ------------------------------------------------------------------------------------------


def make_rows() -> dict[str, Row]:
    rows = [
        Row("create", "create a document (`create_document`, schema defaults)"),
        Row("store", "store the whole book (`update_node(\"/\")`, version 1 → 2)"),
        Row("cold", "cold load (new service + `open()` + first `read_node`)"),
        Row("read", "read a deep leaf (`read_node`)"),
        Row("schema", "schema of the deep path (`node_schema`, with doc_id)"),
        Row("update", "**leaf update** (`update_node` of the text), `lazy` snapshots (default)"),
        Row("append", "array append (`create_node` …/paragraphs/-), `lazy`"),
        Row("rejected", "rejected update (style not in enum → validation-failed)"),
        Row("update_every", "leaf update, `every-write` snapshots"),
        Row("append_every", "array append, `every-write`"),
        Row("naive", "naive leaf update (deepcopy + jsonschema + json.dumps + fsync)"),
        Row("ratio", "naive / engine leaf update, `lazy`", unit="ratio"),
        Row("ratio_every", "naive / engine leaf update, `every-write`", unit="ratio"),
        Row("rss", "peak RSS of the process after this size", unit="mib"),
    ]
    return {row.key: row for row in rows}


@dataclass
class Target:
    label: str
    check: Callable[[dict[str, Row]], tuple[str, bool | None]]


def _target(row: str, sizes: Sequence[int], limit: float) -> Callable[[dict[str, Row]], tuple[str, bool | None]]:
    def check(rows: dict[str, Row]) -> tuple[str, bool | None]:
        measured = [(size, rows[row].median(size)) for size in sizes if rows[row].median(size) is not None]
        if not measured:
            return "not measured", None
        worst = max(value for _, value in measured if value is not None)
        shown = ", ".join(f"{size} MiB {fmt_time(value)}" for size, value in measured if value is not None)
        return shown, worst <= limit

    return check


TARGETS = [
    Target("10 MiB leaf update ≤ 80 ms (median; floor orjson + fsync ≈ 55 ms)", _target("update", [10], 0.080)),
    Target("100 MiB leaf update ≤ 700 ms (median)", _target("update", [100], 0.700)),
    Target("read of a deep leaf ≤ 1 ms (median, every size)", _target("read", ALL_SIZES, 0.001)),
    Target("node schema of a deep path ≤ 1 ms (median, every size)", _target("schema", ALL_SIZES, 0.001)),
]


def machine_info() -> dict[str, str]:
    def version(name: str) -> str:
        try:
            return importlib_metadata.version(name)
        except importlib_metadata.PackageNotFoundError:
            return "not installed"

    info = {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpus": str(os.cpu_count()),
    }
    for name in ("schemadoc", "orjson", "jsonschema-rs", "jsonschema", "python-ulid", "psutil"):
        info[name] = version(name)
    return info


def load_average() -> str:
    try:
        return " / ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


def _busy() -> str | None:
    """A description of how busy the machine is, or None when it looks quiet enough to measure."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        return None
    cpus = os.cpu_count() or 1
    return f"load average {load:.2f} on {cpus} CPUs" if load > 0.5 * cpus else None


def render(rows: dict[str, Row], infos: list[SizeInfo], options: Options, command: str, seconds: float,
           load_at_start: str) -> str:
    sizes = [info.size for info in infos]
    lines = [
        "# schemadoc benchmark results",
        "",
        f"Command: `{command}` — finished {datetime.now(UTC):%Y-%m-%d %H:%M} UTC in {seconds / 60:.1f} min.",
        "",
        "Each cell: median (min – max) over the runs; see `benchmarks/README.md` for what each row does.",
        "The book is stored by `create_document()` and then `update_node(doc_id, \"/\", book, 1)` (the service's",
        "own write path); the steady-state rows run on a service that loaded the document from disk.",
        "",
        "| operation | " + " | ".join(f"{info.size} MiB ({info.stats['bytes'] / 1e6:.1f} MB)" for info in infos) + " |",
        "|---|" + "---|" * len(infos),
    ]
    for row in rows.values():
        if not any(size in row.samples for size in sizes):
            continue
        lines.append(f"| {row.label} | " + " | ".join(fmt_cell(row, size) for size in sizes) + " |")
    lines += ["", "## Targets", "", "| target | measured | met? |", "|---|---|---|"]
    for target in TARGETS:
        shown, met = target.check(rows)
        verdict = "not measured" if met is None else "**met**" if met else "**NOT met**"
        lines.append(f"| {target.label} | {shown} | {verdict} |")
    lines += ["", "## Documents", "",
              "| size | bytes | chapters | sections | paragraphs | generated in | leaf | RSS, document loaded |",
              "|---|---|---|---|---|---|---|---|"]
    for info in infos:
        s = info.stats
        rss = "–" if info.loaded_rss_mib is None else f"{info.loaded_rss_mib:.0f} MiB"
        lines.append(f"| {info.size} MiB | {s['bytes']:,} | {s['chapters']:,} | {s['sections']:,} | "
                     f"{s['paragraphs']:,} | {info.generate_seconds:.1f} s | `{info.leaf}/text` | {rss} |")
    lines += ["", "## Runs", ""]
    for info in infos:
        counts = ", ".join(f"{key} {len(rows[key].samples[info.size])}" for key in
                           ("create", "store", "cold", "read", "schema", "update", "append", "rejected",
                            "update_every", "append_every", "naive")
                           if info.size in rows[key].samples)
        lines.append(f"- {info.size} MiB: {counts}")
    lines += ["", "## Machine", ""]
    lines += [f"- {key}: {value}" for key, value in machine_info().items()]
    tmp = options.tmp_parent or Path(tempfile.gettempdir())
    lines.append(f"- storage: a fresh directory under the temporary directory ({_filesystem(tmp)})")
    lines.append(f"- load average (1/5/15 min) at start: {load_at_start}; at the end: {load_average()} "
                 "(other processes on the machine make the figures noisier)")
    lines.append("")
    return "\n".join(lines)


def _filesystem(path: Path) -> str:
    """The file system type and device of ``path`` (Linux; 'unknown' elsewhere)."""
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return "unknown file system"
    best = ("", "unknown", "unknown")
    resolved = str(path.resolve())
    for line in mounts:
        parts = line.split()
        if len(parts) >= 3 and (resolved == parts[1] or resolved.startswith(parts[1].rstrip("/") + "/")) \
                and len(parts[1]) >= len(best[0]):
            best = (parts[1], parts[0], parts[2])
    return f"{best[2]} on {best[1]}"


# -- command line ------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> tuple[Options, Path, Path | None]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sizes", default=None, help="comma-separated sizes in MiB (default 1,10,100)")
    parser.add_argument("--quick", action="store_true", help="only 1 and 10 MiB")
    parser.add_argument("--runs", type=int, default=None,
                        help="runs per operation (default 11/7/5 by size; µs-scale reads always 101; "
                             "the naive pipeline at most 5/3/1)")
    parser.add_argument("--no-naive", action="store_true", help="skip the naive pipeline everywhere")
    parser.add_argument("--no-naive-100", action="store_true", help="skip the naive pipeline at 100 MiB (~35 s)")
    parser.add_argument("--schema", type=Path, default=DEFAULT_SCHEMA, help="the book schema")
    parser.add_argument("--tmp-dir", type=Path, default=None, help="where the temporary storage goes")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the Markdown results file")
    parser.add_argument("--json", type=Path, default=None, help="also write the raw samples as JSON")
    args = parser.parse_args(argv)
    if args.sizes and args.quick:
        parser.error("--sizes and --quick do not go together")
    if args.runs is not None and args.runs < 1:
        parser.error("--runs must be at least 1")
    sizes: tuple[int, ...] = QUICK_SIZES if args.quick else ALL_SIZES
    if args.sizes:
        try:
            sizes = tuple(sorted({int(part) for part in args.sizes.split(",") if part.strip()}))
        except ValueError:
            parser.error(f"--sizes takes integers, got {args.sizes!r}")
        unknown = [size for size in sizes if size not in RUNS]
        if unknown or not sizes:
            parser.error(f"--sizes: choose from {', '.join(map(str, ALL_SIZES))}")
    options = Options(sizes=sizes, runs=args.runs, naive=not args.no_naive, naive_100=not args.no_naive_100,
                      schema_path=args.schema, tmp_parent=args.tmp_dir)
    return options, args.out, args.json


def main(argv: Sequence[str] | None = None) -> int:
    options, out, raw = parse_args(argv)
    schema = load_schema(options.schema_path)
    rows = make_rows()
    infos: list[SizeInfo] = []
    started = time.perf_counter()
    load_at_start = load_average()
    busy = _busy()
    if busy:
        log(f"warning: {busy}; the figures (fsync and rename most of all) will be noisier than usual")
    for size in options.sizes:
        infos.append(bench_size(size, schema, rows, options))
    command = "benchmarks/run.py " + " ".join(sys.argv[1:] if argv is None else argv)
    report = render(rows, infos, options, command.strip(), time.perf_counter() - started,
                    load_at_start)
    print(report)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report, encoding="utf-8")
    log(f"written to {out}")
    if raw is not None:
        raw.write_bytes(orjson.dumps({
            "machine": machine_info(),
            "documents": [{"size_mib": i.size, **i.stats, "leaf": f"{i.leaf}/text"} for i in infos],
            "samples": {key: {str(size): values for size, values in row.samples.items()}
                        for key, row in rows.items()},
        }, option=orjson.OPT_INDENT_2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
