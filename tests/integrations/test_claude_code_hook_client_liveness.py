"""The hook client waits for a bridge daemon that is alive, however long its hooks take.

While an answer is slow the client asks the daemon ``GET /alive`` on a second connection every
second; a daemon that answers it is waited for: its answer is used, the hook runs once, the
one-process bridge never starts. (A daemon that does not answer it: ``tests/reliability/
test_stopped_daemon.py``.)"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.integrations._daemon_procs import (
    NO_ANSWER,
    NO_RM,
    bash,
    client_env,
    daemon_pid,
    gone,
    hook,
)

pytestmark = pytest.mark.timeout(90)

SLOW = """\
  - id: slow
    type: PreToolUse
    matcher: Bash
    command: >-
      case "$HOOK_TOOL_INPUT" in *slow*) echo ran >> "$CLAUDE_PROJECT_DIR/runs"; sleep 6;
      echo 'slow, then no' >&2; exit 2;; esac
"""


def test_a_slow_hook_in_a_live_daemon_is_waited_for_and_runs_once(
    tmp_path: Path, runtime_dir: Path
) -> None:
    (tmp_path / "otelhooks.yaml").write_text(NO_RM + SLOW)
    env = client_env(tmp_path, runtime_dir)
    assert hook(env, bash("toolu_1", "ls")).returncode == 0  # starts the daemon
    pid = daemon_pid(runtime_dir)
    slow = hook(env, bash("toolu_2", "echo slow"))
    assert slow.deny_reason() == "slow, then no"
    assert slow.seconds >= 6
    assert NO_ANSWER not in slow.stderr
    assert (tmp_path / "runs").read_text() == "ran\n"  # no second run by a fallback
    assert not gone(pid)


def test_the_daemon_answers_alive_at_once_and_runs_nothing(
    tmp_path: Path, runtime_dir: Path
) -> None:
    (tmp_path / "otelhooks.yaml").write_text(NO_RM + SLOW)
    env = client_env(tmp_path, runtime_dir)
    assert hook(env, bash("toolu_1", "ls")).returncode == 0
    daemon_pid(runtime_dir)
    (sock_path,) = runtime_dir.glob("cc-*.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        sock.connect(str(sock_path))
        sock.sendall(b"GET /alive HTTP/1.1\r\nHost: otelhooks\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200")
    assert answer.endswith(b"\r\n\r\n{}")  # not a bridge answer
    assert not (tmp_path / "runs").exists()
