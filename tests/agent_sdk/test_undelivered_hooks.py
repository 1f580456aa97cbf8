"""``hooks_for`` and the hooks of events the Claude Agent SDK never calls back for.

Measured (``test_delivered_events.py``): the CLI the SDK bundles never calls a Python callback
for ``SessionStart`` at startup, ``SessionEnd`` or ``InstructionsLoaded``. Before,
``hooks_for`` took an engine whose guard was on one of them and said nothing: the guard never
ran, and looked in force. Now such a guard is refused (``accept_undelivered=True`` runs without
it), and every hook that would never run is named in an ``UndeliveredHookWarning``. The events
the SDK does deliver and ``hooks_for`` did not hook (``ConfigChange`` ...) are hooked now: a hook
on a settings change the model makes runs, in a real SDK program against the scripted API.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

import otelhooks
from tests.agent_sdk.test_delivered_events import wait_for
from tests.agent_sdk.test_hooks_for import _run, _sdk
from tests.claude_code_cli._messages_api import MessagesApi, ToolStep, serve_messages_api

pytestmark = pytest.mark.timeout(120)

START_GUARD = {"id": "start-policy", "type": "SessionStart", "command": "exit 2"}
LOADED_LOG = {"id": "loaded-log", "type": "InstructionsLoaded", "command": "true"}
TOOL_GUARD = {"id": "no-rm", "type": "PreToolUse", "matcher": "Bash", "command": "exit 0"}


def _hooks_for(hooks: list[dict[str, Any]], **options: Any) -> Any:
    _sdk()
    from otelhooks.integrations.claude_agent_sdk import hooks_for

    oh = otelhooks.configure(hooks=hooks, otlp=False, set_global=False, structured_logging=False)
    try:
        with hooks_for(oh, **options) as made:
            return dict(made)
    finally:
        oh.shutdown()


def test_a_guard_on_an_event_the_sdk_never_delivers_is_refused() -> None:
    with pytest.raises(ValueError, match=r"start-policy \(session_start: SessionStart\)") as raised:
        _hooks_for([START_GUARD, TOOL_GUARD])
    assert "accept_undelivered=True" in str(raised.value)
    assert "no-rm" not in str(raised.value)  # the guard the SDK runs is not named


def test_accepting_runs_without_it_and_warns() -> None:
    from otelhooks.integrations.claude_agent_sdk import UndeliveredHookWarning

    with pytest.warns(UndeliveredHookWarning, match="start-policy") as caught:
        made = _hooks_for([START_GUARD, TOOL_GUARD], accept_undelivered=True)
    assert "SessionStart" not in made
    assert "PreToolUse" in made
    assert "no-rm" not in str(caught[0].message)


@pytest.mark.parametrize(
    ("hook", "named"),
    [
        (LOADED_LOG, "loaded-log (instructions_loaded: InstructionsLoaded)"),
        # an event of another runtime: no Claude Code event runs it
        (
            {"id": "model-log", "type": "llm_input", "command": "true"},
            "model-log (llm_input: no Claude Code event)",
        ),
        # a guard that decides nothing (permissive) is only warned of
        ({**START_GUARD, "mode": "permissive"}, "start-policy (session_start: SessionStart)"),
    ],
    ids=["observer", "other-runtime", "permissive-guard"],
)
def test_a_hook_that_would_never_run_is_named_in_a_warning(
    hook: dict[str, Any], named: str
) -> None:
    from otelhooks.integrations.claude_agent_sdk import UndeliveredHookWarning

    with pytest.warns(UndeliveredHookWarning) as caught:
        _hooks_for([hook, TOOL_GUARD])
    assert named in str(caught[0].message)


@pytest.mark.parametrize(
    "hook",
    [
        TOOL_GUARD,
        {"id": "ended", "type": "SessionEnd", "command": "true"},
        {**START_GUARD, "mode": "disabled"},
    ],
    ids=["delivered", "session-end-at-close", "disabled"],
)
def test_hooks_that_run_draw_no_warning(hook: dict[str, Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        made = _hooks_for([hook])
    assert "PreToolUse" in made


def test_a_settings_change_the_model_makes_runs_its_hook(tmp_path: Path) -> None:
    """``ConfigChange`` reaches a callback (as ``CwdChanged`` and ``PostCompact`` do):
    ``hooks_for`` hooks it, so a hook on it runs."""
    _sdk()
    from otelhooks.integrations.claude_agent_sdk import hooks_for

    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    local = project / ".claude" / "settings.local.json"
    seen: list[Any] = []
    marker = tmp_path / "changed"

    def log(event: Any) -> None:
        seen.append(event)
        marker.touch()

    changes = [{"id": "config-log", "type": "ConfigChange", "handler": log}]
    api = MessagesApi(
        [
            ToolStep("t_config", "Write", {"file_path": str(local), "content": "{}\n"}),
            # the change is reported after the write returned: the run waits for its hook
            ToolStep("t_wait", "Bash", {"command": wait_for(marker), "description": "wait"}),
        ]
    )
    oh = otelhooks.configure(hooks=changes, otlp=False, set_global=False, structured_logging=False)
    try:
        with (
            hooks_for(oh, state=tmp_path / "s.sqlite3") as hooks,
            serve_messages_api(api) as url,
        ):
            _run(project, tmp_path / "home", url, hooks, setting_sources=["project", "local"])
    finally:
        oh.shutdown()
    assert local.read_text() == "{}\n"
    assert seen, "the ConfigChange hook never ran"
