"""What no Codex CLI hook sees: a command typed into a shell that keeps running.

Codex 0.171's ``exec_command`` may start a command that goes on running (``tty: true``, an
interactive ``sh``), and its ``write_stdin`` tool types into it. Codex fires ``PreToolUse`` for the
``exec_command`` (``tool_name: "Bash"``, ``tool_input: {"command": "sh"}``: nothing says it stays
open) and no hook at all for ``write_stdin``, neither ``PreToolUse`` nor ``PostToolUse`` (checked
with a plain ``hooks.json`` logging every event, without otelhooks). So a guard on every tool
(``matcher: "*"``) never sees the ``rm -r victim`` typed there, and the folder is deleted. This
test pins that limit of the CLI (docs/adapters.md, "What each CLI cannot do"): the day Codex
hooks ``write_stdin``, it fails and the limit comes out of the docs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    CODEX,
    bridge_env,
    codex_config,
    need_cli,
    run_codex,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)

EVERY_TOOL = """\
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: "*"
    command: >-
      echo "$HOOK_TOOL_NAME $HOOK_TOOL_INPUT" >> {seen};
      case "$HOOK_TOOL_INPUT" in *'rm -r'*) echo 'deleting is not allowed here' >&2; exit 2;; esac
"""
STEPS = [
    {
        "id": "call_sh",
        "tool": "exec_command",
        "args": {"cmd": "sh", "tty": True, "yield_time_ms": 500},
    },
    {
        "id": "call_type",
        "tool": "write_stdin",
        "args": {"session_id": "{session}", "chars": "rm -r victim\n", "yield_time_ms": 1500},
    },
]


def test_no_guard_sees_what_codex_types_into_a_running_shell(project: Path, tmp_path: Path) -> None:
    need_cli(CODEX)
    seen = tmp_path / "seen.txt"
    (project / "hooks.yaml").write_text(EVERY_TOOL.format(seen=seen))
    install_agent("codex", project=project, hooks_file="hooks.yaml")
    home = tmp_path / "home"
    codex_config(home, trusted=project)
    env = bridge_env(tmp_path)
    run = run_codex(project, home, STEPS, extra_env=env)
    assert run.returncode == 0, skip_reason(run)
    # the shell ran the typed command: Codex echoed it back from the terminal
    assert "rm -r victim" in run.told()
    assert not (project / "victim").exists()
    # the only tool call any hook saw was the shell's start
    assert seen.read_text().splitlines() == ['Bash {"command":"sh"}']
