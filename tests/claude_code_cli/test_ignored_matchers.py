"""A matcher on an event Claude Code matches nothing by: the real CLI ignores it, so must we.

Claude Code filters a handler by its ``matcher`` only on events that have a matcher value (the
tool name, a session's ``source`` ...). On ``UserPromptSubmit``, ``Stop``, ``PostToolBatch`` and
the other events without one, it runs every handler, whatever its matcher says (checked with the
pinned CLI 2.1.337: a ``UserPromptSubmit`` guard written with ``"matcher": "Bash"`` blocks the
prompt, the first case). The same guard in a hooks file of Claude Code's format, run by the
bridge ``claude-code install`` wrote, must block it too: before, the bridge matched ``Bash``
against a prompt, never ran the guard, and the prompt reached the model.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from otelhooks.integrations.claude_code import install
from tests._realparts import require
from tests.claude_code_cli._messages_api import MessagesApi, run_claude_p

pytestmark = pytest.mark.timeout(120)

HERE = Path(__file__).parent
CLAUDE = HERE / "node_modules" / ".bin" / "claude"
PROMPT = "PROMPT-WITH-A-SECRET sk-live-1234"
REASON = "prompts with secrets stay here"
GUARD = {
    "hooks": {
        "UserPromptSubmit": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": f"echo '{REASON}' >&2; exit 2"}],
            }
        ]
    }
}


def _run(project: Path, tmp_path: Path) -> tuple[MessagesApi, subprocess.CompletedProcess[str]]:
    api = MessagesApi([])
    result = run_claude_p(api, PROMPT, project, tmp_path)
    return api, result


def _sent(api: MessagesApi) -> list[dict[str, Any]]:
    return [body for body in api.requests if PROMPT in json.dumps(body.get("messages"))]


@pytest.mark.parametrize("where", ["claude-code-itself", "claude-format"])
def test_a_prompt_guard_with_a_matcher_still_blocks_the_prompt(where: str, tmp_path: Path) -> None:
    require("the Claude Code CLI (npm ci --prefix tests/claude_code_cli)", CLAUDE.exists())
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    settings = project / ".claude" / "settings.local.json"
    if where == "claude-code-itself":
        settings.write_text(json.dumps(GUARD))
    else:
        (project / ".claude" / "guards.json").write_text(json.dumps(GUARD))
        install(settings, hooks_file=".claude/guards.json")
    api, result = _run(project, tmp_path)
    assert _sent(api) == []
    assert REASON in result.stdout + result.stderr
