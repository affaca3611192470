"""Do concurrent journal appends already share flushes? Appends + fdatasync per second by N threads, each on its
own file (as the files store's commits of distinct documents), three ways.

Not a test: it prints figures.

    .venv/bin/python benchmarks/group_flush.py --threads 1,8,32 --seconds 4 [--dir DIR]

- ``each``: every thread appends its line and fdatasyncs its own file (what the files store does; the
  commits run in the server's worker threads, so several flushes are in flight at once);
- ``leader, serial``: explicit group commit: a thread that finds no flush running becomes the leader and
  fdatasyncs every file appended to since the last flush began, one after the other; the others wait;
- ``leader, syncfs``: the same leader, but one ``syncfs(2)`` of the whole file system for the batch.

``DIR`` (default: a temporary directory) should be on the file system of the storage directory.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

LINE = b"x" * 300 + b"\n"  # about a leaf update's journal line


def run(directory: Path, mode: str, threads: int, seconds: float) -> float:
    libc = ctypes.CDLL("libc.so.6", use_errno=True) if sys.platform == "linux" else None
    fds = [os.open(directory / f"{mode.replace(' ', '_')}-{i}.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
           for i in range(threads)]
    done = [0]
    guard = threading.Condition()
    state: dict[str, Any] = {"queue": [], "next": 0, "flushed": -1, "flushing": False}
    stop = time.monotonic() + seconds

    def group_sync(fd: int) -> None:
        with guard:
            state["queue"].append(fd)
            mine = state["next"]
            while state["flushed"] < mine:
                if state["flushing"]:
                    guard.wait()
                    continue
                state["flushing"] = True
                batch, state["queue"] = state["queue"], []
                taken = state["next"]
                state["next"] += 1
                guard.release()
                try:
                    if mode == "leader, syncfs" and libc is not None:
                        libc.syncfs(batch[0])
                    else:
                        for one in batch:
                            os.fdatasync(one)
                finally:
                    guard.acquire()
                state["flushed"] = taken
                state["flushing"] = False
                guard.notify_all()

    def worker(i: int) -> None:
        fd = fds[i]
        while time.monotonic() < stop:
            os.write(fd, LINE)
            if mode == "each":
                os.fdatasync(fd)
            else:
                group_sync(fd)
            with guard:
                done[0] += 1

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    for fd in fds:
        os.close(fd)
    return done[0] / seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", default="1,8,32")
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args(argv)
    directory = Path(tempfile.mkdtemp(prefix="schemadoc-flush-", dir=args.dir))
    try:
        print("| threads | each fdatasyncs its own file | leader, serial fdatasyncs | leader, one syncfs |")
        print("|---:|---:|---:|---:|")
        for threads in (int(n) for n in args.threads.split(",")):
            modes = ("each", "leader, serial", "leader, syncfs")
            rates = [run(directory, mode, threads, args.seconds) for mode in modes]
            print(f"| {threads} | " + " | ".join(f"{rate:,.0f}/s" for rate in rates) + " |", flush=True)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
