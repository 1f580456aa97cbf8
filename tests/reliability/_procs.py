"""Running the real ``otelhooks`` command line in a child process, with its wall time and peak
RSS (from ``wait4``), optionally under an address-space limit so a regression fails the test
instead of the machine."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Finished:
    code: int | None  # None: killed at the timeout
    stdout: str
    stderr: str
    seconds: float
    max_rss_mb: float


def cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def run_cli(
    *argv: str,
    env: dict[str, str] | None = None,
    timeout_s: float = 60.0,
    memory_limit_mb: int | None = 1536,
) -> Finished:
    """Run ``python -m otelhooks *argv`` to its end (or kill it at ``timeout_s``)."""

    def limit() -> None:
        if memory_limit_mb is not None:
            size = memory_limit_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (size, size))

    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "otelhooks", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env or cli_env(),
        cwd=ROOT,
        preexec_fn=limit,
    )
    chunks: dict[str, bytes] = {}

    def drain(name: str, stream: IO[bytes]) -> None:
        chunks[name] = stream.read()

    readers = [
        threading.Thread(target=drain, args=(name, stream), daemon=True)
        for name, stream in (("out", proc.stdout), ("err", proc.stderr))
        if stream is not None
    ]
    for reader in readers:
        reader.start()
    killed = False
    # wait4, not Popen.wait: it gives this child's own peak RSS.
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - started > timeout_s:
            proc.kill()
            killed = True
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.02)
    proc.returncode = os.waitstatus_to_exitcode(status)
    for reader in readers:
        reader.join(10)
    return Finished(
        None if killed else proc.returncode,
        chunks.get("out", b"").decode(errors="replace"),
        chunks.get("err", b"").decode(errors="replace"),
        time.monotonic() - started,
        usage.ru_maxrss / 1024,
    )
