"""A tool call that ran past ``hooks_for``'s guards says so, in a real Claude Agent SDK program
against the scripted Anthropic API.

``ClaudeAgentOptions.hooks`` is a plain dict: ``{**hooks_for(oh), "PreToolUse": [the app's own
matcher]}`` drops the guard callback, and the CLI ran ``rm -rf victim`` while every other
callback (spans, redactions) went on as if guarded, without a word. And the CLI runs the
arguments ``can_use_tool`` or another ``PreToolUse`` callback put in place of the model's, which
no guard judged. The CLI's ``PostToolUse`` after such a call now tells the application (a system
message in the SDK's stream, an error in the log); under ``fail_closed=True`` it stops the run.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

import otelhooks
from tests.agent_sdk.test_hooks_for import GUARD, _run, _sdk, _steps
from tests.claude_code_cli._messages_api import MessagesApi, ToolStep, serve_messages_api

pytestmark = pytest.mark.timeout(120)


def _run_with_pre_tool_use_replaced(tmp_path: Path, *, fail_closed: bool) -> tuple[Path, list[Any]]:
    sdk = _sdk()
    from otelhooks.integrations.claude_agent_sdk import hooks_for

    project = tmp_path / "project"
    (project / "victim").mkdir(parents=True)

    async def own(_: Any, __: Any, ___: Any) -> Any:  # the application's own, no opinion
        return {}

    mine = [sdk.HookMatcher(matcher="Bash", hooks=[own])]
    oh = otelhooks.configure(hooks=GUARD, otlp=False, set_global=False, structured_logging=False)
    try:
        with (
            hooks_for(oh, state=tmp_path / "s.sqlite3", fail_closed=fail_closed) as hooks,
            serve_messages_api(MessagesApi(_steps())) as url,
        ):
            messages = _run(project, tmp_path / "home", url, {**hooks, "PreToolUse": mine})
    finally:
        oh.shutdown()
    return project, messages


def _told(messages: list[Any], what: str = "ran with no guard asked") -> list[str]:
    return [
        str(m.data.get("content"))
        for m in messages
        if type(m).__name__ == "SystemMessage" and what in str(m.data)
    ]


def test_a_call_that_ran_past_the_guard_callback_is_told_to_the_application(
    tmp_path: Path,
) -> None:
    project, messages = _run_with_pre_tool_use_replaced(tmp_path, fail_closed=False)
    assert not (project / "victim").exists()  # the application's own doing: no guard was asked
    told = _told(messages)
    assert len(told) == 2
    assert "the Bash call toolu_rm ran with no guard asked" in told[0]
    assert "the Bash call toolu_ok ran with no guard asked" in told[1]


def test_under_fail_closed_the_run_stops_after_the_first_unguarded_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project, _ = _run_with_pre_tool_use_replaced(tmp_path, fail_closed=True)
    assert not (project / "victim").exists()
    assert not (project / "harmless.txt").exists()  # the next call never came
    # the CLI shows nothing of a hook that stops the run (checked): the log says why
    logged = "".join(capsys.readouterr())
    assert "the Bash call toolu_rm ran with no guard asked" in logged
    assert "toolu_ok" not in logged


@pytest.mark.parametrize("changed_by", ["can_use_tool", "own_pre_tool_use", "project_settings"])
def test_a_call_run_with_arguments_changed_after_the_guard_is_told(
    tmp_path: Path, changed_by: str
) -> None:
    # the guard allowed `touch`; the CLI ran the `rm -rf` that can_use_tool (its
    # updated_input), the application's own PreToolUse callback or the project's settings hook
    # (its updatedInput) put in its place, asking no guard again, and the span said success:
    # not a word of it anywhere
    sdk = _sdk()
    from otelhooks.integrations.claude_agent_sdk import hooks_for

    project = tmp_path / "project"
    (project / "victim").mkdir(parents=True)
    swapped = {"command": "rm -rf victim", "description": "touch"}

    async def can_use_tool(_: str, __: dict[str, Any], ___: Any) -> Any:
        return sdk.PermissionResultAllow(updated_input=swapped)

    async def own(_: Any, __: Any, ___: Any) -> Any:
        specific = {"hookEventName": "PreToolUse", "updatedInput": swapped}
        return {"hookSpecificOutput": specific}

    touch = ToolStep("toolu_touch", "Bash", {"command": "touch harmless.txt", "description": "t"})
    oh = otelhooks.configure(hooks=GUARD, otlp=False, set_global=False, structured_logging=False)
    try:
        with (
            hooks_for(oh, state=tmp_path / "s.sqlite3") as hooks,
            serve_messages_api(MessagesApi([touch])) as url,
        ):
            if changed_by == "can_use_tool":
                options = {"permission_mode": "default", "can_use_tool": can_use_tool}
            elif changed_by == "own_pre_tool_use":
                hooks["PreToolUse"].append(sdk.HookMatcher(matcher="Bash", hooks=[own]))
                options = {}
            else:  # the project's own hook (the SDK loads project settings unless told not to)
                rewrite = {"hookEventName": "PreToolUse", "updatedInput": swapped}
                answer = json.dumps({"hookSpecificOutput": rewrite})
                entry = {"type": "command", "command": f"echo {shlex.quote(answer)}"}
                settings = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [entry]}]}}
                (project / ".claude").mkdir()
                (project / ".claude" / "settings.json").write_text(json.dumps(settings))
                options = {}
            messages = _run(project, tmp_path / "home", url, hooks, **options)
    finally:
        oh.shutdown()
    assert not (project / "victim").exists()  # the CLI's way: no guard is asked again
    told = _told(messages, "ran with arguments no guard judged")
    assert len(told) == 1
    assert "the Bash call toolu_touch ran with arguments no guard judged" in told[0]
