"""What the benchmark scripts share: importing schemadoc from a checkout, timing, percentiles.

Every script runs as ``python benchmarks/NAME.py``, so this directory is first on ``sys.path``
and ``import common`` works before anything else; importing it puts the checkout's ``src`` on
the path when schemadoc is not installed (a checkout without ``pip install -e .``).
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BOOK_SCHEMA = REPO / "schemas" / "book.schema.json"

try:
    import schemadoc  # noqa: F401
except ImportError:
    sys.path.insert(0, str(REPO / "src"))

__all__ = ["BOOK_SCHEMA", "HERE", "REPO", "p99", "timed"]


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
