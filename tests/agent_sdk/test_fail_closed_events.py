"""``hooks_for(oh, fail_closed=True)`` when its bridge fails on an event other than a tool call's
start, in a real Claude Agent SDK program against the scripted Anthropic API.

``install --fail-closed`` writes ``onFailure: "block"`` on the CLI's hooks of every event a hook
can stop (``tests/claude_code_cli/test_fail_closed_events.py``): a failing hook blocks the prompt
rather than let it through unchecked. ``hooks_for`` denied a failing ``PreToolUse`` itself, but
its other callbacks raised, which the CLI counts as no decision: a prompt the bridge failed on
reached the model. The SDK's ``HookMatcher(on_failure="block")`` is the same switch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import otelhooks
from tests.agent_sdk.test_hooks_for import GUARD, _run, _sdk
from tests.claude_code_cli._messages_api import MessagesApi, serve_messages_api

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("fail_closed", [True, False], ids=["fail-closed", "default"])
def test_a_prompt_the_bridge_fails_on_is_blocked_under_fail_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail_closed: bool
) -> None:
    _sdk()
    from otelhooks.integrations.claude_agent_sdk import hooks_for
    from otelhooks.integrations.coding_agents import CodingAgentBridge

    real = CodingAgentBridge.handle

    def broken(self: Any, payload: Any, **kwargs: Any) -> Any:  # a fault of the bridge's own
        if payload.get("hook_event_name") == "UserPromptSubmit":
            raise RuntimeError("a bug of the bridge")
        return real(self, payload, **kwargs)

    monkeypatch.setattr(CodingAgentBridge, "handle", broken)
    project = tmp_path / "project"
    project.mkdir()
    api = MessagesApi([])
    oh = otelhooks.configure(hooks=GUARD, otlp=False, set_global=False, structured_logging=False)
    try:
        with (
            hooks_for(oh, state=tmp_path / "s.sqlite3", fail_closed=fail_closed) as hooks,
            serve_messages_api(api) as url,
        ):
            _run(project, tmp_path / "home", url, hooks)
    finally:
        oh.shutdown()
    # the prompt ("clean up") reaches the model only when the failure is no block
    assert ('"clean up"' in json.dumps(api.requests)) is not fail_closed
