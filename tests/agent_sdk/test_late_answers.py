"""What ``hooks_for`` answers the CLI for an event whose hooks are still running when it stops
waiting, in a real Claude Agent SDK program against the scripted Anthropic API.

The scripted model runs ``echo S-$((6*7))``: the shell computes the secret, so only the tool's
output holds it. A redaction hook (Claude Code's ``updatedToolOutput``, as a user writes it for
the CLI; the answer shape from ``tests/claude_code_cli/test_real_claude_code.py``) that is still
running when the callback's time is up must not leave the CLI to hand the model the output
unchecked: the bridge daemon withholds it then, and so must ``hooks_for``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import otelhooks
from tests.agent_sdk.test_hooks_for import _run, _sdk
from tests.claude_code_cli._messages_api import MessagesApi, ToolStep, serve_messages_api
from tests.claude_code_cli.test_real_claude_code import _REDACT

pytestmark = pytest.mark.timeout(120)


def _slow_redaction(**extra: Any) -> list[dict[str, Any]]:
    # slower than hooks_for's 2 s, well within its own timeout
    slow = "import time; time.sleep(4); " + _REDACT
    return [
        {
            "id": "redact",
            "type": "PostToolUse",
            "matcher": "Bash",
            "command": [sys.executable, "-c", slow],
            "timeout": 10,
            **extra,
        }
    ]


def _echo_secret(tmp_path: Path, hooks: list[dict[str, Any]]) -> tuple[str, list[Any]]:
    """The requests the scripted API received (as JSON text) and the SDK's messages."""
    _sdk()
    from otelhooks.integrations.claude_agent_sdk import hooks_for

    project = tmp_path / "project"
    project.mkdir()
    step = ToolStep("toolu_echo", "Bash", {"command": "echo S-$((6*7))", "description": "echo"})
    api = MessagesApi([step])
    oh = otelhooks.configure(hooks=hooks, otlp=False, set_global=False, structured_logging=False)
    try:
        with (
            hooks_for(oh, state=tmp_path / "s.sqlite3", timeout_s=2) as sdk_hooks,
            serve_messages_api(api) as url,
        ):
            messages = _run(project, tmp_path / "home", url, sdk_hooks)
    finally:
        oh.shutdown()
    return json.dumps(api.requests), messages


@pytest.mark.parametrize("on_error", ["default", "block"])
def test_a_redaction_still_running_when_the_cli_stops_waiting_withholds_the_output(
    tmp_path: Path, on_error: str
) -> None:
    # before: the late PostToolUse was answered {} (its failure only logged), the CLI went on
    # with the output as the tool gave it, and the model read S-42
    extra = {} if on_error == "default" else {"on_error": "block"}
    sent, _ = _echo_secret(tmp_path, _slow_redaction(**extra))
    assert "S-42" not in sent
    assert "[tool output withheld: otelhooks: no answer within 1.5 s" in sent


def test_a_late_event_no_hook_decides_is_answered_with_a_message_the_user_sees(
    tmp_path: Path,
) -> None:
    # before: its failure (exit 1, as the bridge answers the CLI, whose stderr the CLI shows)
    # became {}: under the SDK nobody but the log heard of it
    import asyncio

    _sdk()
    from otelhooks.integrations.claude_agent_sdk import hooks_for

    oh = otelhooks.configure(otlp=False, set_global=False, structured_logging=False)
    try:
        hooks = hooks_for(oh, state=tmp_path / "s.sqlite3")
        hooks.close()  # a callback called after close() is late by definition
        [matcher] = hooks["Stop"]
        answer = asyncio.run(matcher.hooks[0]({"session_id": "s-1"}, None, None))
    finally:
        oh.shutdown()
    # named after the adapter the application uses (before: "otelhooks claude-code: ...")
    assert answer == {
        "systemMessage": "otelhooks claude-agent-sdk: no answer: hooks_for was closed"
    }
