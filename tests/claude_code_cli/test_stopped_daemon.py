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

from otelhooks.integrations.claude_code import install
from tests.coding_agents_cli._runs import CLAUDE, CLI_TEST_S, need_cli, run_claude, skip_reason
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
    need_cli(CLAUDE)
    project = tmp_path / "project"
    (project / "victim").mkdir(parents=True)
    (project / "victim" / "keep.txt").write_text("precious")
    (project / "hooks.yaml").write_text(GUARD)
    install(project / ".claude" / "settings.json", hooks_file="hooks.yaml", events=["PreToolUse"])
    env = {
        "XDG_RUNTIME_DIR": str(runtime_dir),
        "OTELHOOKS_BRIDGE_STATE": str(tmp_path / "state.sqlite3"),
        "OTELHOOKS_BRIDGE_DAEMON_IDLE": "60",
    }
    touch = [{"id": "call_touch", "tool": "Bash", "args": {"command": "touch started"}}]
    first = run_claude(project, tmp_path / "home", touch, extra_env=env)  # starts the daemon
    assert first.returncode == 0, skip_reason(first)
    assert (project / "started").exists()
    pid = daemon_pid(runtime_dir)
    os.kill(pid, signal.SIGSTOP)
    rm = [{"id": "call_rm", "tool": "Bash", "args": {"command": "rm -r victim"}}]
    run = run_claude(project, tmp_path / "home", rm, extra_env=env)
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious", run.told()
    assert "deleting is not allowed here" in run.told()
    assert until_gone(pid)
