"""A bridge that ends before its command hooks do takes them with it: real hook client
processes, a real daemon stopped with ``SIGSTOP``, a real one-process bridge answering late.

A command hook runs in a process group of its own, under a reaper, and the bridge that started
it ends it at its timeout. A daemon the hook client kills (it stopped answering) or a one-process
bridge that gives its late answer and exits could not do that any more: the hook ran on with
nobody to end it, and, for the daemon, at the same time as the one-process bridge ran it again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integrations._daemon_procs import (
    NO_ANSWER,
    NO_RM,
    bash,
    client_env,
    daemon_pid,
    finish,
    one_process,
    start_hook,
    until_gone,
)

pytestmark = pytest.mark.timeout(120)


def _past(path: Path, seconds: float) -> None:
    """Sleep until ``seconds`` after ``path`` was made (by the hook, as it started)."""
    time.sleep(max(0.0, path.stat().st_mtime + seconds - time.time()))


def _wait_for(path: Path, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never came"
        time.sleep(0.02)


def test_a_killed_daemons_command_hook_ends_with_it(tmp_path: Path, runtime_dir: Path) -> None:
    first, ended = tmp_path / "first", tmp_path / "first-ended"
    # the daemon's run takes 6 s (it is killed about 3 s in); the one-process bridge's is quick
    (tmp_path / "otelhooks.yaml").write_text(
        NO_RM
        + f"""\
  - id: side
    type: PreToolUse
    matcher: Bash
    command: >-
      case "$HOOK_TOOL_INPUT" in *slow*)
      if mkdir {first} 2>/dev/null; then sleep 6; touch {ended}; fi;; esac
"""
    )
    env = client_env(tmp_path, runtime_dir)
    assert finish(start_hook(env, bash("toolu_1", "ls"))).returncode == 0  # starts the daemon
    pid = daemon_pid(runtime_dir)
    asked = start_hook(env, bash("toolu_2", "echo slow"))
    _wait_for(first)  # the daemon runs the hook
    os.kill(pid, signal.SIGSTOP)
    answered = finish(asked)
    assert answered.returncode == 0, answered.stderr
    assert NO_ANSWER in answered.stderr  # killed, and answered by the one-process bridge
    assert until_gone(pid)
    _past(first, 7.0)
    assert not ended.exists()  # before, the killed daemon's hook ran on and ended at 6 s


def test_a_late_one_process_bridges_command_hook_ends_with_it(tmp_path: Path) -> None:
    started, ended = tmp_path / "started", tmp_path / "ended"
    (tmp_path / "otelhooks.yaml").write_text(
        f"""\
hooks:
  - id: slow
    type: PreToolUse
    matcher: Bash
    command: "touch {started}; sleep 5; touch {ended}"
"""
    )
    late = one_process(tmp_path, bash("toolu_1", "ls"), OTELHOOKS_BRIDGE_DAEMON_ANSWER_S="4")
    # cut short before its own 10 s timeout: a deny that says so (before the guard-time rule,
    # exit 1, and the CLI ran the tool)
    assert late.returncode == 0, late.stderr
    assert "no answer within 4 s, hook slow cut short" in late.deny_reason()
    assert started.exists()  # the hook ran (the bridge loads its hooks in well under 4 s)
    _past(started, 6.0)
    assert not ended.exists()  # before, the hook ran on past the bridge's exit


def test_a_one_process_bridge_sent_sigterm_ends_its_command_hook(tmp_path: Path) -> None:
    # Claude Code ends a hook at its timeout with SIGTERM, to the bridge's pid alone
    started, ended = tmp_path / "started", tmp_path / "ended"
    (tmp_path / "otelhooks.yaml").write_text(
        f"""\
hooks:
  - id: slow
    type: PreToolUse
    matcher: Bash
    command: "touch {started}; sleep 4; touch {ended}"
"""
    )
    bridge = subprocess.Popen(
        [sys.executable, "-m", "otelhooks", "claude-code", "--hooks", "otelhooks.yaml"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "OTELHOOKS_BRIDGE_STATE": str(tmp_path / "state.sqlite3")},
        cwd=tmp_path,
    )
    assert bridge.stdin is not None
    bridge.stdin.write(json.dumps(bash("toolu_1", "ls")).encode())
    bridge.stdin.close()
    _wait_for(started)
    bridge.send_signal(signal.SIGTERM)
    assert bridge.wait(20) == -signal.SIGTERM  # it still ends as the signal ends it
    _past(started, 5.0)
    assert not ended.exists()  # before, the hook ran on, nobody left to keep its timeout
