"""A throwaway PostgreSQL cluster for tests: Debian's ``postgresql`` binaries, ``initdb`` into a
temporary folder, started on a free port of 127.0.0.1, stopped (``-m immediate``) afterwards.

As root (CI) the cluster runs as the ``postgres`` user, who must own its data folder. Under
``CI=true`` missing binaries (or a missing ``psycopg``) fail the test instead of skipping it.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests._realparts import require, reserved_port


def _bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def _as_postgres(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    return ["runuser", "-u", "postgres", "--", *argv]


class PostgresCluster:
    """One running cluster; :attr:`url` is a ``postgresql://`` URL for its ``postgres`` db."""

    def __init__(self, bin_dir: Path, root: Path, port: int) -> None:
        self.bin_dir = bin_dir
        self.data = root / "data"
        self.port = port
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._root = root

    def _pg_ctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        argv = _as_postgres([str(self.bin_dir / "pg_ctl"), "-D", str(self.data), *args])
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=check)

    def init(self) -> None:
        if os.geteuid() == 0:
            shutil.chown(self._root, "postgres")
        argv = [str(self.bin_dir / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres"]
        subprocess.run(
            _as_postgres([*argv, "--no-sync"]), capture_output=True, text=True, timeout=120,
            check=True,
        )  # fmt: skip

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self._root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c max_connections=200"
        )
        self._pg_ctl("-o", options, "-l", str(self._root / "log"), "-w", "start")

    def stop(self) -> None:
        self._pg_ctl("-m", "immediate", "stop", check=False)

    def log_text(self) -> str:
        path = self._root / "log"
        return path.read_text(errors="replace") if path.exists() else ""


@contextmanager
def postgres_cluster() -> Iterator[PostgresCluster]:
    """A fresh cluster for the ``with`` block."""
    bin_dir = _bin_dir()
    require("PostgreSQL (Debian's postgresql package)", bin_dir is not None)
    try:
        import psycopg  # noqa: F401
    except ImportError:
        require("psycopg (the postgresql extra)", False)
    assert bin_dir is not None
    root = Path(tempfile.mkdtemp(prefix="otelhooks-pg-"))
    os.chmod(root, 0o755)
    with reserved_port() as port:  # held while postgres runs: no one else is handed it
        cluster = PostgresCluster(bin_dir, root, port)
        try:
            cluster.init()
            cluster.start()
            yield cluster
        finally:
            cluster.stop()
            shutil.rmtree(root, ignore_errors=True)


def new_database(cluster: PostgresCluster) -> str:
    """The URL of a new, empty database of ``cluster``."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(cluster.url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return cluster.url.rsplit("/", 1)[0] + f"/{name}"
