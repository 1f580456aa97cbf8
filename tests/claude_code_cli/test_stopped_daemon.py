"""A stopped bridge daemon with the real Claude Code CLI: the installed guard still decides.

Installed as by default (no ``--fail-closed``, so no ``onFailure: "block"``), a hook Claude Code
gives up on is a non-blocking error and the tool runs; a stopped daemon used to hold the hook
client until Claude Code's 30 s timeout. A first run (a scripted ``touch``) starts the daemon,
the test stops it (``SIGSTOP``), and the second run's ``rm -r victim`` is answered within
seconds by the one-process bridge: the guard's deny, the folder survives, the daemon is killed.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.claude_code_cli._daemon_runs import daemon_started
from tests.coding_agents_cli._runs import CLI_TEST_S, run_claude, skip_reason
from tests.integrations._daemon_procs import daemon_pid, until_gone

pytestmark = pytest.mark.timeout(CLI_TEST_S)

GUARD = """\
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: Bash
    command: >-
      case "$HOOK_TOOL_INPUT" in *'rm -r'*)
      echo 'deleting is not allowed here' >&2; exit 2;; esac
"""


def test_the_guard_denies_with_a_stopped_daemon(tmp_path: Path, runtime_dir: Path) -> None:
    project, env = daemon_started(tmp_path, runtime_dir, GUARD)
    pid = daemon_pid(runtime_dir)
    os.kill(pid, signal.SIGSTOP)
    rm = [{"id": "call_rm", "tool": "Bash", "args": {"command": "rm -r victim"}}]
    run = run_claude(project, tmp_path / "home", rm, extra_env=env)
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious", run.told()
    assert "deleting is not allowed here" in run.told()
    assert until_gone(pid)
