"""A hook that rewrites a tool's output (a redaction) keeps the original from Codex's and Gemini's
model.

The bridge answers a ``tool_result_persist`` rewrite or block, and a hook's own
``updatedToolOutput``, with Claude Code's ``updatedToolOutput``. Codex CLI 0.171 showed the model
its shell tool's original output all the same, and Gemini CLI has no such field (the dialect
dropped it): with both real CLIs a guard redacting ``S-42-SECRET`` from ``cat secret.txt`` let
the model read it. For them the new output is now a block's reason, which each shows the model
in the output's place (Gemini as the tool's error).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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

KINDS = Path(__file__).parent / "captured" / "kinds"
REDACT = """\
def redact(event):
    if "S-42" in str(event.result):
        return {"result": "[redacted by guard]"}
    return None
"""
HOOKS = """\
hooks:
  - id: redact
    type: tool_result_persist
    intercept: true
    script: guard.py:redact
"""
# each CLI's captured shell call, before and after, its output made the secret
CALLS = {
    "codex": ("codex-0.171.0-shell-PreToolUse", "codex-0.171.0-shell-PostToolUse"),
    "gemini": ("gemini-0.61.0-shell-BeforeTool", "gemini-0.61.0-shell-AfterTool"),
}


def _secret_output(dialect: str, event: dict[str, Any]) -> dict[str, Any]:
    if dialect == "gemini":
        return {**event, "tool_response": {"llmContent": "S-42-SECRET", "returnDisplay": "S-42"}}
    return {**event, "tool_response": "S-42-SECRET"}


@pytest.mark.parametrize("dialect", ["codex", "gemini"])
def test_a_redacted_output_is_a_block_whose_reason_is_the_new_output(
    tmp_path: Path, dialect: str
) -> None:
    (tmp_path / "guard.py").write_text(REDACT)
    (tmp_path / "hooks.yaml").write_text(HOOKS)
    options = BridgeOptions(
        hooks=(str(tmp_path / "hooks.yaml"),),
        state=str(tmp_path / "state.sqlite3"),
        dialect=dialect,
    )
    pre, post = (json.loads((KINDS / f"{name}.json").read_text()) for name in CALLS[dialect])
    assert run_hook(json.dumps(pre), options, environ={}).exit_code == 0
    answer = json.loads(run_hook(json.dumps(_secret_output(dialect, post)), options).stdout)
    assert answer["decision"] == ("deny" if dialect == "gemini" else "block")
    assert answer["reason"] == "[redacted by guard]"
    assert "S-42" not in json.dumps(answer)


MCP_REDACT = """\
hooks:
  - id: redact
    type: PostToolUse
    command: >-
      echo '{"hookSpecificOutput": {"hookEventName": "PostToolUse",
      "updatedMCPToolOutput": "[redacted by guard]"}}'
"""


@pytest.mark.parametrize("dialect", ["codex", "gemini"])
def test_a_redacted_mcp_tool_output_is_a_block_too(tmp_path: Path, dialect: str) -> None:
    """Claude Code's field for an MCP tool's new output, which neither CLI reads either."""
    (tmp_path / "hooks.yaml").write_text(MCP_REDACT)
    options = BridgeOptions(
        hooks=(str(tmp_path / "hooks.yaml"),),
        state=str(tmp_path / "state.sqlite3"),
        dialect=dialect,
    )
    pre, post = (json.loads((KINDS / f"{name}.json").read_text()) for name in CALLS[dialect])
    assert run_hook(json.dumps(pre), options, environ={}).exit_code == 0
    answer = json.loads(run_hook(json.dumps(_secret_output(dialect, post)), options).stdout)
    assert answer["reason"] == "[redacted by guard]"
    assert "updatedMCPToolOutput" not in json.dumps(answer)


@pytest.mark.parametrize("dialect", ["codex", "gemini"])
def test_the_real_cli_shows_its_model_the_redacted_output(
    project: Path, tmp_path: Path, dialect: str
) -> None:
    need_cli(CODEX if dialect == "codex" else GEMINI)
    (project / "secret.txt").write_text("S-42-SECRET")
    (project / "guard.py").write_text(REDACT)
    (project / "hooks.yaml").write_text(HOOKS)
    install_agent(dialect, project=project, hooks_file="hooks.yaml")
    home = tmp_path / "home"
    steps = [("call_cat", "cat secret.txt")]
    env = bridge_env(tmp_path)
    if dialect == "codex":
        codex_config(home, trusted=project)
        run = run_codex(project, home, steps, extra_env=env)
    else:
        run = run_gemini(project, home, steps, extra_env=env)
    assert run.returncode == 0, skip_reason(run)
    assert "S-42-SECRET" not in run.told()
    assert "[redacted by guard]" in run.told()
