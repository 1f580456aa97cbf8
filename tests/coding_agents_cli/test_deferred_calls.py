"""A guard's ``permissionDecision: "defer"`` keeps Codex CLI and Gemini CLI from running the call.

Claude Code pauses a ``-p`` session on ``defer`` for a decision made elsewhere, and otelhooks'
own chains treat it as a block (``docs/config-formats.md``). Neither other CLI can defer: Codex
CLI 0.171 refuses an answer holding ``defer`` (a failed hook: the tool runs), and the Gemini
dialect had no word for it (no decision: the tool runs). Both real CLIs ran ``rm -r victim``
past such a guard; the bridge now denies the call for them, saying why.
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
    bridge_env,
    codex_config,
    need_cli,
    run_codex,
    run_gemini,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)

CAPTURED = Path(__file__).parent / "captured"
DEFER = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "defer",
        "permissionDecisionReason": "the release manager decides",
    }
}
GUARD = (
    "hooks:\n  - id: defer-deletes\n    type: PreToolUse\n    matcher: '@shell'\n    command: "
    + json.dumps(f"case \"$HOOK_TOOL_INPUT\" in *'rm -r'*) echo '{json.dumps(DEFER)}';; esac")
    + "\n"
)
EVENTS = {"codex": "codex-PreToolUse", "gemini": "gemini-BeforeTool"}


def _reason(dialect: str, stdout: str) -> str:
    answer = json.loads(stdout)
    if dialect == "gemini":
        assert answer["decision"] == "deny", answer
        return str(answer["reason"])
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny", answer
    return str(answer["hookSpecificOutput"]["permissionDecisionReason"])


@pytest.mark.parametrize("dialect", ["codex", "gemini"])
def test_a_deferred_call_is_denied_saying_why(tmp_path: Path, dialect: str) -> None:
    (tmp_path / "hooks.yaml").write_text(GUARD)
    options = BridgeOptions(
        hooks=(str(tmp_path / "hooks.yaml"),),
        state=str(tmp_path / "state.sqlite3"),
        dialect=dialect,
    )
    event = (CAPTURED / f"{EVENTS[dialect]}.json").read_text()
    reason = _reason(dialect, run_hook(event, options, environ={}).stdout)
    assert reason.startswith("the release manager decides; ")
    assert "cannot defer a call, so otelhooks denies it" in reason


@pytest.mark.parametrize("dialect", ["codex", "gemini"])
def test_the_real_cli_does_not_run_a_deferred_call(
    project: Path, tmp_path: Path, dialect: str
) -> None:
    need_cli(CODEX if dialect == "codex" else GEMINI)
    (project / "hooks.yaml").write_text(GUARD)
    install_agent(dialect, project=project, hooks_file="hooks.yaml")
    home = tmp_path / "home"
    steps = [("call_rm", "rm -r victim")]
    if dialect == "codex":
        codex_config(home, trusted=project)
        run = run_codex(project, home, steps, extra_env=bridge_env(tmp_path))
    else:
        run = run_gemini(project, home, steps, extra_env=bridge_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    assert "the release manager decides" in run.told()
