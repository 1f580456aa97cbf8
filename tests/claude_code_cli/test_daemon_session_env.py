"""A bridge daemon serving two Claude Code sessions: each guard sees its own session's
environment.

One daemon answers every session of a project (its socket is keyed by the hooks, the
``OTELHOOKS_*`` settings and the folder, not by the whole environment, which Claude Code changes
per event). A guard that read ``$STRICT`` got the environment of the session that started the
daemon: after a plain ``claude``, ``STRICT=1 claude``'s ``rm -r`` ran. The hook client now hands
the daemon its own environment with each event, and the command runs with it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from otelhooks.integrations.claude_code import install
from tests.coding_agents_cli._runs import CLAUDE, CLI_TEST_S, need_cli, run_claude, skip_reason
from tests.integrations._daemon_procs import daemon_pid, serving

pytestmark = pytest.mark.timeout(CLI_TEST_S)

GUARD = """\
hooks:
  - id: strict
    type: PreToolUse
    matcher: Bash
    command: >-
      [ "$STRICT" = 1 ] || exit 0;
      case "$HOOK_TOOL_INPUT" in *'rm -r'*)
      echo 'strict: no rm -r' >&2; exit 2;; esac
"""


def test_each_session_guard_sees_its_own_environment(tmp_path: Path, runtime_dir: Path) -> None:
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
    home = tmp_path / "home"
    touch = [{"id": "call_touch", "tool": "Bash", "args": {"command": "touch started"}}]
    first = run_claude(project, home, touch, extra_env=env)  # a plain session starts the daemon
    assert first.returncode == 0, skip_reason(first)
    assert (project / "started").exists()
    pid = daemon_pid(runtime_dir)

    rm = [{"id": "call_rm", "tool": "Bash", "args": {"command": "rm -r victim"}}]
    strict = {**env, "STRICT": "1"}
    run = run_claude(project, home, rm, extra_env=strict)
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious", run.told()
    assert "strict: no rm -r" in run.told()
    assert serving(runtime_dir) == [pid]  # the daemon answered, not the one-process bridge
