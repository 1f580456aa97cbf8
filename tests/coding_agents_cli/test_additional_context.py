"""A hook's ``additionalContext`` reaches the model, with the real Codex CLI and Gemini CLI.

The otelhooks hook file (installed by ``otelhooks codex|gemini install``) answers the prompt
(``UserPromptSubmit``; Gemini CLI's ``BeforeAgent``) and the shell call's result
(``PostToolUse``; Gemini's ``AfterTool``) with additional context; the scripted model API logs
each request it received, and the request that follows each hook carries that hook's text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

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

PROMPT_CONTEXT = "prompt-context: the release is frozen until Monday"
TOOL_CONTEXT = "tool-context: that listing came from a staging host"
STEPS = [("call_ls", "echo listing")]


def _context_hook(hook_id: str, event: str, text: str, **more: str) -> dict[str, Any]:
    answer = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
    return {"id": hook_id, "type": event, **more, "command": f"echo '{json.dumps(answer)}'"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    hooks = [
        _context_hook("prompt-note", "UserPromptSubmit", PROMPT_CONTEXT),
        _context_hook("tool-note", "PostToolUse", TOOL_CONTEXT, matcher="@shell"),
    ]
    (root / "hooks.yaml").write_text(json.dumps({"hooks": hooks}))
    return root


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        "OTELHOOKS_BRIDGE_STATE": str(tmp_path / "state.sqlite3"),
        "OTELHOOKS_BRIDGE_DAEMON_IDLE": "3",
    }


def _first_with(requests: list[dict[str, Any]], text: str) -> int:
    """The index of the first request that holds ``text`` (-1: none)."""
    return next((i for i, body in enumerate(requests) if text in json.dumps(body)), -1)


def test_codex_model_is_given_each_hooks_additional_context(project: Path, tmp_path: Path) -> None:
    need_cli(CODEX)
    install_agent("codex", project=project, hooks_file="hooks.yaml")
    home = tmp_path / "home"
    codex_config(home, trusted=project)
    run = run_codex(project, home, STEPS, extra_env=_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert len(run.requests) == 2, run.requests
    # the prompt's context from the first request on; the tool's with the tool's output
    assert _first_with(run.requests, PROMPT_CONTEXT) == 0
    assert _first_with(run.requests, TOOL_CONTEXT) == 1


def test_gemini_model_is_given_each_hooks_additional_context(project: Path, tmp_path: Path) -> None:
    need_cli(GEMINI)
    install_agent("gemini", project=project, hooks_file="hooks.yaml")
    run = run_gemini(project, tmp_path / "home", STEPS, extra_env=_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    asked = _first_with(run.requests, "run_shell_command")  # the first turn offering tools
    answered = _first_with(run.requests, "functionResponse")
    assert 0 <= asked < answered, run.requests
    assert _first_with(run.requests, PROMPT_CONTEXT) == asked
    assert _first_with(run.requests, TOOL_CONTEXT) == answered
