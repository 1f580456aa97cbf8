"""The hook client waits for a bridge daemon that is alive, however long its hooks take.

While an answer is slow the client asks the daemon ``GET /alive`` on a second connection every
second; a daemon that answers it is waited for: its answer is used, the hook runs once, the
one-process bridge never starts. (A daemon that does not answer it: ``tests/reliability/
test_stopped_daemon.py``.)"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integrations._daemon_procs import (
    NO_ANSWER,
    NO_RM,
    Hooked,
    bash,
    client_env,
    daemon_pid,
    finish,
    gone,
    hook,
    start_hook,
    until_gone,
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


SLOW_3S = SLOW.replace("sleep 6", "sleep 3")


def _slow_event_with_the_socket_changed(
    tmp_path: Path, runtime_dir: Path, change: Callable[[Path], None]
) -> tuple[Hooked, int]:
    (tmp_path / "otelhooks.yaml").write_text(NO_RM + SLOW_3S)
    env = client_env(tmp_path, runtime_dir)
    assert hook(env, bash("toolu_1", "ls")).returncode == 0  # starts the daemon
    pid = daemon_pid(runtime_dir)
    started = start_hook(env, bash("toolu_2", "echo slow"))
    deadline = time.monotonic() + 30
    while not (tmp_path / "runs").exists():  # the daemon runs the slow hook
        assert time.monotonic() < deadline, "the daemon never ran the slow hook"
        time.sleep(0.02)
    (sock_path,) = runtime_dir.glob("cc-*.sock")
    change(sock_path)
    return finish(started, timeout_s=30), pid


def test_a_live_daemon_whose_socket_file_was_deleted_is_waited_for(
    tmp_path: Path, runtime_dir: Path
) -> None:
    """The probe asked the socket's path, not the daemon holding the event: a tmp cleaner (or
    the runtime folder removed at logout) deleting the file made the client kill a healthy
    daemon mid-event and run its hooks again."""
    slow, pid = _slow_event_with_the_socket_changed(tmp_path, runtime_dir, Path.unlink)
    assert slow.deny_reason() == "slow, then no"
    assert NO_ANSWER not in slow.stderr
    assert (tmp_path / "runs").read_text() == "ran\n"  # no second run by a fallback
    assert until_gone(pid)  # its socket gone, it leaves once the event is answered


def test_a_stopped_daemon_is_found_when_a_newer_one_answers_at_its_path(
    tmp_path: Path, runtime_dir: Path
) -> None:
    """A newer listener at the path (its file and lock deleted, another daemon bound there)
    answered the probe for the stopped daemon holding the event: the client waited for it for
    ever (the CLI's timeout: the call ran). The stopped process is now found and killed, and the
    one-process bridge answers."""
    newer = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stopped: list[int] = []

    def replace(sock_path: Path) -> None:
        sock_path.unlink()
        newer.bind(str(sock_path))
        newer.listen(8)
        threading.Thread(target=_answer_alive, args=(newer,), daemon=True).start()
        stopped.append(daemon_pid(runtime_dir))
        os.kill(stopped[0], signal.SIGSTOP)

    with newer:
        slow, pid = _slow_event_with_the_socket_changed(tmp_path, runtime_dir, replace)
    assert stopped == [pid]
    assert slow.deny_reason() == "slow, then no"  # from the one-process bridge
    assert NO_ANSWER in slow.stderr
    assert slow.seconds < 15
    assert until_gone(pid)


def _answer_alive(listener: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while True:
            conn, _ = listener.accept()
            with conn:
                conn.recv(4096)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
