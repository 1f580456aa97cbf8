"""``otelhooks demo --prometheus-port/--linger``: what the live stack test relies on, and its
refusals."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests._realparts import reserved_port


def demo(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return subprocess.run(
        [sys.executable, "-m", "otelhooks", "demo", "--quiet", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd,
    )


def test_linger_without_a_prometheus_port_is_refused(tmp_path: Path) -> None:
    proc = demo("--linger", "5", cwd=tmp_path)
    assert proc.returncode == 2
    assert "--linger needs --prometheus-port" in proc.stderr
    assert not (tmp_path / "otelhooks-demo-traces.jsonl").exists()


def test_a_taken_port_is_refused_before_anything_is_touched(tmp_path: Path) -> None:
    previous = tmp_path / "otelhooks-demo-traces.jsonl"
    previous.write_text("{}\n")  # the last run's spans stay
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        proc = demo("--prometheus-port", str(taken.getsockname()[1]), cwd=tmp_path)
    assert proc.returncode == 2
    assert "cannot serve metrics" in proc.stderr
    assert previous.read_text() == "{}\n"


def test_without_linger_the_demo_serves_during_the_run_and_exits(tmp_path: Path) -> None:
    with reserved_port() as port:
        proc = demo("--prometheus-port", str(port), cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert "63 spans exported to" in proc.stdout
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", port)) != 0  # the endpoint is gone


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_the_linger_even_with_sigint_ignored_by_the_parent(
    tmp_path: Path, signum: int
) -> None:
    # A shell that starts the demo in the background (or CI's runner) leaves SIGINT ignored, and
    # Python then never raises KeyboardInterrupt: Ctrl-C and SIGTERM must still end the wait.
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    with reserved_port() as port:
        command = [
            sys.executable,
            "-m",
            "otelhooks",
            "demo",
            "--quiet",
            "--prometheus-port",
            str(port),
        ]
        command += ["--linger", "120"]
        proc = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=tmp_path,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        )
        assert proc.stderr is not None
        deadline = time.monotonic() + 60
        seen = b""
        while b"serving metrics on" not in seen and time.monotonic() < deadline:
            seen += proc.stderr.readline()  # the demo ran; it now lingers
        assert b"serving metrics on" in seen
        start = time.monotonic()
        proc.send_signal(signum)
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0
        assert time.monotonic() - start < 15  # ended the linger, not its 120 s
        assert b"63 spans exported to" in out


def test_port_0_announces_the_port_it_bound_and_serves_there(tmp_path: Path) -> None:
    # Before, the line said http://127.0.0.1:0/metrics: the endpoint ran, on a port no one
    # could find.
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    command = [sys.executable, "-m", "otelhooks", "demo", "--quiet", "--prometheus-port", "0"]
    proc = subprocess.Popen(
        [*command, "--linger", "120"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 60
        line = b""
        while b"serving metrics on" not in line and time.monotonic() < deadline:
            line = proc.stderr.readline()
        found = re.search(rb"http://127\.0\.0\.1:(\d+)/metrics", line)
        assert found is not None, line
        port = int(found.group(1))
        assert port != 0, line
        scraped = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=30)
        assert scraped.status_code == 200
        assert 'service_name="otelhooks-demo"' in scraped.text
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert proc.returncode == 0
