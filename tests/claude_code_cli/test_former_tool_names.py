"""A guard naming a Claude Code tool by its former name, run by the real CLI and by otelhooks.

Claude Code renamed tools and still matches a hook by the former name: ``Task`` (the subagent
tool in years of hook examples) is ``Agent`` now, ``KillShell`` is ``TaskStop`` ...; a hook with
``"matcher": "Task"`` runs on an ``Agent`` call, and so does a handler's ``"if": "Task(*)"``
(checked with the pinned CLI 2.1.337: the ``claude-code-itself`` cases). The same guard run by
the bridge ``claude-code install`` wrote, in a hooks file of Claude Code's format or otelhooks'
own, must deny that call too: before, the bridge matched the tool by its current name alone,
the guard never ran and the subagent did.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otelhooks.integrations.claude_code import install
from tests._realparts import require
from tests.claude_code_cli._messages_api import MessagesApi, ToolStep, run_claude_p

pytestmark = pytest.mark.timeout(120)

HERE = Path(__file__).parent
CLAUDE = HERE / "node_modules" / ".bin" / "claude"
PROMPT = "SUBAGENT-PROMPT look around"
REASON = "subagents are not allowed here"
GUARD = f"echo '{REASON}' >&2; exit 2"
# the guard on the former name as a matcher, and as an ``if`` rule of a handler on every tool
CLAUDE_FORMATS = {
    "matcher": {"matcher": "Task", "hooks": [{"type": "command", "command": GUARD}]},
    "if": {"matcher": "*", "hooks": [{"type": "command", "if": "Task(*)", "command": GUARD}]},
}
OTELHOOKS_FORMAT = f"""\
hooks:
  - id: no-subagents
    type: PreToolUse
    matcher: Task
    command: "{GUARD}"
"""


class _Api(MessagesApi):
    """The main conversation asks for a subagent; the subagent's own first request (its prompt
    as the first user message) is answered with text and counted."""

    subagent_requests = 0

    def answer(self, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        messages = body.get("messages") or []
        if messages and PROMPT in json.dumps(messages[0].get("content")):
            self.subagent_requests += 1
            return super().answer({})  # no tools offered: a short text
        return super().answer(body)


def _run(project: Path, tmp_path: Path) -> _Api:
    api = _Api(
        [
            ToolStep(
                "toolu_agent",
                "Agent",
                {"description": "look", "prompt": PROMPT, "subagent_type": "general-purpose"},
            )
        ]
    )
    result = run_claude_p(api, "go", project, tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    return api


def _agent_result(api: MessagesApi) -> dict[str, Any]:
    for body in api.requests:
        for message in body.get("messages") or ():
            content = message.get("content")
            for block in content if isinstance(content, list) else ():
                if block.get("type") == "tool_result" and block["tool_use_id"] == "toolu_agent":
                    return dict(block)
    raise AssertionError("Claude Code sent no result for the Agent call")


@pytest.mark.parametrize(
    ("where", "form"),
    [
        ("claude-code-itself", "matcher"),
        ("claude-code-itself", "if"),
        ("claude-format", "matcher"),
        ("claude-format", "if"),
        ("otelhooks-format", "matcher"),
    ],
)
def test_a_guard_on_the_former_task_name_denies_the_agent_tool(
    where: str, form: str, tmp_path: Path
) -> None:
    require("the Claude Code CLI (npm ci --prefix tests/claude_code_cli)", CLAUDE.exists())
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    settings = project / ".claude" / "settings.local.json"
    guard = {"hooks": {"PreToolUse": [CLAUDE_FORMATS[form]]}}
    if where == "claude-code-itself":
        settings.write_text(json.dumps(guard))
    elif where == "claude-format":
        (project / ".claude" / "guards.json").write_text(json.dumps(guard))
        install(settings, hooks_file=".claude/guards.json")
    else:
        (project / ".claude" / "guards.yaml").write_text(OTELHOOKS_FORMAT)
        install(settings, hooks_file=".claude/guards.yaml")
    api = _run(project, tmp_path)
    result = _agent_result(api)
    assert result.get("is_error") is True, result
    assert REASON in json.dumps(result)
    assert api.subagent_requests == 0
