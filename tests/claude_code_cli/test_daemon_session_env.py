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

from tests.claude_code_cli._daemon_runs import daemon_started
from tests.coding_agents_cli._runs import CLI_TEST_S, run_claude, skip_reason
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
    project, env = daemon_started(tmp_path, runtime_dir, GUARD)  # a plain session started it
    home = tmp_path / "home"
    pid = daemon_pid(runtime_dir)

    rm = [{"id": "call_rm", "tool": "Bash", "args": {"command": "rm -r victim"}}]
    strict = {**env, "STRICT": "1"}
    run = run_claude(project, home, rm, extra_env=strict)
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious", run.told()
    assert "strict: no rm -r" in run.told()
    assert serving(runtime_dir) == [pid]  # the daemon answered, not the one-process bridge
