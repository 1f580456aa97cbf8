"""A guard on a slash command's expansion (``UserPromptExpansion``) in a Claude Agent SDK app.

The CLI the SDK bundles (2.1.337) calls a ``UserPromptExpansion`` callback when the
application's user types ``/deploy`` (a project command, ``.claude/commands/deploy.md``), before
the command's text goes to the model; the SDK's ``HookEvent`` does not name the event, but it
passes every hook name to its CLI. Before, ``hooks_for`` hooked no such event: a guard blocking
``/deploy`` never ran, and the scripted model API received the command's prompt.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import otelhooks
from tests.agent_sdk.test_skill_shell_commands import _run
from tests.claude_code_cli._messages_api import MessagesApi, serve_messages_api

pytestmark = pytest.mark.timeout(120)

NO_DEPLOY = [
    {
        "id": "no-deploy",
        "type": "UserPromptExpansion",
        "matcher": "deploy",
        "command": "echo 'no deploys today' >&2; exit 2",
    }
]


@pytest.mark.parametrize("command", ["deploy", "status"])
def test_a_guard_on_a_slash_commands_expansion_blocks_it(tmp_path: Path, command: str) -> None:
    from otelhooks.integrations.claude_agent_sdk import hooks_for

    project = tmp_path / "project"
    (project / ".claude" / "commands").mkdir(parents=True)
    for name in ("deploy", "status"):
        text = f"---\ndescription: {name}\n---\nRun {name} now: PROMPT-{name.upper()}-77\n"
        (project / ".claude" / "commands" / f"{name}.md").write_text(text)
    api = MessagesApi([])
    oh = otelhooks.configure(hooks=NO_DEPLOY, otlp=False, set_global=False)
    try:
        with (
            serve_messages_api(api) as url,
            hooks_for(oh, state=tmp_path / "s.sqlite3") as hooks,
        ):
            _run(project, tmp_path / "home", url, hooks, f"/{command}")
    finally:
        oh.shutdown()
    sent = json.dumps(api.requests)
    if command == "deploy":
        assert "PROMPT-DEPLOY-77" not in sent  # the model never got the command's prompt
    else:  # a command the guard does not match goes through
        assert "PROMPT-STATUS-77" in sent
