"""What the benchmark scripts share: importing schemadoc from a checkout, timing, percentiles.

Every script runs as ``python benchmarks/NAME.py``, so this directory is first on ``sys.path``
and ``import common`` works before anything else; importing it puts the checkout's ``src`` on
the path when schemadoc is not installed (a checkout without ``pip install -e .``).
"""

from __future__ import annotations

import contextlib
import gc
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BOOK_SCHEMA = REPO / "schemas" / "book.schema.json"

try:
    import schemadoc  # noqa: F401
except ImportError:
    sys.path.insert(0, str(REPO / "src"))

__all__ = ["BOOK_SCHEMA", "HERE", "REPO", "Command", "p99", "pg_schema", "run_schemadoc", "timed"]


def timed(action: Callable[[Any], object], runs: int, *, setup: Callable[[int], Any] = lambda i: i,
          collect: bool = True) -> list[float]:
    """``runs`` timings, in seconds, of ``action(setup(i))`` for ``i`` in ``range(runs)``.

    The setup and, with ``collect``, a ``gc.collect()`` run outside the timer, so a collection
    left over by one run is not charged to the next.
    """
    samples: list[float] = []
    for i in range(runs):
        prepared = setup(i)
        if collect:
            gc.collect()
        start = time.perf_counter()
        action(prepared)
        samples.append(time.perf_counter() - start)
    return samples


def p99(samples: list[float]) -> float:
    """The 99th percentile (nearest rank below; the largest sample under 100 samples)."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


@contextlib.contextmanager
def pg_schema(prefix: str) -> Iterator[str]:
    """A store URL on a throwaway PostgreSQL schema (``SCHEMADOC_TEST_POSTGRES_URL``, default the local test
    database) named ``{prefix}_{random}``, dropped afterwards."""
    import psycopg
    from psycopg import sql

    base = os.environ.get("SCHEMADOC_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
    schema = f"{prefix}_{uuid.uuid4().hex[:8]}"
    try:
        yield f"{base}{'&' if '?' in base else '?'}schema={schema}"
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


_PEAK = ("import resource, sys\nfrom schemadoc.interfaces.cli.command import main\ncode = main(sys.argv[1:])\n"
         "print('PEAK_KIB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\nsys.exit(code)")


@dataclass(frozen=True)
class Command:
    """One ``schemadoc`` command run in its own process: how long it took and its peak RSS."""

    seconds: float
    peak_mib: float
    returncode: int
    stdout: bytes


def run_schemadoc(cwd: Path, *args: str, accept: tuple[int, ...] = (0,)) -> Command:
    """Run ``schemadoc ARGS`` from this checkout in its own process (exit codes outside ``accept`` end the
    benchmark with the command's output)."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", _PEAK, *args], cwd=cwd, env=env, capture_output=True, check=False)
    seconds = time.perf_counter() - started
    if result.returncode not in accept:
        raise SystemExit(f"schemadoc {' '.join(args)} failed ({result.returncode}): "
                         f"{result.stdout.decode()[-2000:]} {result.stderr.decode()[-2000:]}")
    peak = next(line for line in result.stderr.decode().splitlines() if line.startswith("PEAK_KIB"))
    return Command(seconds, int(peak.split()[1]) / 1024, result.returncode, result.stdout)
