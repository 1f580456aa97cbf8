"""``otelhooks demo --prometheus-port/--linger``: what the live stack test relies on, and its
refusals."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from tests._realparts import free_port


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
    port = free_port()
    proc = demo("--prometheus-port", str(port), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "63 spans exported to" in proc.stdout
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0  # the endpoint is gone
