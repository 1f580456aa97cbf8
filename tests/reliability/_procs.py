"""Running the real ``otelhooks`` command line in a child process, with its wall time and peak
RSS (from ``wait4`` in a small launcher), optionally under an address-space limit so a
regression fails the test instead of the machine."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import tempfile
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


# Linux keeps a process's peak RSS across fork and exec: a child forked straight from this test
# process (hundreds of MB late in a suite) reports at least that much. A small launcher forks the
# command instead and reports the command's own peak, measured from a parent of ~10 MB.
_LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    out.write(str(usage.ru_maxrss))
code = os.waitstatus_to_exitcode(status)
if code < 0:
    os.kill(os.getpid(), -code)
sys.exit(code)
"""


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

    fd, rss_path = tempfile.mkstemp(prefix="otelhooks-rss-")
    os.close(fd)
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-c", _LAUNCHER, rss_path, sys.executable, "-m", "otelhooks", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env or cli_env(),
        cwd=ROOT,
        preexec_fn=limit,
        start_new_session=True,  # a timeout kills the launcher and the command together
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
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        killed = True
        proc.wait()
    for reader in readers:
        reader.join(10)
    try:
        peak_kb = int(Path(rss_path).read_text() or 0)
    except ValueError:
        peak_kb = 0
    finally:
        os.unlink(rss_path)
    return Finished(
        None if killed else proc.returncode,
        chunks.get("out", b"").decode(errors="replace"),
        chunks.get("err", b"").decode(errors="replace"),
        time.monotonic() - started,
        peak_kb / 1024,
    )
