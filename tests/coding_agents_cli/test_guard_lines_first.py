"""A guard that prints a line of its own before its JSON deny still denies, with the real CLIs.

A ``command:`` guard whose script logs ``checking policy...`` and then prints its deny: stdout
does not start with ``{``, so it was read as plain text (as Claude Code reads it), which decides
nothing, and the real Codex CLI and Gemini CLI ran the scripted ``rm -r victim`` without a word.
Such an answer is now read as a broken one is: its deny denies, its reason noting how it was
read.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otelhooks.integrations.claude_code import BridgeOptions, run_hook
from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    CODEX,
    GEMINI,
    codex_config,
    need_cli,
    run_codex,
    run_gemini,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)

_DENY = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "victim stays",
    }
}
GUARD = """\
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: "@shell"
    command: >-
      input=$(cat); case "$input" in *'rm -r'*) echo 'checking policy...';
      echo '{answer}';; esac
"""


def _hooks(project: Path) -> None:
    (project / "hooks.yaml").write_text(GUARD.format(answer=json.dumps(_DENY)))


@pytest.mark.parametrize("dialect", ["codex", "gemini"])
def test_the_real_cli_obeys_a_deny_printed_after_a_line(
    project: Path, tmp_path: Path, dialect: str
) -> None:
    need_cli(CODEX if dialect == "codex" else GEMINI)
    _hooks(project)
    install_agent(dialect, project=project, hooks_file="hooks.yaml")
    home = tmp_path / "home"
    env = {
        "OTELHOOKS_BRIDGE_STATE": str(tmp_path / "state.sqlite3"),
        "OTELHOOKS_BRIDGE_DAEMON_IDLE": "3",
    }
    steps = [("call_rm", "rm -r victim")]
    if dialect == "codex":
        codex_config(home, trusted=project)
        run = run_codex(project, home, steps, extra_env=env)
    else:
        run = run_gemini(project, home, steps, extra_env=env)
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    assert "victim stays" in run.told()


KINDS = Path(__file__).parent / "captured" / "kinds"
PRE = {"codex": "codex-0.171.0-shell-PreToolUse", "gemini": "gemini-0.61.0-shell-BeforeTool"}


@pytest.mark.parametrize("dialect", sorted(PRE))
def test_a_deny_after_a_line_is_read_and_says_how(tmp_path: Path, dialect: str) -> None:
    _hooks(tmp_path)
    options = BridgeOptions(
        hooks=(str(tmp_path / "hooks.yaml"),),
        state=str(tmp_path / "state.sqlite3"),
        dialect=dialect,
    )
    event = json.loads((KINDS / f"{PRE[dialect]}.json").read_text())
    call = {**event, "tool_input": {**event["tool_input"], "command": "rm -r victim"}}
    said = run_hook(json.dumps(call), options, environ={})
    assert "victim stays [otelhooks: read from an answer printed after other lines]" in said.stdout
    assert "deny" in said.stdout
