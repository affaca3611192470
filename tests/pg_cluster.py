"""A private PostgreSQL cluster for tests that stop, start or reconfigure the database.

``initdb`` runs as the ``postgres`` OS user (when the tests run as root) in a fresh directory,
with its own port and socket directory, so the shared server is never touched. Tests skip with
the reason when the PostgreSQL server binaries or that user are missing.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest


def _binaries() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PrivateCluster:
    """One throwaway cluster: ``start()``, ``stop()``, ``url(user, database)``, ``sql(...)``, ``destroy()``."""

    def __init__(self) -> None:
        self.bin = _binaries()
        if self.bin is None:
            pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl) to make a private cluster")
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                pytest.skip("running as root without a postgres OS user to own a private cluster")
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.root = Path(tempfile.mkdtemp(prefix="schemadoc-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        if os.geteuid() == 0:
            os.chown(self.root, owner.pw_uid, owner.pw_gid)
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
        with (self.data / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.write(f"\nport = {self.port}\nlisten_addresses = '127.0.0.1'\n"
                       f"unix_socket_directories = '{self.root}'\nfsync = off\nmax_connections = 100\n")
        self.start()

    def _run(self, tool: str, *args: str) -> None:
        assert self.bin is not None
        subprocess.run([*self.as_user, str(self.bin / tool), *args], check=True, capture_output=True, timeout=120,
                       cwd=self.root)

    def start(self) -> None:
        """Start it and wait until it accepts connections."""
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "log.txt"), "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        """Stop it (``fast``: connections are ended; ``immediate``: as a crash)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def url(self, user: str = "postgres", database: str = "postgres", password: str | None = None) -> str:
        secret = f":{password}" if password is not None else ""
        return f"postgresql://{user}{secret}@127.0.0.1:{self.port}/{database}"

    def sql(self, statements: str, database: str = "postgres", user: str = "postgres") -> None:
        import psycopg

        with psycopg.connect(self.url(user, database), autocommit=True) as conn:
            conn.execute(statements.encode())

    def __enter__(self) -> PrivateCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()

    def destroy(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)
